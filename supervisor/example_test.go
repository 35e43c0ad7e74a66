package supervisor_test

import (
	"context"
	"fmt"

	"github.com/chirality/harness/runner"
	"github.com/chirality/harness/supervisor"
)

// A supervisor with a scripted evaluator: every two turns it evaluates;
// a CORRECTION becomes a whisper for the agent.
func Example() {
	verdicts := make(chan string, 1)
	verdicts <- "CORRECTION read the failing test's output before re-running it"
	s := supervisor.New(supervisor.Config{EvalInterval: 2, Evaluate: func(ctx context.Context, prompt string) (string, error) {
		return <-verdicts, nil // CoreEvaluator(h, dir, "anthropic", "", "") in the daemon
	}})
	whispered := make(chan struct{})
	s.OnWhisper(func(message, action string) {
		fmt.Println(action+":", message)
		close(whispered)
	})
	s.Start(context.Background())
	defer s.Stop(context.Background())

	s.Observe(runner.Message{Type: "assistant", Content: []runner.Content{{Type: "text", Text: "Running the tests again."}}})
	s.Observe(runner.Message{Type: "assistant", Content: []runner.Content{{Type: "text", Text: "Still failing. Again."}}})
	<-whispered
	// Output:
	// CORRECTION: read the failing test's output before re-running it
}
