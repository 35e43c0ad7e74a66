package codex_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/protect"
)

// Issue 29: in workspace-write Codex runs commands and edits inside the
// workspace without asking anyone, so protected paths are made read-only
// in its sandbox (a permission profile): a command's writes to
// .chirality/, .mcp.json, a not yet existing agents/ and the state
// directory fail, an ordinary file is written. dontAsk, where nobody
// would be asked.
func TestRealCodexProtectedPathsReadOnly(t *testing.T) {
	g := newRig(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state, err := filepath.EvalSymlinks(t.TempDir()) // under the temp dir, which :workspace may write
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".chirality"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := "echo x > .chirality/sessions.json; echo x > .mcp.json; mkdir -p agents && echo x > agents/p.md; echo x > " + state + "/index.json; echo x > plain.txt"
	g.fake.Script(codextest.Reply{Call: &codextest.Call{Command: cmd}}, codextest.Reply{Text: "done"})
	r := g.turn(t, engine.Request{SessionKey: "s-ro", Message: "write", Cwd: dir, PermissionMode: "dontAsk", Protected: protect.Paths(dir, state)}, nil)
	if r.err != nil {
		t.Fatalf("err %v", r.err)
	}
	for _, f := range []string{filepath.Join(dir, ".chirality", "sessions.json"), filepath.Join(dir, ".mcp.json"), filepath.Join(dir, "agents", "p.md"), filepath.Join(state, "index.json")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was written by Codex's command", f)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "plain.txt")); err != nil {
		var out []string
		for _, e := range r.find("tool:result") {
			out = append(out, e.ToolResult.Content)
		}
		t.Errorf("an ordinary file was not written: %v (%s)", err, strings.Join(out, "; "))
	}
}

// A person's approval of a command does not let it write a protected
// path: Codex (0.169) retries an approved command that the sandbox
// seemed to deny without any sandbox and without asking again, and runs
// an approved escalation (require_escalated) outside it, unless the
// profile denies reading the path (protectProfile). Whether it judged a
// failed write a denial varied from run to run, so protected paths were
// written now and then, most often on resumed threads. Default mode with
// an Approver that allows everything, on a new, a resumed and a forked
// thread, and plan mode (read-only), where it was written every time.
func TestRealCodexApprovedCommandKeepsProtectedReadOnly(t *testing.T) {
	g := newRig(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Existing protected directories: an approved escalation can create
	// a missing one (the profile can deny only what exists; protect.go).
	for _, d := range []string{".chirality", ".codex", "agents"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mcp := filepath.Join(dir, ".mcp.json")
	if err := os.WriteFile(mcp, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	written := func(f string) bool { _, err := os.Lstat(filepath.Join(dir, f)); return err == nil }
	allow := func() *approver {
		return &approver{answers: []engine.ApprovalDecision{{Allow: true}, {Allow: true}, {Allow: true}, {Allow: true}}}
	}
	g.fake.Script(codextest.Reply{Text: "hi"})
	first := g.turn(t, engine.Request{SessionKey: "s-ap", Message: "hello", Cwd: dir, PermissionMode: "default", Approver: allow()}, nil)
	if first.err != nil || len(first.events) == 0 || first.events[0].Init == nil {
		t.Fatalf("first turn: %v %v", first.err, first.types())
	}
	thread := first.events[0].Init.ConversationID
	for _, c := range []struct {
		name string
		req  engine.Request
	}{
		{"new", engine.Request{}},
		{"resumed", engine.Request{Resume: thread}},
		{"forked", engine.Request{Resume: thread, Fork: true}},
		{"plan", engine.Request{PermissionMode: "plan"}}, // read-only, where the retry wrote too
	} {
		// Each write on its own too: a command that wrote .mcp.json first
		// and failed on .chirality/ is the retried one, and the other way
		// round. Then the same asked to run outside the sandbox, with a
		// justification and without (whose request looks like a plain one).
		// An ordinary file is written, but by a sandboxed command in plan
		// mode (read-only).
		all := func(plain string) string {
			return "echo x > " + plain + "; echo x > .chirality/sessions.json; mkdir -p agents && echo x > agents/p.md; mkdir -p .codex/rules && echo x > .codex/rules/r.rules; echo written > .mcp.json"
		}
		for i, call := range []*codextest.Call{
			{Command: all(fmt.Sprintf("plain-%s-%d.txt", c.name, 0))},
			{Command: "echo written > .mcp.json"},
			{Command: "echo x > .chirality/sessions.json"},
			escalate(all(fmt.Sprintf("plain-%s-%d.txt", c.name, 3)), "to update the project's configuration"),
			escalate(all(fmt.Sprintf("plain-%s-%d.txt", c.name, 4)), ""),
		} {
			cmd := call.Command
			if cmd == "" {
				cmd = fmt.Sprint(call.Args)
			}
			plain := fmt.Sprintf("plain-%s-%d.txt", c.name, i)
			g.fake.Script(codextest.Reply{Call: call}, codextest.Reply{Text: "done"})
			a := allow()
			req := c.req
			req.SessionKey, req.Message, req.Cwd, req.Approver = "s-ap-"+c.name, "write", dir, a
			if req.PermissionMode == "" {
				req.PermissionMode = "default"
			}
			r := g.turn(t, req, nil)
			if r.err != nil {
				t.Fatalf("%s: %v", c.name, r.err)
			}
			if len(a.asked) == 0 {
				t.Errorf("%s: %q was not put to the approver", c.name, cmd)
			}
			if b, _ := os.ReadFile(mcp); string(b) != "{}\n" {
				t.Errorf("%s thread: approved %q wrote .mcp.json: %q", c.name, cmd, b)
				_ = os.WriteFile(mcp, []byte("{}\n"), 0o644)
			}
			if _, err := os.Stat(filepath.Join(dir, ".chirality", "sessions.json")); err == nil {
				t.Errorf("%s thread: approved %q wrote .chirality/sessions.json", c.name, cmd)
				_ = os.Remove(filepath.Join(dir, ".chirality", "sessions.json"))
			}
			for _, f := range []string{"agents/p.md", ".codex/rules/r.rules"} {
				if written(f) {
					t.Errorf("%s thread: approved %q wrote %s", c.name, cmd, f)
					_ = os.Remove(filepath.Join(dir, f))
				}
			}
			if want := i >= 3 || i == 0 && c.name != "plan"; written(plain) != want {
				var out []string
				for _, e := range r.find(event.TypeToolResult) {
					out = append(out, e.ToolResult.Content)
				}
				t.Errorf("%s thread: approved %q: %s written %v, want %v (%s)", c.name, cmd, plain, written(plain), want, strings.Join(out, "; "))
			}
		}
	}
	// The denied paths leave nothing in the workspace.
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		switch n := e.Name(); {
		case n == ".chirality", n == ".codex", n == "agents", n == ".mcp.json", strings.HasPrefix(n, "plain-"):
		default:
			t.Errorf("unexpected %s in the workspace", n)
		}
	}
}

// escalate is the model's call of Codex's shell tool asking to run cmd
// outside the sandbox (sandbox_permissions require_escalated), with a
// justification when why is not "".
func escalate(cmd, why string) *codextest.Call {
	args := map[string]any{"cmd": cmd, "sandbox_permissions": "require_escalated"}
	if why != "" {
		args["justification"] = why
	}
	return &codextest.Call{Tool: "exec_command", Args: args}
}

// Every command request is put to the Approver marked Unsandboxed:
// the model's escalation with its justification (shown as the reason),
// the one without a justification, whose request looks like a plain
// command's (no reason; once accepted it runs outside the sandbox), and
// so a plain command's too; where nobody is asked (dontAsk) Codex
// refuses the escalation and nothing is written.
func TestRealCodexEscalationMarkedUnsandboxed(t *testing.T) {
	g := newRig(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mcp := filepath.Join(dir, ".mcp.json")
	if err := os.WriteFile(mcp, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		call   *codextest.Call
		reason string
	}{
		{escalate("echo written > .mcp.json", "to update the MCP config"), "to update the MCP config"},
		{escalate("echo written > .mcp.json", ""), ""},
		{&codextest.Call{Command: "echo x > plain.txt"}, ""},
	} {
		g.fake.Script(codextest.Reply{Call: c.call}, codextest.Reply{Text: "done"})
		deny := &approver{answers: []engine.ApprovalDecision{{Message: "no"}}}
		r := g.turn(t, engine.Request{Message: "write", Cwd: dir, PermissionMode: "default", Approver: deny}, nil)
		if r.err != nil {
			t.Fatal(r.err)
		}
		var in struct{ Reason string }
		if len(deny.asked) == 1 {
			_ = json.Unmarshal(deny.asked[0].Input, &in)
		}
		if len(deny.asked) != 1 || !deny.asked[0].Unsandboxed || in.Reason != c.reason {
			t.Fatalf("%+v: asked %+v, want one request marked Unsandboxed with reason %q", c.call, deny.asked, c.reason)
		}
	}
	for _, why := range []string{"to update the MCP config", ""} {
		g.fake.Script(codextest.Reply{Call: escalate("echo written > .mcp.json", why)}, codextest.Reply{Text: "done"})
		r := g.turn(t, engine.Request{Message: "write", Cwd: dir, PermissionMode: "dontAsk"}, nil)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if b, _ := os.ReadFile(mcp); string(b) != "{}\n" {
			t.Fatalf("dontAsk: an escalation wrote .mcp.json: %q", b)
		}
	}
}

// Codex's own home is not a command's to write: not an approved
// escalation's (without a justification; it runs outside the sandbox,
// where a sandbox_mode added to config.toml would make Codex ignore the
// protected profile in every later session), not a plain command's
// under dontAsk (the rig's $CODEX_HOME is under the temporary directory,
// which the sandbox otherwise lets commands write). Codex itself still
// works: the next turn runs.
func TestRealCodexHomeNotWritable(t *testing.T) {
	g := newRig(t)
	conf := filepath.Join(g.home, "codex", "config.toml")
	before, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write := "echo 'sandbox_mode = \"danger-full-access\"' >> " + conf
	g.fake.Script(codextest.Reply{Call: escalate(write, "")}, codextest.Reply{Text: "done"})
	yes := &approver{answers: []engine.ApprovalDecision{{Allow: true}, {Allow: true}}}
	if r := g.turn(t, engine.Request{Message: "write", Cwd: dir, PermissionMode: "default", Approver: yes}, nil); r.err != nil {
		t.Fatal(r.err)
	}
	if len(yes.asked) == 0 {
		t.Fatal("the escalation was not put to the approver")
	}
	g.fake.Script(codextest.Reply{Call: &codextest.Call{Command: write}}, codextest.Reply{Text: "done"})
	if r := g.turn(t, engine.Request{Message: "write", Cwd: dir, PermissionMode: "dontAsk"}, nil); r.err != nil {
		t.Fatal(r.err)
	}
	if after, _ := os.ReadFile(conf); string(after) != string(before) {
		t.Fatalf("a command wrote Codex's config.toml: %q", after)
	}
	g.fake.Script(codextest.Reply{Call: &codextest.Call{Command: "echo ok > ok.txt"}}, codextest.Reply{Text: "done"})
	ok := &approver{answers: []engine.ApprovalDecision{{Allow: true}}}
	if r := g.turn(t, engine.Request{Message: "write", Cwd: dir, PermissionMode: "default", Approver: ok}, nil); r.err != nil {
		t.Fatal(r.err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ok.txt")); err != nil || string(b) != "ok\n" {
		t.Fatalf("a plain approved command in the workspace: %q %v", b, err)
	}
}
