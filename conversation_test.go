package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/acp/acptest"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// Conversation control (switch, fork, rewind) on the real Claude Code CLI
// and the native loop, both against the fake Messages API: what a test
// asserts is what the next request to the fake carries.

// convEngines are the engines these tests run on.
var convEngines = []string{engine.ClaudeCode, engine.Anthropic}

// lastRequest is the newest main request the fake got (not a side call
// such as a title or count_tokens).
func lastRequest(t *testing.T, e *testEnv) *claudetest.Request {
	t.Helper()
	reqs := e.api.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if len(reqs[i].Messages) > 0 && strings.HasSuffix(reqs[i].Path, "/v1/messages") {
			return reqs[i]
		}
	}
	t.Fatal("no request reached the fake")
	return nil
}

// userMessages returns the turn's user:message seqs of a session.
func (e *testEnv) userSeqs(id string) []int64 {
	e.t.Helper()
	var out []int64
	for _, ev := range e.follow(e.h, id, 0) {
		if ev.Type == event.TypeUserMessage {
			out = append(out, ev.Seq)
		}
	}
	return out
}

// ask runs a turn that must complete.
func (e *testEnv) ask(id, message string) []stored {
	e.t.Helper()
	evs, tr := e.turn(id, message)
	if err := tr.Err(); err != nil {
		e.t.Fatalf("turn %q: %v", message, err)
	}
	return evs
}

func TestSwitchModelPersonaModeBetweenTurns(t *testing.T) {
	for _, name := range convEngines {
		t.Run(name, func(t *testing.T) {
			e := newTestEnv(t, nil)
			writeFile(t, filepath.Join(e.root, "agents", "AGENT_PLANNER.md"), "---\ndescription: plans\n---\nYou are the PLANNER. Codeword: FIRST-PERSONA.\n")
			writeFile(t, filepath.Join(e.root, "agents", "AGENT_BUILDER.md"), "---\ndescription: builds\n---\nYou are the BUILDER. Codeword: SECOND-PERSONA.\n")
			s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Persona: "PLANNER", Mode: "direct", Engine: name, Model: "claude-sonnet-4-5"})
			if err != nil {
				t.Fatal(err)
			}
			e.api.Script(claudetest.TextReply("a1"), claudetest.TextReply("a2"), claudetest.TextReply("a3"))
			e.ask(s.ID, "first")
			if r := lastRequest(t, e); r.Model != "claude-sonnet-4-5" || !strings.Contains(r.SystemText(), "FIRST-PERSONA") {
				t.Fatalf("first request: model %q, persona in system %v", r.Model, strings.Contains(r.SystemText(), "FIRST-PERSONA"))
			}

			persona, model, mode, effort := "BUILDER", "claude-haiku-4-5", "acceptEdits", "low"
			got, err := e.h.UpdateSession(s.ID, SessionUpdate{Persona: &persona, Model: &model, PermissionMode: &mode, Effort: &effort})
			if err != nil {
				t.Fatal(err)
			}
			if got.Persona != persona || got.Model != model || got.PermissionMode != mode || got.Effort != effort {
				t.Fatalf("updated session %+v", got)
			}
			if m := e.h.PermissionMode(got); m != mode {
				t.Errorf("PermissionMode = %q, want %q", m, mode)
			}
			evs := e.ask(s.ID, "second")
			r := lastRequest(t, e)
			if r.Model != model {
				t.Errorf("second request's model %q, want %q", r.Model, model)
			}
			if init := ofType(evs, event.TypeSessionInit)[0].Init; init.PermissionMode != mode {
				t.Errorf("second turn's permission mode %q, want %q", init.PermissionMode, mode)
			}
			// The new persona reaches the model: in the system prompt
			// (native), or — as the CLI keeps a resumed conversation's
			// first one — in the turn's message (Claude Code).
			inSystem, inMessage := strings.Contains(r.SystemText(), "SECOND-PERSONA"), strings.Contains(r.LastUserText(), "SECOND-PERSONA")
			switch name {
			case engine.Anthropic:
				if !inSystem || strings.Contains(r.SystemText(), "FIRST-PERSONA") {
					t.Errorf("native: the new persona is not the system prompt: %q", r.SystemText())
				}
			case engine.ClaudeCode:
				if !inMessage || !strings.Contains(r.LastUserText(), "second") {
					t.Errorf("claude-code: the new persona is not in the turn's message: %q", r.LastUserText())
				}
			}
			if !strings.Contains(requestHistory(r), "first") || !strings.Contains(requestHistory(r), "a1") {
				t.Errorf("the switch lost the conversation: %q", requestHistory(r))
			}
			// Said once: the third turn's message is the user's alone.
			e.ask(s.ID, "third")
			if r := lastRequest(t, e); strings.Contains(r.LastUserText(), "SECOND-PERSONA") || r.Model != model {
				t.Errorf("third request: message %q, model %q", r.LastUserText(), r.Model)
			}
			plan, err := e.h.ReplayPlan(got)
			if err != nil || plan.Request.Effort != effort {
				t.Errorf("planned effort %q (%v), want %q", plan.Request.Effort, err, effort)
			}
		})
	}
}

func TestForkAtTheEndAndInTheMiddleThenDiverge(t *testing.T) {
	for _, name := range convEngines {
		t.Run(name, func(t *testing.T) {
			e := newTestEnv(t, nil)
			s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: name})
			if err != nil {
				t.Fatal(err)
			}
			e.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
				return claudetest.TextReply("answer to " + lastWord(r.LastUserText()))
			})
			e.ask(s.ID, "say ALPHA")
			e.ask(s.ID, "say BRAVO")
			e.ask(s.ID, "say CHARLIE")
			seqs := e.userSeqs(s.ID)
			if len(seqs) != 3 {
				t.Fatalf("user messages at %v", seqs)
			}

			whole, err := e.h.Fork(context.Background(), s.ID, ForkOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Any event of the second turn names it: its session:complete.
			var atSeq int64
			for _, ev := range e.follow(e.h, s.ID, seqs[1]) {
				if ev.Type == event.TypeSessionComplete {
					atSeq = ev.Seq
					break
				}
			}
			middle, err := e.h.Fork(context.Background(), s.ID, ForkOptions{AtSeq: atSeq})
			if err != nil {
				t.Fatal(err)
			}
			if middle.Engine != name || middle.ProjectRoot != s.ProjectRoot || middle.ID == s.ID {
				t.Fatalf("fork %+v", middle)
			}
			// The fork's log: the source's first two turns, then session:forked.
			log := e.follow(e.h, middle.ID, 0)
			last := log[len(log)-1]
			if last.Type != event.TypeSessionForked || last.Forked.From != s.ID || last.Forked.AtSeq != atSeq {
				t.Fatalf("fork's last event %s", last.Raw)
			}
			if n := len(ofType(log, event.TypeUserMessage)); n != 2 {
				t.Errorf("fork holds %d turns, want 2", n)
			}
			for _, ev := range log {
				if ev.SessionID != middle.ID {
					t.Fatalf("copied event keeps the source's id: %s", ev.Raw)
				}
			}
			turns, err := e.h.Turns(middle.ID)
			if err != nil || len(turns) != 2 || turns[1].Text != "say BRAVO" || !turns[1].Checkpoint {
				t.Fatalf("fork's turns %+v %v", turns, err)
			}

			e.ask(middle.ID, "say DELTA")
			h := requestHistory(lastRequest(t, e))
			if !strings.Contains(h, "ALPHA") || !strings.Contains(h, "answer to BRAVO") || strings.Contains(h, "CHARLIE") {
				t.Errorf("middle fork's request: %q", h)
			}
			e.ask(whole.ID, "say ECHO")
			h = requestHistory(lastRequest(t, e))
			if !strings.Contains(h, "answer to CHARLIE") || strings.Contains(h, "DELTA") {
				t.Errorf("whole fork's request: %q", h)
			}
			e.ask(s.ID, "say FOXTROT")
			h = requestHistory(lastRequest(t, e))
			if !strings.Contains(h, "answer to CHARLIE") || strings.Contains(h, "DELTA") || strings.Contains(h, "ECHO") {
				t.Errorf("original's request after the forks: %q", h)
			}
			e.ask(middle.ID, "say GOLF")
			h = requestHistory(lastRequest(t, e))
			if !strings.Contains(h, "answer to DELTA") || strings.Contains(h, "CHARLIE") || strings.Contains(h, "FOXTROT") {
				t.Errorf("middle fork's second request: %q", h)
			}
		})
	}
}

// A fork is pinned when it is made: a turn the source runs between the
// fork and the fork's first turn is not in the fork (the fork's model
// request lacks it), and the fork's turn is not in the source.
func TestForkIsPinnedWhenMade(t *testing.T) {
	for _, name := range convEngines {
		t.Run(name, func(t *testing.T) {
			e := newTestEnv(t, nil)
			s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: name})
			if err != nil {
				t.Fatal(err)
			}
			e.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
				return claudetest.TextReply("answer to " + lastWord(r.LastUserText()))
			})
			e.ask(s.ID, "say ALPHA")
			e.ask(s.ID, "say BRAVO")
			fork, err := e.h.Fork(context.Background(), s.ID, ForkOptions{})
			if err != nil {
				t.Fatal(err)
			}
			e.ask(s.ID, "say CHARLIE") // the source, after the fork was made
			e.ask(fork.ID, "say DELTA")
			h := requestHistory(lastRequest(t, e))
			if !strings.Contains(h, "answer to ALPHA") || !strings.Contains(h, "answer to BRAVO") || strings.Contains(h, "CHARLIE") {
				t.Errorf("the fork's first request (the source's later turn must not be in it): %q", tail(h))
			}
			e.ask(s.ID, "say ECHO")
			h = requestHistory(lastRequest(t, e))
			if !strings.Contains(h, "answer to CHARLIE") || strings.Contains(h, "DELTA") {
				t.Errorf("the source's request after the fork's turn: %q", tail(h))
			}
			e.ask(fork.ID, "say FOXTROT")
			h = requestHistory(lastRequest(t, e))
			if !strings.Contains(h, "answer to DELTA") || strings.Contains(h, "CHARLIE") || strings.Contains(h, "ECHO") {
				t.Errorf("the fork's second request: %q", tail(h))
			}
		})
	}
}

// tail is the end of a long request history, for a failure's message.
func tail(h string) string {
	if r := []rune(h); len(r) > 400 {
		return "…" + string(r[len(r)-400:])
	}
	return h
}

func lastWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

func TestRewindTheConversation(t *testing.T) {
	for _, name := range convEngines {
		t.Run(name, func(t *testing.T) {
			e := newTestEnv(t, nil)
			s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: name})
			if err != nil {
				t.Fatal(err)
			}
			e.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
				return claudetest.TextReply("answer to " + lastWord(r.LastUserText()))
			})
			e.ask(s.ID, "say ALPHA")
			e.ask(s.ID, "say BRAVO")
			e.ask(s.ID, "say CHARLIE")
			seqs := e.userSeqs(s.ID)

			res, err := e.h.Rewind(context.Background(), s.ID, RewindOptions{ToTurn: seqs[1], Conversation: true})
			if err != nil || !res.Conversation || len(res.Files) != 0 {
				t.Fatalf("rewind: %+v %v", res, err)
			}
			log := e.follow(e.h, s.ID, 0)
			rw := log[len(log)-1]
			if rw.Type != event.TypeSessionRewound || rw.Rewound.ToTurn != seqs[1] || !rw.Rewound.Conversation {
				t.Fatalf("last event %s", rw.Raw)
			}
			turns, _ := e.h.Turns(s.ID)
			if len(turns) != 3 || turns[0].Rewound || !turns[1].Rewound || !turns[2].Rewound {
				t.Errorf("turns after the rewind %+v", turns)
			}
			e.ask(s.ID, "say DELTA")
			h := requestHistory(lastRequest(t, e))
			if !strings.Contains(h, "answer to ALPHA") || strings.Contains(h, "BRAVO") || strings.Contains(h, "CHARLIE") {
				t.Errorf("request after the rewind: %q", h)
			}
			e.ask(s.ID, "say ECHO")
			h = requestHistory(lastRequest(t, e))
			if !strings.Contains(h, "answer to DELTA") || strings.Contains(h, "BRAVO") {
				t.Errorf("second request after the rewind: %q", h)
			}
			// Back to the first turn: a fresh conversation.
			if _, err := e.h.Rewind(context.Background(), s.ID, RewindOptions{ToTurn: seqs[0], Conversation: true}); err != nil {
				t.Fatal(err)
			}
			e.ask(s.ID, "say FOXTROT")
			h = requestHistory(lastRequest(t, e))
			if strings.Contains(h, "ALPHA") || strings.Contains(h, "DELTA") || !strings.Contains(h, "FOXTROT") {
				t.Errorf("request after rewinding to the first turn: %q", h)
			}
		})
	}
}

// ctlEngine is a scriptEngine with conversation controls: each turn
// reports its conversation ("c<n>", a new one unless it resumed without
// forking) and a checkpoint ("k<n>"); it records the requests.
type ctlEngine struct {
	scriptEngine
	ctl engine.Controls
	n   int
}

func (c *ctlEngine) Name() string              { return "ctl" }
func (c *ctlEngine) Controls() engine.Controls { return c.ctl }
func (c *ctlEngine) StartTurn(_ context.Context, req engine.Request) (engine.Turn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, req)
	c.n++
	conv := req.Resume
	if conv == "" || req.Fork {
		conv = "c" + strconv.Itoa(c.n)
	}
	k := req.SessionKey
	return &sliceTurn{evs: []event.Event{
		{Type: event.TypeSessionInit, SessionID: k, Init: &event.SessionInit{Engine: "ctl", ConversationID: conv}},
		{Type: event.TypeSessionComplete, SessionID: k, Complete: &event.SessionComplete{Checkpoint: "k" + strconv.Itoa(c.n)}},
		{Type: event.TypeProcessExit, SessionID: k, Exit: &event.ProcessExit{}},
	}, i: -1}, nil
}

func (c *ctlEngine) last() engine.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reqs[len(c.reqs)-1]
}

// The cut a fork or rewind leaves for the next turn, turn by turn: the
// conversation and checkpoint of the turn before, always as a copy, and
// after a rewind the turns it undid no longer count.
func TestRewindAndForkPlanTheCut(t *testing.T) {
	ce := &ctlEngine{ctl: engine.Controls{Fork: true, Rewind: true}}
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{ce} })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "ctl"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"one", "two", "three"} { // c1 k1, c1 k2, c1 k3
		e.ask(s.ID, m)
	}
	seqs := e.userSeqs(s.ID)
	ctx := context.Background()
	if _, err := e.h.Rewind(ctx, s.ID, RewindOptions{ToTurn: seqs[2], Conversation: true}); err != nil {
		t.Fatal(err)
	}
	e.ask(s.ID, "four") // resumes c1 at k2 as a copy: c4 k4
	if r := ce.last(); r.Resume != "c1" || r.ResumeAt != "k2" || !r.Fork {
		t.Fatalf("after rewinding to the third turn: %+v", r)
	}
	e.ask(s.ID, "five") // c4, plain
	if r := ce.last(); r.Resume != "c4" || r.ResumeAt != "" || r.Fork {
		t.Fatalf("the turn after: %+v", r)
	}
	seqs = e.userSeqs(s.ID) // one two three four five
	// Rewind to "four": the turn before it in its conversation is "two"
	// (three was undone), not "three".
	if _, err := e.h.Rewind(ctx, s.ID, RewindOptions{ToTurn: seqs[3], Conversation: true}); err != nil {
		t.Fatal(err)
	}
	e.ask(s.ID, "six")
	if r := ce.last(); r.Resume != "c1" || r.ResumeAt != "k2" || !r.Fork {
		t.Fatalf("after rewinding to four: %+v", r)
	}
	// A fork in the middle (at "five"'s turn) cuts at five's checkpoint.
	f, err := e.h.Fork(ctx, s.ID, ForkOptions{AtSeq: seqs[4]})
	if err != nil {
		t.Fatal(err)
	}
	e.ask(f.ID, "seven")
	if r := ce.last(); r.Resume != "c4" || r.ResumeAt != "k5" || !r.Fork || r.SessionKey != f.ID {
		t.Fatalf("fork at five: %+v", r)
	}
	// A fork of the whole: the source's conversation, forked, pinned at
	// its last turn's checkpoint (six's) when the fork is made.
	g, err := e.h.Fork(ctx, s.ID, ForkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.ask(g.ID, "eight")
	if r := ce.last(); r.Resume != "c6" || r.ResumeAt != "k6" || !r.Fork {
		t.Fatalf("fork of the whole: %+v", r)
	}
	// The source still continues its own.
	e.ask(s.ID, "nine")
	if r := ce.last(); r.Resume != "c6" || r.Fork {
		t.Fatalf("source after the forks: %+v", r)
	}
}

func TestConversationControlErrors(t *testing.T) {
	se := &scriptEngine{} // no controls
	slow := &gateEngine{release: make(chan struct{})}
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{se, slow} })
	ctx := context.Background()
	unknown := "0b8f3a2e-1c4d-4e5f-8a9b-0c1d2e3f4a5b"
	if _, err := e.h.Fork(ctx, unknown, ForkOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("fork of an unknown session: %v", err)
	}
	if _, err := e.h.Rewind(ctx, unknown, RewindOptions{ToTurn: 1, Conversation: true}); !errors.Is(err, ErrNotFound) {
		t.Errorf("rewind of an unknown session: %v", err)
	}
	if _, err := e.h.Turns(unknown); !errors.Is(err, ErrNotFound) {
		t.Errorf("turns of an unknown session: %v", err)
	}
	if _, err := e.h.UpdateSession(unknown, SessionUpdate{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("update of an unknown session: %v", err)
	}
	if _, err := e.h.Fork(ctx, "../x", ForkOptions{}); !errors.Is(err, ErrInvalidID) {
		t.Errorf("fork of a malformed id: %v", err)
	}

	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "script"})
	if err != nil {
		t.Fatal(err)
	}
	e.ask(s.ID, "one")
	e.ask(s.ID, "two")
	seqs := e.userSeqs(s.ID)
	before := e.follow(e.h, s.ID, 0)
	if _, err := e.h.Fork(ctx, s.ID, ForkOptions{AtSeq: 999}); !errors.Is(err, ErrSeqNotFound) {
		t.Errorf("fork at an unknown seq: %v", err)
	}
	if _, err := e.h.Rewind(ctx, s.ID, RewindOptions{ToTurn: seqs[0] + 1, Conversation: true}); !errors.Is(err, ErrSeqNotFound) {
		t.Errorf("rewind to a seq that is not a user message: %v", err)
	}
	if _, err := e.h.Fork(ctx, s.ID, ForkOptions{}); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "script") {
		t.Errorf("fork on an engine without controls: %v", err)
	}
	if _, err := e.h.Rewind(ctx, s.ID, RewindOptions{ToTurn: seqs[1], Conversation: true}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("rewind on an engine without controls: %v", err)
	}
	if _, err := e.h.Rewind(ctx, s.ID, RewindOptions{ToTurn: seqs[1] + 1, Files: true}); !errors.Is(err, ErrSeqNotFound) {
		t.Errorf("rewind of files to a seq that is not a turn: %v", err)
	}
	bad := "max"
	if _, err := e.h.UpdateSession(s.ID, SessionUpdate{Effort: &bad}); !errors.Is(err, ErrInvalidEffort) {
		t.Errorf("effort max: %v", err)
	}
	if _, err := e.h.UpdateSession(s.ID, SessionUpdate{PermissionMode: &bad}); !errors.Is(err, ErrInvalidPermissionMode) {
		t.Errorf("mode max: %v", err)
	}
	bypass := "bypassPermissions"
	if _, err := e.h.UpdateSession(s.ID, SessionUpdate{PermissionMode: &bypass}); !errors.Is(err, ErrBypassRefused) {
		t.Errorf("bypass without the server's consent: %v", err)
	}
	nobody := "NOBODY"
	if _, err := e.h.UpdateSession(s.ID, SessionUpdate{Persona: &nobody}); !errors.Is(err, ErrPersonaNotFound) {
		t.Errorf("unknown persona: %v", err)
	}
	if after := e.follow(e.h, s.ID, 0); len(after) != len(before) {
		t.Errorf("refused controls wrote %d events", len(after)-len(before))
	}
	if got, _ := e.h.Session(s.ID); got.Pending != nil || got.Effort != "" || got.PermissionMode != "" || got.Persona != "" {
		t.Errorf("refused controls changed the session: %+v", got)
	}
	// Back to the first turn needs no control: a fresh conversation.
	if _, err := e.h.Rewind(ctx, s.ID, RewindOptions{ToTurn: seqs[0], Conversation: true}); err != nil {
		t.Errorf("rewind to the first turn: %v", err)
	}
	e.ask(s.ID, "three")
	se.mu.Lock()
	if r := se.reqs[len(se.reqs)-1]; r.Resume != "" || r.Fork || r.ResumeAt != "" {
		t.Errorf("the turn after a rewind to the first: %+v", r)
	}
	se.mu.Unlock()

	// During a running turn: ErrBusy; an update waits for the next turn.
	b, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "gate"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := e.h.StartTurn(ctx, TurnRequest{SessionID: b.ID, Message: "hold"})
	if err != nil {
		t.Fatal(err)
	}
	bturns, err := e.h.Turns(b.ID)
	if err != nil || len(bturns) != 1 {
		t.Fatalf("turns of a running session: %+v %v", bturns, err)
	}
	bseqs := []int64{bturns[0].Seq}
	if _, err := e.h.Fork(ctx, b.ID, ForkOptions{}); !errors.Is(err, ErrBusy) {
		t.Errorf("fork during a turn: %v", err)
	}
	if _, err := e.h.Rewind(ctx, b.ID, RewindOptions{ToTurn: bseqs[0], Conversation: true}); !errors.Is(err, ErrBusy) {
		t.Errorf("rewind during a turn: %v", err)
	}
	model := "m2"
	if got, err := e.h.UpdateSession(b.ID, SessionUpdate{Model: &model}); err != nil || got.Model != model {
		t.Errorf("update during a turn: %+v %v", got, err)
	}
	close(slow.release)
	<-tr.Done()
	if got, _ := e.h.Session(b.ID); got.Model != model {
		t.Errorf("the turn's save lost the update: model %q", got.Model)
	}

	ctl := map[string]engine.Controls{}
	for _, st := range e.h.Engines(ctx) {
		ctl[st.Name] = st.Controls
	}
	if !ctl[engine.ClaudeCode].Fork || !ctl[engine.ClaudeCode].Rewind || !ctl[engine.Anthropic].Fork || !ctl[engine.Anthropic].Rewind || ctl["script"].Fork || ctl["script"].Rewind {
		t.Errorf("engine controls %+v", ctl)
	}
}

// gateEngine's turns wait for release.
type gateEngine struct {
	release chan struct{}
}

func (g *gateEngine) Name() string { return "gate" }
func (g *gateEngine) Check(context.Context) engine.Status {
	return engine.Status{Kind: "gate", Available: true}
}
func (g *gateEngine) Shutdown(context.Context) error { return nil }
func (g *gateEngine) StartTurn(_ context.Context, req engine.Request) (engine.Turn, error) {
	return &gateTurn{g: g, key: req.SessionKey}, nil
}

type gateTurn struct {
	g   *gateEngine
	key string
	i   int
	ev  event.Event
}

func (t *gateTurn) Next() bool {
	switch t.i++; t.i {
	case 1:
		t.ev = event.Event{Type: event.TypeSessionInit, SessionID: t.key, Init: &event.SessionInit{Engine: "gate", ConversationID: "g1"}}
	case 2:
		select {
		case <-t.g.release:
		case <-time.After(time.Minute):
		}
		t.ev = event.Event{Type: event.TypeSessionComplete, SessionID: t.key, Complete: &event.SessionComplete{}}
	case 3:
		t.ev = event.Event{Type: event.TypeProcessExit, SessionID: t.key, Exit: &event.ProcessExit{}}
	default:
		return false
	}
	return true
}
func (t *gateTurn) Event() event.Event { return t.ev }
func (t *gateTurn) Err() error         { return nil }
func (t *gateTurn) Interrupt() error   { return nil }
func (t *gateTurn) Kill() error        { return nil }
func (t *gateTurn) Close() error       { return nil }

// A rewind of files and conversation together: the project's files are as
// before the turn, the log says which, and the next request lacks it.
func TestRewindFilesAndConversation(t *testing.T) {
	e := newTestEnv(t, nil)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: engine.Anthropic})
	if err != nil {
		t.Fatal(err)
	}
	e.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		return claudetest.TextReply("answer to " + lastWord(r.LastUserText()))
	})
	kept := filepath.Join(e.root, "kept.txt")
	writeFile(t, kept, "before\n")
	e.ask(s.ID, "say ALPHA")
	e.ask(s.ID, "say BRAVO") // what it "did": the edits below
	writeFile(t, kept, "after\n")
	writeFile(t, filepath.Join(e.root, "new.txt"), "made by the turn\n")
	seqs := e.userSeqs(s.ID)
	turns, err := e.h.Turns(s.ID)
	if err != nil || len(turns) != 2 || !turns[1].Files {
		t.Fatalf("turns %+v %v", turns, err)
	}
	res, err := e.h.Rewind(context.Background(), s.ID, RewindOptions{ToTurn: seqs[1], Files: true, Conversation: true})
	if err != nil || !res.Conversation {
		t.Fatalf("rewind: %+v %v", res, err)
	}
	paths := map[string]string{}
	for _, c := range res.Files {
		paths[c.Path] = c.Op
	}
	if len(paths) != 2 || paths["kept.txt"] == "" || paths["new.txt"] == "" {
		t.Errorf("restored %+v", res.Files)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "before\n" {
		t.Errorf("kept.txt = %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(e.root, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new.txt still there: %v", err)
	}
	log := e.follow(e.h, s.ID, 0)
	if rw := log[len(log)-1]; rw.Type != event.TypeSessionRewound || len(rw.Rewound.Files) != 2 || !rw.Rewound.Conversation {
		t.Errorf("last event %s", rw.Raw)
	}
	e.ask(s.ID, "say CHARLIE")
	if h := requestHistory(lastRequest(t, e)); !strings.Contains(h, "answer to ALPHA") || strings.Contains(h, "BRAVO") {
		t.Errorf("request after the rewind %q", h)
	}
}

// An ACP agent that does not offer session/fork (the fake without
// ACPTEST_FORK): Engines says so, a fork is refused with ErrUnsupported
// and changes nothing, and a rewind past the first turn too (ACP cannot
// cut a session).
func TestACPWithoutForkIsRefused(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fake, err := acp.NewEngine(acp.Config{
		Name: "fakeacp", Command: []string{"fakeagent"}, Binary: bin,
		Env:       []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()},
		ExtraEnv:  []string{acptest.AgentEnv, "ACPTEST_STATE=" + t.TempDir()},
		StopGrace: 500 * time.Millisecond, InterruptGrace: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{fake} })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "fakeacp"})
	if err != nil {
		t.Fatal(err)
	}
	e.ask(s.ID, "first words")
	e.ask(s.ID, "second words")
	for _, st := range e.h.Engines(context.Background()) {
		if st.Name == "fakeacp" && (st.Controls.Fork || st.Controls.Rewind) {
			t.Errorf("controls %+v, want none", st.Controls)
		}
	}
	before, _ := e.h.ListSessions(e.root)
	if _, err := e.h.Fork(context.Background(), s.ID, ForkOptions{}); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "fakeacp") {
		t.Errorf("fork: %v", err)
	}
	seqs := e.userSeqs(s.ID)
	if _, err := e.h.Rewind(context.Background(), s.ID, RewindOptions{ToTurn: seqs[1], Conversation: true}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("rewind: %v", err)
	}
	if after, _ := e.h.ListSessions(e.root); len(after) != len(before) {
		t.Errorf("a refused fork left a session: %d → %d", len(before), len(after))
	}
	if got, _ := e.h.Session(s.ID); got.Pending != nil {
		t.Errorf("a refused rewind left a cut: %+v", got.Pending)
	}
}

// A rewind drops the session's warm agent, and the turn after it (a cut)
// never runs on one: its request lacks the undone turn.
func TestRewindDropsTheWarmAgent(t *testing.T) {
	e, _ := warmEnv(t, 1, time.Minute)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	e.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		return claudetest.TextReply("answer to " + lastWord(r.LastUserText()))
	})
	e.ask(s.ID, "say ALPHA")
	e.ask(s.ID, "say BRAVO")
	pid := e.waitWarm(s.ID)
	seqs := e.userSeqs(s.ID)
	if _, err := e.h.Rewind(context.Background(), s.ID, RewindOptions{ToTurn: seqs[1], Conversation: true}); err != nil {
		t.Fatal(err)
	}
	if p := e.h.WarmPids()[s.ID]; p != 0 {
		t.Errorf("warm agent %d still waits after the rewind", p)
	}
	waitNoProcess(t, pid)
	e.h.Prewarm(s.ID) // refused while the cut waits
	e.ask(s.ID, "say CHARLIE")
	if h := requestHistory(lastRequest(t, e)); !strings.Contains(h, "answer to ALPHA") || strings.Contains(h, "BRAVO") {
		t.Errorf("request after the rewind %q", h)
	}
}

// A cut whose point is gone (here: the native history file emptied) is
// taken as a lost conversation: the turn says so, runs in a fresh one,
// and the session is not left with a cut no turn can take.
func TestCutWhosePointIsGone(t *testing.T) {
	e := newTestEnv(t, nil)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: engine.Anthropic})
	if err != nil {
		t.Fatal(err)
	}
	e.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		return claudetest.TextReply("answer to " + lastWord(r.LastUserText()))
	})
	e.ask(s.ID, "say ALPHA")
	e.ask(s.ID, "say BRAVO")
	seqs := e.userSeqs(s.ID)
	if _, err := e.h.Rewind(context.Background(), s.ID, RewindOptions{ToTurn: seqs[1], Conversation: true}); err != nil {
		t.Fatal(err)
	}
	got, _ := e.h.Session(s.ID)
	if got.Pending == nil || got.Pending.ResumeAt == "" {
		t.Fatalf("pending %+v", got.Pending)
	}
	writeFile(t, filepath.Join(session.StateDir(e.root, s.ID), "native-"+got.Pending.Resume+".json"), "[]")
	evs := e.ask(s.ID, "say CHARLIE")
	if errs := ofType(evs, event.TypeSessionError); len(errs) != 1 || errs[0].Error.Kind != event.ErrorResumeNotFound {
		t.Errorf("session:error %+v", errs)
	}
	if h := requestHistory(lastRequest(t, e)); h != "say CHARLIE" {
		t.Errorf("request %q, want a fresh conversation", h)
	}
	if got, _ := e.h.Session(s.ID); got.Pending != nil {
		t.Errorf("the cut is still pending: %+v", got.Pending)
	}
}
