package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/mcpserver"
)

// env is a Harness on the demo model (offline) with the built-in engines,
// its MCP server, and a root.
type env struct {
	h    *harness.Harness
	s    *mcpserver.Server
	root string
}

func newEnv(t *testing.T, o mcpserver.Options) *env {
	t.Helper()
	d, err := engines.StartDemo(engines.DemoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	root, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(root, "README.md"), []byte("# p\n"), 0o644)
	h, err := harness.New(harness.Config{Roots: []string{root}, StateDir: t.TempDir(), NoProjectLogs: true,
		ChildEnv: d.Env, AllowedTools: d.AllowedTools, DefaultPermissionMode: "default", Approvals: true,
		Aliases: engines.Aliases, DefaultEngine: "anthropic",
		Engines: engines.Builtin(engines.Config{ClaudeBinary: claudetest.FindCLI(t), ChildEnv: d.Env,
			InterruptGrace: time.Second, KillGrace: 2 * time.Second})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		h.Shutdown(ctx)
	})
	return &env{h: h, s: mcpserver.New(h, o), root: root}
}

// connect serves one in-memory client; opts may set handlers.
func (e *env) connect(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return e.connectVersion(t, opts, "")
}

// connectVersion is connect on protocol version v ("" = the latest).
func (e *env) connectVersion(t *testing.T, opts *mcp.ClientOptions, v string) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.s.Run(ctx, st) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); cancel(); <-done })
	return cs
}

// call calls a tool and decodes its structured result into out; it
// returns the result's text when it is a tool error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) (errText string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	if out != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %v in %s", name, err, raw)
		}
	}
	return ""
}

// A client lists the six tools, makes a session on the native engine,
// runs a turn to its end (final text, cost, tool calls, progress
// notifications) and reads the transcript; list_sessions shows it.
func TestToolsEndToEnd(t *testing.T) {
	e := newEnv(t, mcpserver.Options{})
	var mu sync.Mutex
	var progress []string
	cs := e.connect(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, r.Params.Message)
		mu.Unlock()
	}})
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "create_session,get_transcript,get_usage,interrupt,list_engines,list_sessions,run_turn" {
		t.Fatalf("tools %s", got)
	}
	var eng mcpserver.ListEnginesOut
	if msg := call(t, cs, "list_engines", map[string]any{}, &eng); msg != "" || len(eng.Engines) < 2 {
		t.Fatalf("list_engines %q %+v", msg, eng)
	}
	var s mcpserver.SessionOut
	if msg := call(t, cs, "create_session", map[string]any{"projectRoot": e.root, "engine": "native"}, &s); msg != "" {
		t.Fatal(msg)
	}
	if s.Engine != "anthropic" || s.ProjectRoot != e.root || s.SessionID == "" {
		t.Fatalf("session %+v", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_turn", Arguments: map[string]any{"sessionId": s.SessionID, "message": "hello there"},
		Meta: mcp.Meta{"progressToken": "tok-1"}})
	if err != nil || res.IsError {
		t.Fatalf("run_turn: %v %+v", err, res)
	}
	var out mcpserver.RunTurnOut
	raw, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(raw, &out)
	if out.Status != "completed" || !strings.Contains(out.Final, "") || out.Final == "" || len(out.ToolCalls) == 0 {
		t.Fatalf("run_turn %s", raw)
	}
	mu.Lock()
	np := len(progress)
	mu.Unlock()
	if np == 0 {
		t.Errorf("no progress notification for a call with a progress token")
	}
	var tr mcpserver.TranscriptOut
	if msg := call(t, cs, "get_transcript", map[string]any{"sessionId": s.SessionID}, &tr); msg != "" {
		t.Fatal(msg)
	}
	roles := map[string]int{}
	for _, en := range tr.Entries {
		roles[en.Role]++
	}
	if roles["user"] != 1 || roles["assistant"] == 0 || roles["tool"] == 0 || tr.Entries[0].Text != "hello there" {
		t.Fatalf("transcript %+v", tr)
	}
	var ls mcpserver.ListSessionsOut
	if msg := call(t, cs, "list_sessions", map[string]any{}, &ls); msg != "" || len(ls.Sessions) != 1 || ls.Sessions[0].ID != s.SessionID {
		t.Fatalf("list_sessions %q %+v", msg, ls)
	}
	var us mcpserver.GetUsageOut
	if msg := call(t, cs, "get_usage", map[string]any{"by": "session"}, &us); msg != "" || us.Total.Turns != 1 || us.Total.InputTokens < 10 ||
		us.Total.CostUSD <= 0 || len(us.Groups) != 1 || us.Groups[0].Key != s.SessionID {
		t.Fatalf("get_usage %q %+v", msg, us)
	}
	var in mcpserver.InterruptOut
	if msg := call(t, cs, "interrupt", map[string]any{"sessionId": s.SessionID}, &in); msg != "" || in.Interrupted {
		t.Fatalf("interrupt of an idle session: %q %+v", msg, in)
	}
}

// Hostile calls get tool errors that say what is wrong, and change
// nothing.
func TestHostileCalls(t *testing.T) {
	e := newEnv(t, mcpserver.Options{})
	cs := e.connect(t, nil)
	outside := t.TempDir()
	unknown := "0b6b2a3e-6a3f-4a53-9a5e-2c1f5f7d9e10"
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"create_session", map[string]any{"projectRoot": outside}, "outside the server's roots"},
		{"create_session", map[string]any{"projectRoot": "relative/dir"}, "absolute path"},
		{"create_session", map[string]any{}, "projectRoot"},
		{"create_session", map[string]any{"projectRoot": e.root, "engine": "nope"}, "unknown engine"},
		{"create_session", map[string]any{"projectRoot": strings.Repeat("a", mcpserver.MaxPathBytes+1)}, "over the limit"},
		{"list_sessions", map[string]any{"projectRoot": outside}, "outside the server's roots"},
		{"run_turn", map[string]any{"sessionId": unknown, "message": "hi"}, "unknown session"},
		{"run_turn", map[string]any{"sessionId": "../../etc/passwd", "message": "hi"}, "invalid sessionId"},
		{"run_turn", map[string]any{"sessionId": unknown, "message": strings.Repeat("x", mcpserver.MaxMessageBytes+1)}, "message is 1048577 bytes, over the limit"},
		{"run_turn", map[string]any{"sessionId": unknown, "message": "  "}, "message is required"},
		{"get_transcript", map[string]any{"sessionId": unknown}, "unknown session"},
		{"get_transcript", map[string]any{"sessionId": strings.Repeat("a", 300)}, "over the limit"},
		{"interrupt", map[string]any{"sessionId": unknown}, "unknown session"},
	} {
		got := call(t, cs, c.tool, c.args, nil)
		if !strings.Contains(got, c.want) {
			t.Errorf("%s %v: error %q, want it to say %q", c.tool, clipArgs(c.args), got, c.want)
		}
		if len(got) > 2000 {
			t.Errorf("%s: the error echoes the input (%d bytes)", c.tool, len(got))
		}
	}
	// A wrong type is refused by the input schema, as a tool error.
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_turn", Arguments: map[string]any{"sessionId": 7, "message": "hi"}})
	if err == nil && !res.IsError {
		t.Errorf("run_turn with a number for sessionId was accepted")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("a refused root was written: %v", entries)
	}
	var ls mcpserver.ListSessionsOut
	if call(t, cs, "list_sessions", map[string]any{}, &ls); len(ls.Sessions) != 0 {
		t.Errorf("a refused call made a session: %+v", ls)
	}
}

func clipArgs(m map[string]any) string {
	b, _ := json.Marshal(m)
	if len(b) > 120 {
		return string(b[:120]) + "…"
	}
	return string(b)
}

// A second run_turn while one runs is refused as busy; a client that goes
// away mid-turn gets its turn interrupted (the session is idle again, its
// log ends with the interruption).
func TestBusyAndVanishingClient(t *testing.T) {
	e := newEnv(t, mcpserver.Options{})
	cs := e.connect(t, nil)
	var s mcpserver.SessionOut
	if msg := call(t, cs, "create_session", map[string]any{"projectRoot": e.root, "engine": "native"}, &s); msg != "" {
		t.Fatal(msg)
	}
	// A second client, on pipes like stdio, starts a long turn, then
	// vanishes: its end of both pipes closes.
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		e.s.Run(context.Background(), &mcp.IOTransport{Reader: toServer, Writer: fromServer})
	}()
	_, err := mcp.NewClient(&mcp.Implementation{Name: "leaver", Version: "1"}, nil).Connect(context.Background(),
		&mcp.IOTransport{Reader: toClient, Writer: fromClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c2 := &rawCall{w: fromClient}
	c2.send(t, `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"run_turn","arguments":{"sessionId":"`+s.SessionID+`","message":"tell me something long"}}}`)
	waitFor(t, "the turn to run", func() bool { return e.h.IsRunning(s.SessionID) })
	if got := call(t, cs, "run_turn", map[string]any{"sessionId": s.SessionID, "message": "me too"}, nil); !strings.Contains(got, "busy") {
		t.Errorf("second run_turn: %q, want busy", got)
	}
	fromClient.Close()
	toClient.Close()
	waitFor(t, "the turn to stop after its client left", func() bool { return !e.h.IsRunning(s.SessionID) })
	var tr mcpserver.TranscriptOut
	call(t, cs, "get_transcript", map[string]any{"sessionId": s.SessionID}, &tr)
	last := tr.Entries[len(tr.Entries)-1]
	if last.Role != "error" || !strings.Contains(last.Text, "interrupted") && !strings.Contains(last.Text, "killed") {
		t.Errorf("the vanished client's turn ended with %+v", last)
	}
	<-served
}

// rawCall writes JSON-RPC lines as a client would.
type rawCall struct{ w io.Writer }

func (r *rawCall) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.w, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A tool that asks (the demo's "touch" is a Bash use no rule allows, in
// the permission mode default) is asked through elicitation when the
// client can answer (its allow runs the tool), and denied when it cannot
// (the dontAsk policy): the file exists in one case only.
func TestApprovalsByElicitation(t *testing.T) {
	allow := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if !strings.Contains(r.Params.Message, "Bash") {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow"}}, nil
	}}
	for _, c := range []struct {
		name    string
		opts    *mcp.ClientOptions
		version string
		created bool
	}{
		{"no elicitation: denied", nil, "2025-11-25", false},
		{"protocol 2026-07-28 (multi round-trip only): denied", allow, "", false},
		{"elicitation declined: denied", &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}}, "2025-11-25", false},
		{"elicitation allows", allow, "2025-11-25", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, mcpserver.Options{})
			cs := e.connectVersion(t, c.opts, c.version)
			var s mcpserver.SessionOut
			if msg := call(t, cs, "create_session", map[string]any{"projectRoot": e.root, "engine": "claude-code"}, &s); msg != "" {
				t.Fatal(msg)
			}
			var out mcpserver.RunTurnOut
			if msg := call(t, cs, "run_turn", map[string]any{"sessionId": s.SessionID, "message": "touch the marker"}, &out); msg != "" {
				t.Fatal(msg)
			}
			_, err := os.Stat(filepath.Join(e.root, "demo-marker.txt"))
			if created := err == nil; created != c.created {
				t.Fatalf("marker created %v, want %v; turn %+v", created, c.created, out)
			}
			if len(out.ToolCalls) == 0 || out.ToolCalls[0].Name != "Bash" || out.ToolCalls[0].IsError == c.created {
				t.Errorf("tool calls %+v", out.ToolCalls)
			}
		})
	}
}

// A turn past Options.TurnTimeout is interrupted: run_turn answers with
// status interrupted, and the session is idle again.
func TestTurnTimeout(t *testing.T) {
	e := newEnv(t, mcpserver.Options{TurnTimeout: 300 * time.Millisecond})
	cs := e.connect(t, nil)
	var s mcpserver.SessionOut
	if msg := call(t, cs, "create_session", map[string]any{"projectRoot": e.root, "engine": "native"}, &s); msg != "" {
		t.Fatal(msg)
	}
	var out mcpserver.RunTurnOut
	if msg := call(t, cs, "run_turn", map[string]any{"sessionId": s.SessionID, "message": "something long please"}, &out); msg != "" {
		t.Fatal(msg)
	}
	if out.Status != "interrupted" || out.Error == "" {
		t.Errorf("a turn past its deadline: %+v", out)
	}
	if e.h.IsRunning(s.SessionID) {
		t.Errorf("the turn still runs after run_turn answered")
	}
}
