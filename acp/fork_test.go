package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// forking is newFake's agent advertising and serving session/fork.
func forking(c *acp.Config) { c.ExtraEnv = append(c.ExtraEnv, "ACPTEST_FORK=1") }

// history runs a "history" turn and returns what the agent says the
// session's earlier prompts are.
func history(t *testing.T, e *acp.Engine, req engine.Request) (string, string) {
	t.Helper()
	req.Message = "history " + req.Message
	evs, err := run(t, e, req)
	if err != nil {
		t.Fatalf("%q: %v %v", req.Message, err, types(evs))
	}
	return evs[0].Init.ConversationID, strings.TrimPrefix(chat(evs), "history: ")
}

// TestForkWhereAdvertised: an agent that advertises session/fork forks
// a session in a process of the fork's own (the harness's fork is a new
// session key); the fork starts with the source's conversation, and the
// fork and the source then diverge. Controls says so once an agent
// answered initialize, whatever the entry assumed.
func TestForkWhereAdvertised(t *testing.T) {
	e := newFake(t, forking)
	if c := e.Controls(); c.Fork || c.Rewind {
		t.Errorf("Controls before any agent ran = %+v, want the entry's (none)", c)
	}
	cwd := t.TempDir()
	src, _ := history(t, e, engine.Request{SessionKey: "src", Message: "one", Cwd: cwd})
	_, h := history(t, e, engine.Request{SessionKey: "src", Message: "two", Cwd: cwd, Resume: src})
	if h != "history one" {
		t.Fatalf("source's second turn sees %q", h)
	}
	if c := e.Controls(); !c.Fork || c.Rewind {
		t.Errorf("Controls after the agent advertised fork = %+v, want fork only", c)
	}

	fork, h := history(t, e, engine.Request{SessionKey: "fork", Message: "three-fork", Cwd: cwd, Resume: src, Fork: true})
	if fork == src || fork == "" {
		t.Fatalf("the fork runs on session %q (source %q)", fork, src)
	}
	if h != "history one | history two" {
		t.Errorf("the fork's first turn sees %q, want the source's two prompts", h)
	}
	if e.Pid("fork") == e.Pid("src") {
		t.Error("the fork shares the source's agent process")
	}
	_, h = history(t, e, engine.Request{SessionKey: "src", Message: "three-src", Cwd: cwd, Resume: src})
	if h != "history one | history two" {
		t.Errorf("the source after the fork sees %q: the fork's turn leaked into it", h)
	}
	_, h = history(t, e, engine.Request{SessionKey: "fork", Message: "four-fork", Cwd: cwd, Resume: fork})
	if h != "history one | history two | history three-fork" {
		t.Errorf("the fork's second turn sees %q", h)
	}

	// A fork of a session the agent does not know fails the turn, not
	// the engine.
	evs, err := run(t, e, engine.Request{SessionKey: "bad", Message: "x", Resume: "no-such-session", Fork: true})
	var te *engine.TurnError
	if !errors.As(err, &te) || te.Kind != event.ErrorResumeNotFound || !strings.Contains(te.Message, "session/fork") {
		t.Errorf("fork of an unknown session: %v %v", err, types(evs))
	}

	// Rewind is never supported: refused before anything starts.
	_, err = e.StartTurn(context.Background(), engine.Request{SessionKey: "src", Message: "x", Resume: src, ResumeAt: "1"})
	if !errors.Is(err, engine.ErrUnsupported) || !strings.Contains(err.Error(), "cut at a turn") {
		t.Errorf("ResumeAt: %v, want ErrUnsupported", err)
	}
}

// TestForkNow: Engine.ForkNow copies the session at once, in the fork's
// own agent, without a prompt: a turn of the source after it is not in
// the copy, which the fork key's next turn continues (Resume, no Fork). An
// unknown source fails it.
func TestForkNow(t *testing.T) {
	e := newFake(t, forking)
	cwd := t.TempDir()
	src, _ := history(t, e, engine.Request{SessionKey: "src", Message: "one", Cwd: cwd})
	fork, err := e.ForkNow(context.Background(), engine.Request{SessionKey: "fork", Cwd: cwd, Resume: src})
	if err != nil || fork == "" || fork == src {
		t.Fatalf("ForkNow: %q, %v (source %q)", fork, err, src)
	}
	if _, h := history(t, e, engine.Request{SessionKey: "src", Message: "two-src", Cwd: cwd, Resume: src}); h != "history one" {
		t.Fatalf("the source's turn after the fork sees %q", h)
	}
	id, h := history(t, e, engine.Request{SessionKey: "fork", Message: "two-fork", Cwd: cwd, Resume: fork})
	if id != fork || h != "history one" {
		t.Errorf("the fork's first turn runs on %q (want %q) and sees %q, want only the source's turn before the fork", id, fork, h)
	}
	if _, err := e.ForkNow(context.Background(), engine.Request{SessionKey: "bad", Cwd: cwd, Resume: "no-such-session"}); err == nil {
		t.Error("ForkNow of an unknown session succeeded")
	}
	if _, err := e.ForkNow(context.Background(), engine.Request{SessionKey: "none", Cwd: cwd}); !errors.Is(err, engine.ErrUnsupported) {
		t.Errorf("ForkNow without a conversation: %v", err)
	}
}

// TestForkRefusedWhereNotAdvertised: an agent that does not advertise
// session/fork is never sent it. Before its first answer the entry's
// Fork decides; an entry that claims fork for an agent that does not
// offer it fails the turn with a clear text, and from then on Controls
// says no and StartTurn refuses with ErrUnsupported.
func TestForkRefusedWhereNotAdvertised(t *testing.T) {
	e := newFake(t, func(c *acp.Config) { c.Fork = true })
	if c := e.Controls(); !c.Fork {
		t.Errorf("Controls before any agent ran = %+v, want the entry's fork", c)
	}
	cwd := t.TempDir()
	src, _ := history(t, e, engine.Request{SessionKey: "src", Message: "one", Cwd: cwd})
	if c := e.Controls(); c.Fork || c.Rewind {
		t.Errorf("Controls after an agent without fork answered = %+v", c)
	}
	_, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "fork", Message: "x", Resume: src, Fork: true, Cwd: cwd})
	if !errors.Is(err, engine.ErrUnsupported) || !strings.Contains(err.Error(), "session/fork") {
		t.Errorf("fork: %v, want ErrUnsupported naming session/fork", err)
	}

	// The agent changed under an entry that says it forks (a fresh
	// engine: nothing learned yet): the turn fails at its start.
	e = newFake(t, func(c *acp.Config) { c.Fork = true })
	evs, err := run(t, e, engine.Request{SessionKey: "fork", Message: "x", Resume: src, Fork: true, Cwd: cwd})
	var te *engine.TurnError
	if !errors.As(err, &te) || te.Kind != event.ErrorStart || !strings.Contains(te.Message, "does not offer session/fork") {
		t.Errorf("fork on an agent that does not offer it: %v %v", err, types(evs))
	}
	if c := e.Controls(); c.Fork {
		t.Errorf("Controls after the refused fork = %+v", c)
	}
}

// TestBuiltinControls: the built-in entries claim what their pinned
// versions advertise, as recorded from the real agents in
// testdata/NAME.shapes.json (opencode and claude-acp offer session/fork,
// copilot does not); none rewinds.
func TestBuiltinControls(t *testing.T) {
	for _, c := range acp.Builtin() {
		b, err := os.ReadFile(shapesPath(c.Name))
		if err != nil {
			t.Fatal(err)
		}
		var sh struct {
			Init struct {
				Caps struct {
					Session map[string]any `json:"sessionCapabilities"`
				} `json:"agentCapabilities"`
			} `json:"initialize result"`
		}
		if err := json.Unmarshal(b, &sh); err != nil {
			t.Fatal(err)
		}
		_, want := sh.Init.Caps.Session["fork"]
		e, err := acp.NewEngine(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Controls(); got.Fork != want || got.Rewind {
			t.Errorf("%s: Controls %+v; its recorded initialize answer says fork %v; no rewind", c.Name, got, want)
		}
	}
}
