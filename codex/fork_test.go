package codex_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/chirality/harness/codex"
	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// forkTurn runs one text turn and returns its thread id, its checkpoint
// and the texts of the model request it made (the conversation Codex
// sent: the history, then the new message).
func forkTurn(t *testing.T, g *rig, req engine.Request) (thread, checkpoint string, texts []string) {
	t.Helper()
	g.fake.Script(codextest.Reply{Text: "ack " + req.Message})
	before := len(g.fake.Requests())
	r := g.turn(t, req, nil)
	if r.err != nil {
		t.Fatalf("%q: err %v, events %v", req.Message, r.err, r.types())
	}
	reqs := g.fake.Requests()
	if len(reqs) != before+1 {
		t.Fatalf("%q: %d model requests, want 1", req.Message, len(reqs)-before)
	}
	sc := r.find(event.TypeSessionComplete)
	if len(sc) != 1 || sc[0].Complete.Checkpoint == "" {
		t.Fatalf("%q: session:complete %+v has no checkpoint", req.Message, sc)
	}
	return r.events[0].Init.ConversationID, sc[0].Complete.Checkpoint, reqs[len(reqs)-1].Texts()
}

// has reports whether a request's texts hold s (each turn's message is a
// word, the fake's answer "ack " and it).
func has(texts []string, s string) bool { return slices.Contains(texts, s) }

func wantHistory(t *testing.T, what string, texts []string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !has(texts, w) {
			t.Errorf("%s: the model request lacks %q; it has %q", what, w, texts)
		}
	}
	for _, n := range not {
		if has(texts, n) {
			t.Errorf("%s: the model request has %q, which it must not; it has %q", what, n, texts)
		}
	}
}

// TestRealCodexFork: on the pinned codex against the fake, a fork at the
// end and one in the middle (thread/fork, lastTurnId) continue copies of
// the thread; the copies and the original then diverge (each next model
// request carries its own history only); a rewind (ResumeAt without
// Fork) continues without the cut turns and leaves the original thread
// as it was.
func TestRealCodexFork(t *testing.T) {
	g := newRig(t)
	if c := g.eng.Controls(); !c.Fork || !c.Rewind {
		t.Errorf("Controls %+v, want fork and rewind", c)
	}

	orig, cp1, _ := forkTurn(t, g, engine.Request{SessionKey: "o", Message: "alpha"})
	th, cp2, texts := forkTurn(t, g, engine.Request{SessionKey: "o", Message: "beta", Resume: orig})
	if th != orig || cp2 == cp1 {
		t.Fatalf("second turn: thread %q (want %q), checkpoints %q %q", th, orig, cp1, cp2)
	}
	wantHistory(t, "second turn", texts, []string{"alpha", "ack alpha", "beta"}, nil)

	// Fork at the end: all of the conversation, on a new thread.
	end, _, texts := forkTurn(t, g, engine.Request{SessionKey: "f-end", Message: "gamma-end", Resume: orig, Fork: true})
	if end == orig || end == "" {
		t.Fatalf("fork at the end runs on thread %q (the original is %q)", end, orig)
	}
	wantHistory(t, "fork at the end", texts, []string{"alpha", "ack alpha", "beta", "ack beta", "gamma-end"}, nil)

	// Fork in the middle: up to and including the first turn.
	mid, _, texts := forkTurn(t, g, engine.Request{SessionKey: "f-mid", Message: "gamma-mid", Resume: orig, Fork: true, ResumeAt: cp1})
	if mid == orig || mid == end {
		t.Fatalf("fork in the middle runs on thread %q (original %q, other fork %q)", mid, orig, end)
	}
	wantHistory(t, "fork in the middle", texts, []string{"alpha", "ack alpha", "gamma-mid"}, []string{"beta", "ack beta"})

	// They diverge: the original has neither fork's turn, each fork only its own.
	_, _, texts = forkTurn(t, g, engine.Request{SessionKey: "o", Message: "delta-orig", Resume: orig})
	wantHistory(t, "the original after the forks", texts, []string{"alpha", "beta", "delta-orig"}, []string{"gamma-end", "gamma-mid"})
	_, _, texts = forkTurn(t, g, engine.Request{SessionKey: "f-end", Message: "delta-end", Resume: end})
	wantHistory(t, "the end fork's next turn", texts, []string{"alpha", "beta", "gamma-end", "delta-end"}, []string{"delta-orig", "gamma-mid"})
	_, _, texts = forkTurn(t, g, engine.Request{SessionKey: "f-mid", Message: "delta-mid", Resume: mid})
	wantHistory(t, "the middle fork's next turn", texts, []string{"alpha", "gamma-mid", "delta-mid"}, []string{"beta", "delta-orig", "gamma-end", "delta-end"})

	// Rewind: ResumeAt without Fork continues without the cut turns…
	rew, _, texts := forkTurn(t, g, engine.Request{SessionKey: "o", Message: "epsilon-rewound", Resume: orig, ResumeAt: cp1})
	if rew == orig {
		t.Errorf("the rewound turn ran on the original thread %q: it must never be changed", orig)
	}
	wantHistory(t, "after the rewind", texts, []string{"alpha", "ack alpha", "epsilon-rewound"}, []string{"beta", "ack beta", "delta-orig"})
	// …and the original thread is as it was.
	_, _, texts = forkTurn(t, g, engine.Request{SessionKey: "o", Message: "zeta-orig", Resume: orig})
	wantHistory(t, "the original after the rewind", texts, []string{"alpha", "beta", "delta-orig", "zeta-orig"}, []string{"epsilon-rewound"})

	// A fork keeps its source's turn ids: a checkpoint from before the
	// fork cuts the fork too (the core rewinds a forked session with the
	// checkpoints its copied history carries).
	_, _, texts = forkTurn(t, g, engine.Request{SessionKey: "f-end", Message: "eta-end-rewound", Resume: end, ResumeAt: cp2})
	wantHistory(t, "the end fork rewound to the source's second turn", texts, []string{"alpha", "beta", "ack beta", "eta-end-rewound"}, []string{"gamma-end", "delta-end", "delta-orig"})

	// A checkpoint the thread does not have: the turn fails, nothing runs.
	before := len(g.fake.Requests())
	r := g.turn(t, engine.Request{SessionKey: "o", Message: "never", Resume: orig, ResumeAt: "019a0000-0000-7000-8000-000000000000"}, nil)
	var te *engine.TurnError
	if !errors.As(r.err, &te) || te.Kind != event.ErrorResumeNotFound || !strings.Contains(te.Message, "thread/fork") {
		t.Errorf("unknown checkpoint: err %v, want resume_not_found from thread/fork; %v", r.err, r.types())
	}
	if n := len(g.fake.Requests()); n != before {
		t.Errorf("unknown checkpoint: %d model requests made", n-before)
	}
}

// TestResumeAtWithoutResume: a cut of no conversation is refused before
// a child starts.
func TestResumeAtWithoutResume(t *testing.T) {
	eng := codex.NewEngine(codex.Config{Binary: "/nonexistent/codex"})
	if _, err := eng.StartTurn(t.Context(), engine.Request{SessionKey: "k", Message: "m", ResumeAt: "x"}); err == nil || !strings.Contains(err.Error(), "ResumeAt without Resume") {
		t.Errorf("err %v", err)
	}
}
