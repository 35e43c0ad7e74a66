package native

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

func newEngine(f *fixture) *Engine {
	return NewEngine(EngineConfig{APIKey: "k", BaseURL: f.api.URL, MaxRetries: -1})
}

func drain(t *testing.T, tr engine.Turn) []event.Event {
	t.Helper()
	var evs []event.Event
	for tr.Next() {
		evs = append(evs, tr.Event())
	}
	if n := len(evs); n > 0 && evs[n-1].Exit != nil { // engine.TurnExit: 0 exactly when the turn completed
		completed := false
		for _, e := range evs {
			completed = completed || e.Type == event.TypeSessionComplete
		}
		if (evs[n-1].Exit.Code == 0) != completed {
			t.Errorf("process:exit code %d, completed %v: the code must be 0 exactly when the turn completed", evs[n-1].Exit.Code, completed)
		}
	}
	if len(evs) == 0 || evs[0].Type != event.TypeSessionInit && evs[0].Type != event.TypeSessionError {
		t.Fatalf("first event %+v", evs)
	}
	ends := 0
	for i, e := range evs {
		if e.SessionID != "s1" {
			t.Fatalf("event %s without the session key", e.Type)
		}
		if e.Type == event.TypeSessionComplete || e.Type == event.TypeSessionError {
			ends++
		}
		if (e.Type == event.TypeProcessExit) != (i == len(evs)-1) {
			t.Fatalf("process:exit at %d of %d", i, len(evs))
		}
	}
	if ends != 1 {
		t.Fatalf("%d end events", ends)
	}
	return evs
}

func types(evs []event.Event) []string {
	var out []string
	for _, e := range evs {
		if len(out) > 0 && out[len(out)-1] == string(e.Type) && (e.Type == event.TypeChatDelta || e.Type == event.TypeThinkingDelta) {
			continue
		}
		out = append(out, string(e.Type))
	}
	return out
}

func TestEngineTurnEventsAndResume(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hi\n"), 0o644)
	state := t.TempDir()
	f.api.Script(
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.Thinking("look first"), claudetest.Text("Listing."),
			claudetest.ToolUse("t1", "list_dir", map[string]any{"path": "."})}},
		claudetest.TextReply("I saw hello.txt"),
	)
	e := newEngine(f)
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "what is here?", Cwd: root, StateDir: state,
		Tools: []string{"Read", "LS"}, SystemPrompt: "persona"})
	if err != nil {
		t.Fatal(err)
	}
	evs := drain(t, tr)
	want := []string{"session:init", "thinking:delta", "chat:delta", "chat:complete", "tool:start", "usage:update", "tool:result", "chat:delta", "chat:complete", "usage:update", "session:complete", "process:exit"}
	if got := types(evs); !slices.Equal(got, want) {
		t.Fatalf("events %v\nwant %v", got, want)
	}
	init := evs[0].Init
	if init.Engine != "anthropic" || init.ConversationID == "" || !slices.Equal(init.Tools, []string{"read", "list_dir"}) || init.Model != DefaultModel {
		t.Fatalf("session:init %+v", init)
	}
	for _, ev := range evs {
		if ev.Type == event.TypeToolResult && (ev.ToolResult.IsError || !strings.Contains(ev.ToolResult.Content, "hello.txt")) {
			t.Fatalf("tool result %+v", ev.ToolResult)
		}
		if ev.Type == event.TypeSessionComplete && (ev.Complete.NumTurns != 2 || ev.Complete.CostUSD <= 0) {
			t.Fatalf("complete %+v", ev.Complete)
		}
	}
	if tr.Err() != nil || evs[len(evs)-1].Exit.Code != 0 {
		t.Fatalf("err %v exit %+v", tr.Err(), evs[len(evs)-1].Exit)
	}

	// A new engine (a restarted server) resumes the conversation from
	// the state directory.
	f.api.Script(claudetest.TextReply("you asked what is here"))
	e2 := newEngine(f)
	tr, err = e2.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "what did I ask?", Cwd: root, StateDir: state, Resume: init.ConversationID})
	if err != nil {
		t.Fatal(err)
	}
	drain(t, tr)
	msgs := f.api.Requests()[len(f.api.Requests())-1].Messages
	if len(msgs) != 5 || msgs[0].Content[0].Text != "what is here?" {
		t.Fatalf("resumed history: %d messages", len(msgs))
	}

	// A conversation the state directory does not have.
	tr, _ = e2.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "x", Cwd: root, StateDir: state, Resume: "gone"})
	evs = drain(t, tr)
	if evs[0].Type != event.TypeSessionError || evs[0].Error.Kind != event.ErrorResumeNotFound {
		t.Fatalf("missing conversation: %+v", evs[0])
	}
	for _, x := range []*Engine{e, e2} {
		if err := x.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEngineInterruptBusyAndShutdown(t *testing.T) {
	f := newFixture(t)
	f.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("words ", 400))}, ChunkSize: 4, ChunkDelay: 20 * time.Millisecond})
	e := newEngine(f)
	req := engine.Request{SessionKey: "s1", Message: "talk", Cwd: t.TempDir(), StateDir: t.TempDir()}
	tr, err := e.StartTurn(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.StartTurn(context.Background(), req); !errors.Is(err, engine.ErrBusy) {
		t.Fatalf("second turn: %v", err)
	}
	var evs []event.Event
	for tr.Next() {
		ev := tr.Event()
		evs = append(evs, ev)
		if ev.Type == event.TypeChatDelta && len(evs) == 3 {
			tr.Interrupt()
		}
	}
	last := evs[len(evs)-2]
	if last.Type != event.TypeSessionError || last.Error.Kind != event.ErrorInterrupted || evs[len(evs)-1].Exit.Code != 1 {
		t.Fatalf("ending %+v %+v", last, evs[len(evs)-1])
	}
	var te *engine.TurnError
	if !errors.As(tr.Err(), &te) || te.Kind != event.ErrorInterrupted {
		t.Fatalf("Err %v", tr.Err())
	}
	e.Shutdown(context.Background())
	if _, err := e.StartTurn(context.Background(), req); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("after Shutdown: %v", err)
	}
	if st := NewEngine(EngineConfig{}).Check(context.Background()); os.Getenv("ANTHROPIC_API_KEY") == "" && os.Getenv("ANTHROPIC_BASE_URL") == "" && (st.Available || st.Reason == "") {
		t.Fatalf("Check without a key: %+v", st)
	}
}

func TestToolsForPersonas(t *testing.T) {
	names := func(req engine.Request) []string {
		var out []string
		for _, t := range toolsFor(req) {
			out = append(out, t.Name())
		}
		return out
	}
	for _, c := range []struct {
		tools, deny []string
		want        []string
	}{
		{nil, nil, []string{"read", "list_dir", "grep"}},
		{[]string{}, nil, nil},
		{[]string{"Read", "Grep"}, nil, []string{"read", "grep"}},
		{[]string{"default"}, []string{"Grep"}, []string{"read", "list_dir"}},
		{[]string{"Bash", "Edit"}, nil, nil},
	} {
		if got := names(engine.Request{Tools: c.tools, DisallowedTools: c.deny}); !slices.Equal(got, c.want) {
			t.Errorf("tools %v deny %v: %v, want %v", c.tools, c.deny, got, c.want)
		}
	}
}

// Checkpoint is the history's length; a fork copies the history to a new
// conversation and leaves the original; ResumeAt cuts (a copy with Fork,
// in place without); a checkpoint beyond the history fails the turn.
func TestEngineForkAndCut(t *testing.T) {
	f := newFixture(t)
	root, state := t.TempDir(), t.TempDir()
	e := newEngine(f)
	defer e.Shutdown(context.Background())
	if c := e.Controls(); !c.Fork || !c.Rewind {
		t.Fatalf("controls %+v", c)
	}
	run := func(req engine.Request) []event.Event {
		t.Helper()
		req.SessionKey, req.Cwd, req.StateDir = "s1", root, state
		tr, err := e.StartTurn(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return drain(t, tr)
	}
	complete := func(evs []event.Event) *event.SessionComplete {
		t.Helper()
		for _, ev := range evs {
			if ev.Type == event.TypeSessionComplete {
				return ev.Complete
			}
		}
		t.Fatalf("no session:complete in %v", types(evs))
		return nil
	}
	history := func() string {
		var b strings.Builder
		for _, m := range f.api.Requests()[len(f.api.Requests())-1].Messages {
			for _, c := range m.Content {
				b.WriteString(c.Text + "|")
			}
		}
		return b.String()
	}
	f.api.Script(claudetest.TextReply("A1"), claudetest.TextReply("A2"), claudetest.TextReply("A3"), claudetest.TextReply("A4"), claudetest.TextReply("A5"))
	evs := run(engine.Request{Message: "Q1"})
	conv := evs[0].Init.ConversationID
	if k := complete(evs).Checkpoint; k != "2" {
		t.Fatalf("first checkpoint %q, want 2", k)
	}
	if k := complete(run(engine.Request{Message: "Q2", Resume: conv})).Checkpoint; k != "4" {
		t.Fatalf("second checkpoint %q, want 4", k)
	}
	// A fork cut after the first turn: a new conversation; the original keeps its four messages.
	evs = run(engine.Request{Message: "Q3", Resume: conv, Fork: true, ResumeAt: "2"})
	if fork := evs[0].Init.ConversationID; fork == conv || fork == "" {
		t.Fatalf("fork's conversation %q (original %q)", fork, conv)
	}
	if h := history(); h != "Q1|A1|Q3|" {
		t.Errorf("forked request %q", h)
	}
	run(engine.Request{Message: "Q4", Resume: conv})
	if h := history(); h != "Q1|A1|Q2|A2|Q4|" {
		t.Errorf("the original after the fork %q", h)
	}
	// Beyond the history: the turn fails as a lost conversation would (the
	// core starts a fresh one), nothing is sent.
	n := len(f.api.Requests())
	evs = run(engine.Request{Message: "Q5", Resume: conv, ResumeAt: "99"})
	if evs[0].Type != event.TypeSessionError || evs[0].Error.Kind != event.ErrorResumeNotFound || len(f.api.Requests()) != n {
		t.Errorf("cut beyond the history: %v", types(evs))
	}
	for _, bad := range []engine.Request{{Message: "x", ResumeAt: "2"}, {Message: "x", Fork: true}, {Message: "x", Resume: conv, ResumeAt: "two"}} {
		bad.SessionKey, bad.Cwd, bad.StateDir = "s1", root, state
		if _, err := e.StartTurn(context.Background(), bad); !errors.Is(err, engine.ErrUnsupported) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
