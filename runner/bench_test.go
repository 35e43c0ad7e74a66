package runner_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/runner"
)

// BenchmarkSendPromptToTurnStart measures what the runner adds between
// SendPrompt and the agent's turn, on an idle runner (the native engine on
// the fake API, so no process start is in the figure):
//
//	dispatch: SendPrompt → the runner's goroutine calls Harness.StartTurn
//	          (queue, wake-up: the runner's own latency)
//	started:  SendPrompt → StartTurn returned (the core's start included:
//	          session load, system prompt, event log, engine start)
//
// p50 and p99 of each are reported with b.ReportMetric.
func BenchmarkSendPromptToTurnStart(b *testing.B) {
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		b.Fatal(err)
	}
	defer api.Close()
	root, _ := filepath.EvalSymlinks(b.TempDir())
	h, err := harness.New(harness.Config{Roots: []string{root}, StateDir: b.TempDir(), ChildEnv: api.Env(), NoProjectLogs: true,
		Engines: engines.Builtin(engines.Config{Env: []string{}, ChildEnv: api.Env()})})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	c, err := runner.New(runner.Config{Harness: h, ProjectRoot: root, Engine: engine.Anthropic})
	if err != nil {
		b.Fatal(err)
	}
	starts := make(chan runner.TurnStart, 1)
	ends := make(chan runner.TurnEnd, 1)
	c.OnTurnStart(func(s runner.TurnStart) { starts <- s })
	c.OnTurnEnd(func(e runner.TurnEnd) { ends <- e })
	if err := c.Start(context.Background(), ""); err != nil {
		b.Fatal(err)
	}
	defer c.Stop(context.Background())
	var dispatch, started []time.Duration
	for b.Loop() {
		if err := c.SendPrompt("ping"); err != nil {
			b.Fatal(err)
		}
		s := <-starts
		dispatch = append(dispatch, s.Dequeued.Sub(s.Queued))
		started = append(started, s.Started.Sub(s.Queued))
		if e := <-ends; e.Outcome != runner.Completed {
			b.Fatalf("turn %+v", e)
		}
	}
	report(b, "dispatch", dispatch)
	report(b, "started", started)
}

func report(b *testing.B, name string, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	q := func(p float64) float64 { return float64(d[min(len(d)-1, int(p*float64(len(d))))].Nanoseconds()) / 1e3 }
	b.ReportMetric(q(0.50), "p50-µs-"+name)
	b.ReportMetric(q(0.99), "p99-µs-"+name)
}
