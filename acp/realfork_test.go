package acp_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
)

// TestRealAgentFork runs session/fork on the pinned real agents against
// the fake Messages API: where the agent advertises it (opencode,
// claude-acp) a fork continues a copy of the conversation, and the fork
// and its source then diverge (each next model request carries its own
// history only); copilot does not advertise it and a fork is refused.
func TestRealAgentFork(t *testing.T) {
	for _, spec := range realAgents {
		t.Run(spec.name, func(t *testing.T) {
			t.Parallel()
			realFork(t, spec)
		})
	}
}

// messageTexts is every text block of a model request's messages.
func messageTexts(r *claudetest.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, c := range m.Content {
			if c.Type == "text" {
				b.WriteString(c.Text)
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

func realFork(t *testing.T, spec agentSpec) {
	cfg, _ := acp.BuiltinConfig(spec.name)
	fake, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	fake.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		if len(r.Tools) == 0 {
			return claudetest.TextReply("A title") // side queries (titles)
		}
		return claudetest.TextReply("Noted.")
	})
	home, cwd := t.TempDir(), t.TempDir()
	e := realEngine(t, spec, cfg, fake, home)
	defer shutdownReal(t, e)

	// turn runs one turn and returns its ACP session and the text of
	// the last model request it made (the conversation the agent sent).
	turn := func(key, msg, resume string, fork bool) (string, string) {
		t.Helper()
		before := len(fake.Requests())
		tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: key, Message: msg, Cwd: cwd, Resume: resume, Fork: fork, PermissionMode: "default"})
		if err != nil {
			t.Fatalf("%s %q: %v", key, msg, err)
		}
		defer tr.Close()
		evs, err := collect(t, tr, 120*time.Second)
		if err != nil {
			t.Fatalf("%s %q: %v (%v)", key, msg, err, types(evs))
		}
		// The turn's own request is the last one that carries its
		// message. An agent may still be sending a request of an earlier
		// turn meanwhile (claude-agent-acp's prompt suggestion after a
		// turn's end, which has that turn's history, not this one's), and
		// its own suggestion request after this turn is not the
		// conversation either.
		reqs := fake.Requests()
		for i := len(reqs) - 1; i >= before; i-- {
			text := messageTexts(reqs[i])
			if len(reqs[i].Tools) > 0 && strings.Contains(text, msg) && !strings.Contains(text, "[SUGGESTION MODE:") {
				return evs[0].Init.ConversationID, text
			}
		}
		t.Fatalf("%s %q: no model request", key, msg)
		return "", ""
	}
	want := func(what, got string, has, not []string) {
		t.Helper()
		for _, w := range has {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the model request lacks %q:\n%s", what, w, got)
			}
		}
		for _, n := range not {
			if strings.Contains(got, n) {
				t.Errorf("%s: the model request has %q:\n%s", what, n, got)
			}
		}
	}

	src, _ := turn("src", "remember alpha-word", "", false)
	if _, got := turn("src", "remember beta-word", src, false); !strings.Contains(got, "alpha-word") {
		t.Fatalf("the source forgot its first turn:\n%s", got)
	}
	if !e.Controls().Fork {
		if spec.name != acp.Copilot {
			t.Fatalf("%s no longer advertises session/fork (Controls %+v)", spec.name, e.Controls())
		}
		_, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "fork", Message: "x", Cwd: cwd, Resume: src, Fork: true})
		if !errors.Is(err, engine.ErrUnsupported) {
			t.Errorf("fork on %s: %v, want ErrUnsupported", spec.name, err)
		}
		return
	}
	if spec.name == acp.Copilot {
		t.Errorf("copilot now advertises session/fork: update its entry (Builtin) and this test")
	}

	fork, got := turn("fork", "remember gamma-fork", src, true)
	if fork == src || fork == "" {
		t.Fatalf("the fork runs on session %q (source %q)", fork, src)
	}
	want("the fork's first turn", got, []string{"alpha-word", "beta-word", "gamma-fork"}, nil)
	_, got = turn("src", "remember delta-src", src, false)
	want("the source after the fork", got, []string{"alpha-word", "beta-word", "delta-src"}, []string{"gamma-fork"})
	_, got = turn("fork", "remember epsilon-fork", fork, false)
	want("the fork's second turn", got, []string{"alpha-word", "gamma-fork", "epsilon-fork"}, []string{"delta-src"})
}
