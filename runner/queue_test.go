package runner_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/runner"
)

// holdFirst makes the fake model hold its first answer until release is
// called (at the latest at the test's end); the later ones echo.
func holdFirst(t *testing.T, e *env) (reached <-chan struct{}, release func()) {
	first, free := make(chan struct{}), make(chan struct{})
	var once, freeOnce sync.Once
	e.api.SetResponder(func(req *claudetest.Request) claudetest.Reply {
		held := false
		once.Do(func() { held = true })
		if held {
			close(first)
			<-free
		}
		return echo(req)
	})
	release = func() { freeOnce.Do(func() { close(free) }) }
	t.Cleanup(release)
	return first, release
}

// startHeld starts a runner whose first turn ("talk slowly") the model
// holds until release.
func startHeld(t *testing.T, e *env) (*runner.Core, *rec, func()) {
	t.Helper()
	c := e.core(engine.Anthropic, nil)
	r := record(c)
	reached, release := holdFirst(t, e)
	if err := c.Start(context.Background(), "talk slowly"); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, "the first turn", reached)
	return c, r, release
}

func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(60 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func messagesOf(ps []harness.QueuedPrompt) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Message)
	}
	return out
}

// The prompts sent to a runner while its agent works wait in the core's
// queue of its session (Harness.Queue shows them), and survive the
// end of the server: a runner on a restarted Harness, resuming the
// session, runs them in order, once each, and reports them.
func TestCorePromptsWaitInTheCoreQueueAndSurviveARestart(t *testing.T) {
	e := newEnv(t, "")
	state := t.TempDir()
	h1 := harnessIn(t, e.api, e.root, state, "", time.Second)
	c1, err := runner.New(runner.Config{Harness: h1, ProjectRoot: e.root, Engine: engine.Anthropic, StopGrace: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r1 := record(c1)
	e.api.Script(slowReply())
	if err := c1.Start(context.Background(), "talk slowly"); err != nil {
		t.Fatal(err)
	}
	sid := c1.SessionID()
	waitFor(t, "the first turn to stream", func() bool {
		l, err := h1.EventLog(sid)
		if err != nil {
			return false
		}
		recs, _ := l.ReadAfter(0)
		return len(recs) > 6
	})
	for _, p := range []string{"two", "three"} {
		if err := c1.SendPrompt(p); err != nil {
			t.Fatal(err)
		}
	}
	q, err := h1.Queue(sid)
	if err != nil || !slices.Equal(messagesOf(q), []string{"two", "three"}) {
		t.Fatalf("the core queue of the runner's session = %q, %v; want two, three", messagesOf(q), err)
	}
	if n := c1.Pending(); n != 2 {
		t.Errorf("Pending = %d, want the 2 in the core queue", n)
	}
	stop(t, c1)
	if _, _, ends := r1.snapshot(); len(ends) != 1 || ends[0].Prompt != "talk slowly" {
		t.Fatalf("before the restart the turns %+v, want only the first", ends)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	e.api.SetResponder(echo)
	before := len(e.api.Requests())
	h2 := harnessIn(t, e.api, e.root, state, "", time.Second)
	if q, err := h2.Queue(sid); err != nil || !slices.Equal(messagesOf(q), []string{"two", "three"}) {
		t.Fatalf("after the restart the queue = %q, %v", messagesOf(q), err)
	}
	c2, err := runner.New(runner.Config{Harness: h2, ProjectRoot: e.root, Engine: engine.Anthropic, ResumeSession: sid})
	if err != nil {
		t.Fatal(err)
	}
	r2 := record(c2)
	if err := c2.Start(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the two queued turns", func() bool { return r2.endCount() == 2 })
	msgs, _, ends := r2.snapshot()
	for i, want := range []string{"two", "three"} {
		if ends[i].Prompt != want || ends[i].Outcome != runner.Completed || ends[i].SessionID != sid {
			t.Errorf("turn %d: %+v, want %q completed in %s", i, ends[i], want, sid)
		}
	}
	// (the interrupted turn's prompt has no answer: the native loop sends
	// it with the next one)
	if len(msgs) != 2 || !strings.HasSuffix(msgs[0].Text(), "two") || msgs[1].Text() != "re: three" {
		t.Errorf("messages %+v", msgs)
	}
	if q, _ := h2.Queue(sid); len(q) != 0 {
		t.Errorf("queue after the turns %q", messagesOf(q))
	}
	if n := len(e.api.Requests()) - before; n != 2 {
		t.Errorf("%d model requests after the restart, want 2: no prompt ran twice", n)
	}
	stop(t, c2)
}

// A Clear between two queued prompts is honoured: the one sent before
// it runs in the old session (with its conversation), the one after it
// in the new session (a fresh conversation); both wait in the core queue
// meanwhile, the clear with them in Pending.
func TestCoreClearBetweenQueuedPrompts(t *testing.T) {
	e := newEnv(t, "")
	c, r, release := startHeld(t, e)
	first := c.SessionID()
	if err := c.SendPrompt("before"); err != nil {
		t.Fatal(err)
	}
	if err := c.Clear(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.SendPrompt("after"); err != nil {
		t.Fatal(err)
	}
	if q, _ := e.h.Queue(first); !slices.Equal(messagesOf(q), []string{"before", "after"}) || c.Pending() != 3 {
		t.Fatalf("core queue %q, pending %d; want before, after and the clear", messagesOf(q), c.Pending())
	}
	release()
	waitFor(t, "the three turns", func() bool { return r.endCount() == 3 })
	_, _, ends := r.snapshot()
	if ends[1].Prompt != "before" || ends[1].SessionID != first {
		t.Errorf("the prompt before the clear: %+v, want it in %s", ends[1], first)
	}
	if ends[2].Prompt != "after" || ends[2].SessionID == first || ends[2].SessionID != c.SessionID() {
		t.Errorf("the prompt after the clear: %+v, want it in the new session %s", ends[2], c.SessionID())
	}
	var beforeReq, afterReq *claudetest.Request
	for _, req := range e.api.Requests() {
		switch req.LastUserText() {
		case "before":
			beforeReq = req
		case "after":
			afterReq = req
		}
	}
	if beforeReq == nil || afterReq == nil {
		t.Fatal("the model was not asked both prompts")
	}
	if len(beforeReq.Messages) < 3 || len(afterReq.Messages) != 1 {
		t.Errorf("before carried %d messages (want the old conversation), after %d (want a fresh one)", len(beforeReq.Messages), len(afterReq.Messages))
	}
	if q, _ := e.h.Queue(first); len(q) != 0 {
		t.Errorf("the old session's queue still holds %q", messagesOf(q))
	}
	stop(t, c)
}

// A prompt another door queues for the runner's session (the console's
// queue: true) runs as a turn of the agent, behind the runner's own, and
// the runner reports it as it reports its own.
func TestCoreReportsPromptsOtherDoorsQueue(t *testing.T) {
	e := newEnv(t, "")
	c, r, release := startHeld(t, e)
	sid := c.SessionID()
	if err := c.SendPrompt("mine"); err != nil {
		t.Fatal(err)
	}
	if tr, err := e.h.StartTurn(context.Background(), harness.TurnRequest{SessionID: sid, Message: "from the console", Queue: true}); !errors.Is(err, harness.ErrQueued) || tr != nil {
		t.Fatalf("StartTurn with Queue on the busy session = %v, %v; want queued", tr, err)
	}
	release()
	waitFor(t, "the three turns", func() bool { return r.endCount() == 3 })
	msgs, _, ends := r.snapshot()
	var got []string
	for _, x := range ends {
		got = append(got, x.Prompt)
	}
	if !slices.Equal(got, []string{"talk slowly", "mine", "from the console"}) {
		t.Errorf("turns %q, want the runner's then the console's", got)
	}
	if last := msgs[len(msgs)-1].Text(); last != "re: from the console" {
		t.Errorf("last message %q", last)
	}
	stop(t, c)
}

// After a crash the queue waits: nothing queued starts until the Keeper
// has started the runner again, and its resume prompt runs first, then
// what was queued, in the same session.
func TestCoreCrashHoldsTheCoreQueueForTheResumePrompt(t *testing.T) {
	e := newEnv(t, "")
	c := e.core(engine.Anthropic, nil)
	k := runner.NewKeeper(runner.KeeperConfig{Runner: c, ResumePrompt: "RESUME"})
	r := recordKeeper(k)
	reached, release := holdFirst(t, e)
	if err := k.Start(context.Background(), "talk slowly"); err != nil {
		t.Fatal(err)
	}
	sid := c.SessionID()
	waitClosed(t, "the first turn", reached)
	if err := k.SendPrompt("queued"); err != nil {
		t.Fatal(err)
	}
	if err := e.h.Kill(sid); err != nil { // killed from outside: a crash
		t.Fatal(err)
	}
	release() // (the fake model answers one request at a time)
	waitFor(t, "the crash and the two turns after it", func() bool { return r.endCount() == 3 })
	_, _, ends := r.snapshot()
	if ends[0].Outcome != runner.Crashed {
		t.Errorf("the killed turn ended %+v, want a crash", ends[0])
	}
	for i, want := range []string{"RESUME", "queued"} {
		if x := ends[i+1]; x.Prompt != want || x.Outcome != runner.Completed || x.SessionID != sid {
			t.Errorf("turn %d after the crash: %+v, want %q completed in %s", i, x, want, sid)
		}
	}
	stop(t, k)
}
