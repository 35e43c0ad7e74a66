package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

var update = flag.Bool("update", false, "rewrite the recordings and shapes in testdata from the real agents")

// agentSpec is how one real agent runs offline against the fake Messages
// API (the recipes of shared/docs/engines.md, checked on the binaries).
type agentSpec struct {
	name string
	// shell is the model-side name of the agent's shell tool and how its
	// input is written.
	shell func(cmd string) (string, any)
	env   func(fake *claudetest.FakeAPI, home string) []string
}

var realAgents = []agentSpec{
	{
		name:  acp.OpenCode,
		shell: func(c string) (string, any) { return "bash", map[string]any{"command": c, "description": "run " + c} },
		env: func(fake *claudetest.FakeAPI, home string) []string {
			conf := `{"model":"fake/fake-model","permission":{"bash":"ask"},"provider":{"fake":{"npm":"@ai-sdk/anthropic","options":{"baseURL":"` +
				fake.URL + `/v1","apiKey":"x"},"models":{"fake-model":{"name":"Fake","tool_call":true}}}}}`
			return []string{"OPENCODE_CONFIG_CONTENT=" + conf, "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1",
				"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1"}
		},
	},
	{
		name:  acp.ClaudeACP,
		shell: func(c string) (string, any) { return "Bash", map[string]any{"command": c, "description": "run " + c} },
		env: func(fake *claudetest.FakeAPI, home string) []string {
			// As root, IS_SANDBOX=yes is what made every session/new fail
			// ("--dangerously-skip-permissions cannot be used with root"):
			// the adapter lets the CLI skip permissions for any value, the
			// CLI accepts only "1". The engine's session _meta keeps the
			// flag off outside bypassPermissions (ClaudeACPSessionMeta).
			return append(fake.Env(), "IS_SANDBOX=yes")
		},
	},
	{
		name:  acp.Copilot,
		shell: func(c string) (string, any) { return "bash", map[string]any{"command": c, "description": "run " + c} },
		env: func(fake *claudetest.FakeAPI, home string) []string {
			return []string{"COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL=" + fake.URL, "COPILOT_PROVIDER_TYPE=anthropic",
				"COPILOT_PROVIDER_API_KEY=x", "COPILOT_MODEL=claude-sonnet-4.5"}
		},
	},
}

// findAgent is the pinned agent of `make cli`: node_modules/.bin/NAME in
// the working directory or a parent. It fails the test when missing.
func findAgent(t testing.TB, bin string) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		p := filepath.Join(dir, "node_modules", ".bin", bin)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("%s not found in node_modules/.bin of %s or a parent; run `make cli`", bin, dir)
		}
		dir = parent
	}
}

// responder answers the agents' model calls by what the prompt asks.
func responder(spec agentSpec) func(*claudetest.Request) claudetest.Reply {
	return func(r *claudetest.Request) claudetest.Reply {
		if len(r.Tools) == 0 {
			return claudetest.TextReply("A title") // side queries (titles)
		}
		last := r.LastUserText()
		if lastIsToolResult(r) {
			return claudetest.TextReply("done with the tool.")
		}
		shellTool := func(cmd string) claudetest.Reply {
			name, in := spec.shell(cmd)
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("Running it."), claudetest.ToolUse("", name, in)}}
		}
		switch {
		case strings.Contains(last, "show the file"):
			return shellTool("cat a.txt")
		case strings.Contains(last, "make marker one"):
			return shellTool("touch marker1")
		case strings.Contains(last, "make marker two"):
			return shellTool("touch marker2")
		case strings.Contains(last, "what did I ask first"):
			for _, m := range r.Messages {
				for _, c := range m.Content {
					if c.Type == "text" && strings.Contains(c.Text, "say hello") {
						return claudetest.TextReply("You asked me to say hello.")
					}
				}
			}
			return claudetest.TextReply("I do not remember.")
		case strings.Contains(last, "tell a long story"):
			// (after "what did I ask first": Copilot joins an interrupted
			// prompt with the next one in one user message)
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("once upon a time ", 200))}, ChunkDelay: 40 * time.Millisecond, ChunkSize: 8}
		}
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Thinking("Greeting."), claudetest.Text("Hello from the fake model.")}}
	}
}

func lastIsToolResult(r *claudetest.Request) bool {
	if len(r.Messages) == 0 {
		return false
	}
	m := r.Messages[len(r.Messages)-1]
	if m.Role != "user" {
		return false
	}
	for _, c := range m.Content {
		if c.Type == "tool_result" {
			return true
		}
	}
	return false
}

// queueApprover answers with the next decision and counts questions.
type queueApprover struct {
	mu    sync.Mutex
	next  []bool
	asked []engine.ApprovalRequest
}

func (q *queueApprover) Ask(ctx context.Context, r engine.ApprovalRequest) engine.ApprovalDecision {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.asked = append(q.asked, r)
	allow := true
	if len(q.next) > 0 {
		allow, q.next = q.next[0], q.next[1:]
	}
	return engine.ApprovalDecision{Allow: allow, Message: "denied by the test"}
}

func (q *queueApprover) take() []engine.ApprovalRequest {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.asked
	q.asked = nil
	return out
}

// recorder keeps the raw ACP stream, both ways, line by line.
type recorder struct {
	mu    sync.Mutex
	buf   map[string]*bytes.Buffer
	lines []recLine
}

type recLine struct {
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

func (r *recorder) tap(dir string, b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.buf == nil {
		r.buf = map[string]*bytes.Buffer{}
	}
	buf := r.buf[dir]
	if buf == nil {
		buf = &bytes.Buffer{}
		r.buf[dir] = buf
	}
	buf.Write(b)
	for {
		i := bytes.IndexByte(buf.Bytes(), '\n')
		if i < 0 {
			return
		}
		line := bytes.TrimSpace(buf.Next(i + 1))
		if json.Valid(line) {
			r.lines = append(r.lines, recLine{dir, append(json.RawMessage(nil), line...)})
		}
	}
}

func (r *recorder) all() []recLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recLine(nil), r.lines...)
}

// TestRealAgents runs each pinned ACP agent offline against the fake
// Messages API, in one session (one agent process): a text turn, a tool
// with its result, a permission allowed then denied, an interrupt, and a
// last turn that remembers the first. The ACP stream is recorded; its
// shapes must match testdata/SHAPES (see TestContract…), and with -update
// the recordings are rewritten.
func TestRealAgents(t *testing.T) {
	for _, spec := range realAgents {
		t.Run(spec.name, func(t *testing.T) {
			t.Parallel()
			runRealAgent(t, spec)
		})
	}
}

// realEngine is the engine of the pinned agent spec names, built from
// cfg (its built-in entry, maybe changed) to run offline against fake
// with home as its HOME and XDG directories. Shut it down with
// shutdownReal.
func realEngine(t *testing.T, spec agentSpec, cfg acp.Config, fake *claudetest.FakeAPI, home string) *acp.Engine {
	t.Helper()
	cfg.Binary = findAgent(t, cfg.Command[0])
	cfg.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home + "/.config",
		"XDG_DATA_HOME=" + home + "/.local/share", "XDG_CACHE_HOME=" + home + "/.cache", "XDG_STATE_HOME=" + home + "/.local/state"}
	cfg.ExtraEnv = spec.env(fake, home)
	cfg.StopGrace = time.Second
	e, err := acp.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// shutdownReal shuts e down within 20 s, failing the test otherwise.
func shutdownReal(t *testing.T, e *acp.Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

func runRealAgent(t *testing.T, spec agentSpec) {
	cfg, _ := acp.BuiltinConfig(spec.name)
	fake, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	fake.SetResponder(responder(spec))
	home := t.TempDir()
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := realEngine(t, spec, cfg, fake, home)
	rec := &recorder{}
	acp.SetTap(e, rec.tap)
	defer func() {
		if t.Failed() {
			logTrail(t, home, rec, fake)
		}
	}()
	defer shutdownReal(t, e)
	if st := e.Check(context.Background()); !st.Available {
		t.Fatalf("check: %+v", st)
	} else {
		t.Logf("%s version %q", spec.name, st.Version) // `--version` is bounded at 10s: empty on a very loaded machine
	}
	appr := &queueApprover{}
	conv := ""
	turn := func(msg string, interrupt bool) ([]event.Event, error) {
		t.Helper()
		tr, err := e.StartTurn(context.Background(), engine.Request{
			SessionKey: "s1", Message: msg, Cwd: cwd, Resume: conv, PermissionMode: "default", Approver: appr,
			SystemPrompt: "You are a careful test persona.",
		})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		if interrupt {
			var evs []event.Event
			for tr.Next() {
				evs = append(evs, tr.Event())
				if tr.Event().Type == event.TypeChatDelta {
					break
				}
			}
			_ = tr.Interrupt()
			rest, err := collect(t, tr, 60*time.Second)
			return append(evs, rest...), err
		}
		return collect(t, tr, 120*time.Second)
	}

	// Text.
	evs, err := turn("say hello", false)
	if err != nil {
		t.Fatalf("text turn: %v (%v)", err, types(evs))
	}
	conv = evs[0].Init.ConversationID
	if !strings.Contains(chat(evs), "Hello from the fake model.") || conv == "" || evs[0].Init.Engine != spec.name {
		t.Errorf("text turn: chat %q, init %+v", chat(evs), evs[0].Init)
	}
	if c := find(evs, event.TypeChatComplete); c == nil || !strings.Contains(c.Text, "Hello from the fake model.") {
		t.Errorf("chat:complete = %+v", c)
	}
	if !strings.Contains(systemOrFirstPrompt(fake), "You are a careful test persona.") {
		t.Errorf("the persona preamble did not reach the model")
	}
	checkTurnUsage(t, spec.name, evs)
	pid := e.Pid("s1")

	// A tool with its result.
	evs, err = turn("show the file a.txt", false)
	if err != nil {
		t.Fatalf("tool turn: %v", err)
	}
	ts, tr := find(evs, event.TypeToolStart), find(evs, event.TypeToolResult)
	if ts == nil || tr == nil || !strings.Contains(string(ts.ToolStart.Input), "cat a.txt") || !strings.Contains(tr.ToolResult.Content, "alpha") || tr.ToolResult.IsError {
		t.Errorf("tool turn: start %+v result %+v", ts, tr)
	}
	appr.take()

	// A permission request allowed, then one denied.
	appr.mu.Lock()
	appr.next = []bool{true, false}
	appr.mu.Unlock()
	if evs, err = turn("make marker one", false); err != nil {
		t.Fatalf("allowed turn: %v", err)
	}
	if asked := appr.take(); len(asked) != 1 || !strings.Contains(string(asked[0].Input), "touch marker1") {
		t.Errorf("allowed turn asked %+v", asked)
	}
	if _, err := os.Stat(filepath.Join(cwd, "marker1")); err != nil {
		t.Errorf("the allowed command did not run: %v (%v)", err, types(evs))
	}
	if evs, err = turn("make marker two", false); err != nil {
		t.Fatalf("denied turn: %v", err)
	}
	if asked := appr.take(); len(asked) != 1 {
		t.Errorf("denied turn asked %d times", len(asked))
	}
	if _, err := os.Stat(filepath.Join(cwd, "marker2")); err == nil {
		t.Errorf("the denied command ran (%v)", types(evs))
	}
	if r := find(evs, event.TypeToolResult); r != nil && !r.ToolResult.IsError {
		t.Logf("denied tool's result is not an error: %+v", r.ToolResult)
	}

	// Interrupt.
	start := time.Now()
	evs, err = turn("tell a long story", true)
	var te *engine.TurnError
	if !asTurnError(err, &te) || te.Kind != event.ErrorInterrupted {
		t.Errorf("interrupted turn: %v (%v)", err, types(evs))
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("interrupt took %v", d)
	}

	// The session remembers the first turn.
	evs, err = turn("what did I ask first?", false)
	if err != nil {
		t.Fatalf("last turn: %v", err)
	}
	if !strings.Contains(chat(evs), "You asked me to say hello.") {
		t.Errorf("the session forgot: %q", chat(evs))
	}
	if e.Pid("s1") != pid {
		t.Errorf("the session's agent changed (pid %d → %d)", pid, e.Pid("s1"))
	}
	e.Close("s1")
	processGone(t, pid)

	lines := rec.all()
	if *update {
		writeRecording(t, spec.name, lines)
	}
	checkShapes(t, spec.name, lines)
}

// logTrail logs, for a failed run, what the agent did last: the end of
// the recorded ACP stream, the model requests it made, and the errors of
// its own log (Copilot's, under HOME/.copilot/logs: "ACP event stream
// lagged" explains a prompt it cancelled by itself).
func logTrail(t *testing.T, home string, rec *recorder, fake *claudetest.FakeAPI) {
	lines := rec.all()
	for _, l := range lines[max(0, len(lines)-30):] {
		m := string(l.Msg)
		if len(m) > 300 {
			m = m[:300] + "…"
		}
		t.Logf("acp %s %s", l.Dir, m)
	}
	for i, r := range fake.Requests() {
		t.Logf("model request %d: stream %v, %d tools, %d messages, last %.80q", i, r.Stream, len(r.Tools), len(r.Messages), r.LastUserText())
	}
	logs, _ := filepath.Glob(filepath.Join(home, ".copilot", "logs", "*.log"))
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "[ERROR]") {
				t.Logf("%s: %s", filepath.Base(f), l)
			}
		}
	}
}

func asTurnError(err error, te **engine.TurnError) bool {
	e, ok := err.(*engine.TurnError)
	if ok {
		*te = e
	}
	return ok
}

// systemOrFirstPrompt joins the system text and messages of the fake's
// requests (where an agent puts a preamble is its own affair).
func systemOrFirstPrompt(f *claudetest.FakeAPI) string {
	var b strings.Builder
	for _, r := range f.Requests() {
		b.WriteString(r.SystemText())
		for _, m := range r.Messages {
			for _, c := range m.Content {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}
