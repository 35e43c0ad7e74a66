package acp_test

import (
	"strings"
	"testing"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/engine"
)

// TestSwitchBetweenTurns: a model and a permission mode changed between
// turns reach the session on the agent the session keeps (set before the
// next prompt: session/set_config_option, session/set_mode), and again
// on a new agent that loads the session.
func TestSwitchBetweenTurns(t *testing.T) {
	e := newFake(t, nil)
	cwd := t.TempDir()
	settings := func(req engine.Request) (string, string) {
		t.Helper()
		req.SessionKey, req.Message, req.Cwd = "sw", "settings", cwd
		evs, err := run(t, e, req)
		if err != nil {
			t.Fatalf("%+v: %v %v", req, err, types(evs))
		}
		return evs[0].Init.ConversationID, chat(evs)
	}
	sid, got := settings(engine.Request{Model: "fake-a"})
	if got != "mode=default model=fake-a" {
		t.Fatalf("first turn: %q", got)
	}
	pid := e.Pid("sw")
	if _, got = settings(engine.Request{Resume: sid, Model: "fake-b", PermissionMode: "plan"}); got != "mode=plan model=fake-b" {
		t.Errorf("after the switch on the kept agent: %q, want mode=plan model=fake-b", got)
	}
	if _, got = settings(engine.Request{Resume: sid, Model: "fake-a", PermissionMode: "default"}); got != "mode=default model=fake-a" {
		t.Errorf("after switching back: %q", got)
	}
	if e.Pid("sw") != pid {
		t.Error("the switch restarted the agent")
	}
	// An unknown model is not sent (the agent's is kept, a warning logged).
	if _, got = settings(engine.Request{Resume: sid, Model: "no-such-model"}); got != "mode=default model=fake-a" {
		t.Errorf("an unknown model: %q", got)
	}
	e.Close("sw")
	if _, got = settings(engine.Request{Resume: sid, Model: "fake-b", PermissionMode: "plan"}); got != "mode=plan model=fake-b" {
		t.Errorf("on a new agent that loaded the session: %q", got)
	}
}

// TestPersonaSwitchBetweenTurns: a persona switched between turns
// (Request.PromptChanged) reaches the kept session as a preamble of the
// next prompt that replaces the earlier instructions; an unchanged
// persona is not sent again.
func TestPersonaSwitchBetweenTurns(t *testing.T) {
	e := newFake(t, nil)
	cwd := t.TempDir()
	evs, err := run(t, e, engine.Request{SessionKey: "p", Message: "hello", Cwd: cwd, SystemPrompt: "PERSONA-A"})
	if err != nil {
		t.Fatal(err)
	}
	sid := evs[0].Init.ConversationID
	if got := chat(evs); !strings.Contains(got, acp.Preamble("PERSONA-A")) {
		t.Fatalf("first prompt: %q", got)
	}
	evs, err = run(t, e, engine.Request{SessionKey: "p", Message: "again", Cwd: cwd, SystemPrompt: "PERSONA-A", Resume: sid})
	if err != nil {
		t.Fatal(err)
	}
	if got := chat(evs); got != "echo: again" {
		t.Errorf("an unchanged persona was sent again: %q", got)
	}
	evs, err = run(t, e, engine.Request{SessionKey: "p", Message: "switched", Cwd: cwd, SystemPrompt: "PERSONA-B", Resume: sid, PromptChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := chat(evs), "echo: "+acp.SwitchPreamble("PERSONA-B")+" | switched"; got != want {
		t.Errorf("after the switch: %q, want %q", got, want)
	}
}
