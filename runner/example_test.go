package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/runner"
)

// An agent on the native engine, against a fake Messages API: one prompt,
// its Message, the turn's end, then Stop.
func Example() {
	api, _ := claudetest.NewFakeAPI()
	defer api.Close()
	api.Script(claudetest.TextReply("Hello from the agent."))
	root, _ := os.MkdirTemp("", "runner-example")
	defer os.RemoveAll(root)
	h, err := harness.New(harness.Config{Roots: []string{root}, StateDir: filepath.Join(root, ".state"),
		Engines: engines.Builtin(engines.Config{Env: []string{}, ChildEnv: api.Env()}), ChildEnv: api.Env()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Shutdown(context.Background())

	c, _ := runner.New(runner.Config{Harness: h, ProjectRoot: root, Engine: engine.Anthropic})
	k := runner.NewKeeper(runner.KeeperConfig{Runner: c})
	done := make(chan struct{})
	k.OnMessage(func(m runner.Message) { fmt.Println(m.Type+":", m.Text()) })
	k.OnTurnEnd(func(e runner.TurnEnd) { fmt.Println("turn", e.Outcome); close(done) })
	if err := k.Start(context.Background(), "Say hello."); err != nil {
		fmt.Println(err)
		return
	}
	<-done
	fmt.Println(k.Status().TurnCount, "turn,", k.Status().Activity)
	k.Stop(context.Background())
	fmt.Println("running:", k.Status().Running)
	// Output:
	// assistant: Hello from the agent.
	// turn completed
	// 1 turn, idle
	// running: false
}
