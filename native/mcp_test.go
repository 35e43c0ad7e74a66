package native

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/mcpconfig/mcptest"
)

// Issue 23: the native loop is an MCP client. The turn starts the
// reference server-everything (and one that cannot start, reported failed
// with why while the turn still runs), offers its tools to the model as
// mcp__everything__* beside read/list_dir/grep, and runs the fake model's
// call of mcp__everything__echo through the client when a rule allows it;
// without a rule in dontAsk the call is denied, never run. The server's
// env value is in no event, and its process is gone when the turn ends.
func TestEngineMCPServers(t *testing.T) {
	mark := "native-mcp-mark-" + strings.ReplaceAll(t.Name(), "/", "-")
	const secret = "native-mcp-secret-14142135"
	cfg := mcptest.Config(mcptest.Everything(t, "everything", map[string]string{"HARNESS_MCP_MARK": mark, "HARNESS_MCP_TOKEN": secret}), mcptest.Broken("broken"))
	for _, c := range []struct {
		name    string
		allowed []string
		ran     bool
	}{
		{"allowed by rule", []string{"mcp__everything__echo"}, true},
		{"allowed by server rule", []string{"mcp__everything"}, true},
		{"no rule, dontAsk", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "mcp__everything__echo", map[string]any{"message": "hi native"})}},
				claudetest.TextReply("done"))
			e := newEngine(f)
			defer e.Shutdown(context.Background())
			tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "echo", Cwd: t.TempDir(), StateDir: t.TempDir(),
				MCP: cfg, PermissionMode: "dontAsk", AllowedTools: c.allowed})
			if err != nil {
				t.Fatal(err)
			}
			evs := drain(t, tr)
			init := evs[0].Init
			status := map[string]event.MCPServerStatus{}
			for _, s := range init.MCPServers {
				status[s.Name] = s
			}
			if status["everything"].Status != "connected" || status["broken"].Status != "failed" || !strings.Contains(status["broken"].Error, "harness-mcptest-server") {
				t.Errorf("session:init mcpServers = %+v", init.MCPServers)
			}
			if !slices.Contains(init.Tools, "mcp__everything__echo") || !slices.Contains(init.Tools, "read") {
				t.Errorf("session:init tools = %v", init.Tools)
			}
			offered := f.api.Requests()[0].Tools
			if !slices.Contains(offered, "mcp__everything__echo") || !slices.Contains(offered, "grep") {
				t.Errorf("tools offered to the model: %v", offered)
			}
			var starts, results []event.Event
			for _, ev := range evs {
				switch ev.Type {
				case event.TypeToolStart:
					starts = append(starts, ev)
				case event.TypeToolResult:
					results = append(results, ev)
				}
				if b, _ := json.Marshal(ev); strings.Contains(string(b), secret) {
					t.Errorf("the env value in %s", ev.Type)
				}
			}
			if len(starts) != 1 || starts[0].ToolStart.Name != mcpconfig.ToolName("everything", "echo") || len(results) != 1 {
				t.Fatalf("tool events %v", types(evs))
			}
			r := results[0].ToolResult
			if c.ran && (r.IsError || r.Content != "Echo: hi native") {
				t.Errorf("tool:result %+v, want the echo", r)
			}
			if !c.ran && (!r.IsError || !strings.Contains(r.Content, "denied")) {
				t.Errorf("tool:result %+v, want denied", r)
			}
			if tr.Err() != nil {
				t.Errorf("turn: %v", tr.Err())
			}
			// The server's process ended with the turn.
			deadline := time.Now().Add(10 * time.Second)
			for procWithEnv(mark) {
				if time.Now().After(deadline) {
					t.Fatal("the MCP server outlived its turn")
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// A rule-less call in a mode that asks goes to the Approver, which
// decides it.
func TestEngineMCPAsksTheApprover(t *testing.T) {
	f := newFixture(t)
	f.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "mcp__everything__echo", map[string]any{"message": "asked"})}},
		claudetest.TextReply("done"))
	e := newEngine(f)
	defer e.Shutdown(context.Background())
	ap := &recordingApprover{}
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "echo", Cwd: t.TempDir(), StateDir: t.TempDir(),
		MCP: mcptest.Config(mcptest.Everything(t, "everything", nil)), PermissionMode: "default", Approver: ap})
	if err != nil {
		t.Fatal(err)
	}
	evs := drain(t, tr)
	if len(ap.asked) != 1 || ap.asked[0].ToolName != "mcp__everything__echo" || !strings.Contains(string(ap.asked[0].Input), "asked") || ap.asked[0].ToolUseID == "" {
		t.Fatalf("asked %+v", ap.asked)
	}
	for _, ev := range evs {
		if ev.Type == event.TypeToolResult && (ev.ToolResult.IsError || ev.ToolResult.Content != "Echo: asked") {
			t.Errorf("tool:result %+v", ev.ToolResult)
		}
	}
}

type recordingApprover struct{ asked []engine.ApprovalRequest }

func (a *recordingApprover) Ask(_ context.Context, r engine.ApprovalRequest) engine.ApprovalDecision {
	a.asked = append(a.asked, r)
	return engine.ApprovalDecision{Allow: true}
}

// procWithEnv reports whether a process of this user has mark in its
// environment.
func procWithEnv(mark string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, d := range dirs {
		if b, err := os.ReadFile(d); err == nil && strings.Contains(string(b), mark) {
			return true
		}
	}
	return false
}

// engine.Approver's contract: the question comes only once Next has
// returned every event before it — the call's tool:start above all. A
// consumer that stops reading after session:init (until the question
// comes, or a second passes) must still see the tool:start before the
// Approver is asked; the native engine used to ask straight from the
// loop, while the tool:start was still in its channel.
func TestEngineMCPAsksAfterToolStartWasRead(t *testing.T) {
	f := newFixture(t)
	f.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "mcp__everything__echo", map[string]any{"message": "in order"})}},
		claudetest.TextReply("done"))
	e := newEngine(f)
	defer e.Shutdown(context.Background())
	ap := &orderApprover{read: map[string]bool{}, asked: make(chan struct{}, 1)}
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "echo", Cwd: t.TempDir(), StateDir: t.TempDir(),
		MCP: mcptest.Config(mcptest.Everything(t, "everything", nil)), PermissionMode: "default", Approver: ap})
	if err != nil {
		t.Fatal(err)
	}
	var evs []event.Event
	for tr.Next() {
		ev := tr.Event()
		evs = append(evs, ev)
		if ev.Type == event.TypeToolStart {
			ap.mu.Lock()
			ap.read[ev.ToolStart.ToolUseID] = true
			ap.mu.Unlock()
		}
		if ev.Type == event.TypeSessionInit { // the slow part: read nothing more for a while
			select {
			case <-ap.asked:
			case <-time.After(time.Second):
			}
		}
	}
	ap.mu.Lock()
	defer ap.mu.Unlock()
	if len(ap.calls) != 1 || ap.calls[0].ToolName != "mcp__everything__echo" {
		t.Fatalf("asked %+v (events %v)", ap.calls, types(evs))
	}
	if !ap.calls[0].startRead {
		t.Errorf("the Approver was asked about %s before Next returned its tool:start", ap.calls[0].ToolUseID)
	}
	var ok bool
	for _, ev := range evs {
		ok = ok || ev.Type == event.TypeToolResult && ev.ToolResult.Content == "Echo: in order" && !ev.ToolResult.IsError
	}
	if !ok || tr.Err() != nil {
		t.Errorf("the approved call did not run: %v, %v", types(evs), tr.Err())
	}
}

type orderApprover struct {
	mu    sync.Mutex
	read  map[string]bool // tool:starts Next returned, by ToolUseID
	calls []orderCall
	asked chan struct{}
}

type orderCall struct {
	engine.ApprovalRequest
	startRead bool
}

func (a *orderApprover) Ask(_ context.Context, r engine.ApprovalRequest) engine.ApprovalDecision {
	a.mu.Lock()
	a.calls = append(a.calls, orderCall{r, a.read[r.ToolUseID]})
	a.mu.Unlock()
	select {
	case a.asked <- struct{}{}:
	default:
	}
	return engine.ApprovalDecision{Allow: true}
}

// Issue 29: an MCP tool that writes a protected path is not allowed by a
// rule: in dontAsk it is denied although a rule names the tool (the
// reference filesystem server's write_file into .chirality/), and in a
// mode that asks the Approver decides.
func TestEngineMCPProtectedWrite(t *testing.T) {
	fsEntry, err := mcptest.Find("@modelcontextprotocol/server-filesystem/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode  string
		asked int
	}{{"dontAsk", 0}, {"default", 1}} {
		t.Run(c.mode, func(t *testing.T) {
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(root, ".chirality"), 0o755); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(root, ".chirality", "sessions.json")
			cfg := mcptest.Config(mcpconfig.Server{Name: "fs", Type: mcpconfig.Stdio, Command: node, Args: []string{fsEntry, root}})
			f := newFixture(t)
			f.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "mcp__fs__write_file", map[string]any{"path": target, "content": "{}"})}},
				claudetest.TextReply("done"))
			e := newEngine(f)
			defer e.Shutdown(context.Background())
			ap := &denyingApprover{}
			tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "write", Cwd: root, StateDir: t.TempDir(),
				MCP: cfg, PermissionMode: c.mode, Approver: ap, AllowedTools: []string{"mcp__fs"}})
			if err != nil {
				t.Fatal(err)
			}
			evs := drain(t, tr)
			if _, err := os.Stat(target); err == nil {
				t.Fatalf("the protected file was written (events %v)", types(evs))
			}
			if len(ap.asked) != c.asked {
				t.Fatalf("asked %d times, want %d", len(ap.asked), c.asked)
			}
		})
	}
}

type denyingApprover struct{ asked []engine.ApprovalRequest }

func (a *denyingApprover) Ask(_ context.Context, r engine.ApprovalRequest) engine.ApprovalDecision {
	a.asked = append(a.asked, r)
	return engine.ApprovalDecision{Message: "no"}
}
