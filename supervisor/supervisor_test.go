package supervisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chirality/harness/runner"
	"github.com/chirality/harness/supervisor"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// scripted is an Evaluator answering from a script, recording prompts.
type scripted struct {
	mu      sync.Mutex
	answers []string
	prompts []string
	err     error
}

func (s *scripted) eval(ctx context.Context, prompt string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prompts = append(s.prompts, prompt)
	if s.err != nil {
		return "", s.err
	}
	if len(s.answers) == 0 {
		return "OK", nil
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return a, nil
}

func (s *scripted) push(a ...string) { s.mu.Lock(); s.answers = append(s.answers, a...); s.mu.Unlock() }

func (s *scripted) lastPrompt() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prompts[len(s.prompts)-1]
}

type events struct {
	mu          sync.Mutex
	whispers    []string
	escalations []string
}

func (e *events) get() ([]string, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.whispers...), append([]string(nil), e.escalations...)
}

func start(t *testing.T, cfg supervisor.Config) (*supervisor.Supervisor, *events) {
	t.Helper()
	s := supervisor.New(cfg)
	ev := &events{}
	s.OnWhisper(func(m, a string) { ev.mu.Lock(); ev.whispers = append(ev.whispers, a+" "+m); ev.mu.Unlock() })
	s.OnEscalation(func(m string) { ev.mu.Lock(); ev.escalations = append(ev.escalations, m); ev.mu.Unlock() })
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return s, ev
}

func msg(i int) runner.Message {
	return runner.Message{Type: "assistant", Model: "m", Content: []runner.Content{
		{Type: "thinking", Thinking: fmt.Sprintf("plan %d", i)},
		{Type: "text", Text: fmt.Sprintf("step %d\nsecond line", i)},
		{Type: "tool_use", ID: "t", Name: "Bash", Input: json.RawMessage(fmt.Sprintf(`{"command":"make test-%d"}`, i))},
	}}
}

// observe feeds n turns, numbered from *next, and waits for the
// evaluations they make due.
func observe(t *testing.T, s *supervisor.Supervisor, next *int, n, wantEvals int) {
	t.Helper()
	for range n {
		s.Observe(msg(*next))
		*next++
		// One evaluation at a time, so each verdict is applied in order.
		deadline := time.Now().Add(10 * time.Second)
		for s.Evaluations() < wantEvals && *next%5 == 0 && s.Evaluations() < *next/5 {
			if time.Now().After(deadline) {
				t.Fatalf("evaluation %d did not happen", *next/5)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func TestWindowAndInterval(t *testing.T) {
	ev := &scripted{}
	s, _ := start(t, supervisor.Config{Evaluate: ev.eval})
	next := 0
	observe(t, s, &next, 4, 0)
	if s.Evaluations() != 0 {
		t.Fatal("evaluated before 5 turns")
	}
	observe(t, s, &next, 26, 6)
	if s.Evaluations() != 6 {
		t.Fatalf("%d evaluations after 30 turns, want 6", s.Evaluations())
	}
	p := ev.lastPrompt()
	// The last 20 turns (10…29), compactly, with text, tool input and
	// thinking, and the one-line instruction.
	for _, want := range []string{`<turns count="20">`, "#1 (m)", "text: step 10 second line", `tool_use Bash: {"command":"make test-29"}`, "thinking: plan 29", "exactly one line", "THINK_DEEPER <"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if strings.Contains(p, "step 9 ") || strings.Contains(p, "#21") {
		t.Error("prompt shows turns outside the window")
	}
}

func TestCorrectionsEscalateAndResume(t *testing.T) {
	ev := &scripted{}
	s, got := start(t, supervisor.Config{Evaluate: ev.eval, ResumeAfterClean: 2})
	next := 0
	// CORRECTION → whisper; an OK in between resets the count.
	ev.push("CORRECTION run the failing test alone", "OK", "THINK_DEEPER why does it fail only in CI?", "CORRECTION one", "garbage answer")
	observe(t, s, &next, 25, 5)
	w, e := got.get()
	if len(w) != 3 || w[0] != "CORRECTION run the failing test alone" || w[1] != "THINK_DEEPER why does it fail only in CI?" || len(e) != 0 || s.Paused() {
		t.Fatalf("whispers %q escalations %q paused %v", w, e, s.Paused())
	}
	// The unparseable answer counted as OK: three corrections from here.
	ev.push("CORRECTION a", "CORRECTION b", "CORRECTION c")
	observe(t, s, &next, 15, 8)
	w, e = got.get()
	if len(w) != 6 || len(e) != 1 || !strings.Contains(e[0], "3 corrections") || !strings.Contains(e[0], "c") || !s.Paused() {
		t.Fatalf("after three failed corrections: whispers %q escalations %q paused %v", w, e, s.Paused())
	}
	// Paused: it still evaluates, but neither whispers nor escalates;
	// a correction breaks the run of clean evaluations.
	ev.push("CORRECTION d", "ESCALATION e", "OK", "CORRECTION f", "OK")
	observe(t, s, &next, 25, 13)
	if w2, e2 := got.get(); len(w2) != 6 || len(e2) != 1 || !s.Paused() {
		t.Fatalf("paused supervisor acted: whispers %q escalations %q paused %v", w2, e2, s.Paused())
	}
	// Two clean evaluations in a row resume it.
	ev.push("OK")
	observe(t, s, &next, 5, 14)
	if s.Paused() {
		t.Fatal("not resumed after ResumeAfterClean clean evaluations")
	}
	// An explicit ESCALATION escalates at once; Resume ends the pause.
	ev.push("ESCALATION it is deleting the repository")
	observe(t, s, &next, 5, 15)
	if _, e := got.get(); len(e) != 2 || e[1] != "it is deleting the repository" || !s.Paused() {
		t.Fatalf("explicit escalation: %q", e)
	}
	s.Resume()
	ev.push("CORRECTION g")
	observe(t, s, &next, 5, 16)
	if w, _ := got.get(); len(w) != 7 || s.Paused() {
		t.Fatalf("after a manual Resume: whispers %q", w)
	}
}

func TestEvaluatorErrorsAndStop(t *testing.T) {
	ev := &scripted{err: errors.New("model down")}
	s, got := start(t, supervisor.Config{Evaluate: ev.eval, EvalInterval: 1})
	next := 0
	s.Observe(msg(0))
	waitEval(t, ev, 1)
	if w, e := got.get(); len(w)+len(e) != 0 {
		t.Fatal("an evaluator error acted")
	}
	_ = next
	// A slow evaluation is cancelled by Stop and its verdict dropped.
	block := make(chan struct{})
	s2 := supervisor.New(supervisor.Config{EvalInterval: 1, Evaluate: func(ctx context.Context, p string) (string, error) {
		close(block)
		<-ctx.Done()
		return "ESCALATION too late", nil
	}})
	escalated := false
	s2.OnEscalation(func(string) { escalated = true })
	s2.Start(context.Background())
	s2.Observe(msg(1))
	<-block
	if err := s2.Stop(context.Background()); err != nil || escalated {
		t.Fatalf("Stop = %v, escalated %v", err, escalated)
	}
	s2.Stop(context.Background()) // again
	if err := supervisor.New(supervisor.Config{}).Start(context.Background()); !errors.Is(err, supervisor.ErrNoEvaluator) {
		t.Errorf("Start without an evaluator = %v", err)
	}
	// A panicking evaluator is an error, not a crash.
	s3, got3 := start(t, supervisor.Config{EvalInterval: 1, Evaluate: func(context.Context, string) (string, error) { panic("boom") }})
	s3.Observe(msg(2))
	s3.Observe(msg(3))
	if w, e := got3.get(); len(w)+len(e) != 0 {
		t.Fatal("a panicking evaluator acted")
	}
}

func waitEval(t *testing.T, ev *scripted, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ev.mu.Lock()
		k := len(ev.prompts)
		ev.mu.Unlock()
		if k >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d evaluations, want %d", k, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestObserveNeverBlocks: Observe returns at once while an evaluation is
// stuck.
func TestObserveNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	s, _ := start(t, supervisor.Config{EvalInterval: 1, Evaluate: func(ctx context.Context, p string) (string, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "OK", nil
	}})
	start := time.Now()
	for i := range 10000 {
		s.Observe(msg(i))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("10000 Observe calls took %s while an evaluation was stuck", d)
	}
	close(release)
}
