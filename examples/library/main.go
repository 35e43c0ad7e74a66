// Command library is the README's "one turn from Go", runnable without an
// account: it starts the built-in demo model (engines.StartDemo, the same
// one `harness serve --demo` uses), points the Claude Code CLI at it, runs
// one turn in the demo's scratch project and prints each event as JSON.
//
// From a harness checkout:  go run ./examples/library
// From your own module: see "Use it from your Go module" in the README.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/engines"
)

func main() {
	d, err := engines.StartDemo(engines.DemoOptions{Project: true})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	// The demo's environment on top of ours; without --demo you would
	// leave Env nil (the child gets this process's, secrets filtered).
	m := claudecode.NewManager(claudecode.Config{Env: append(os.Environ(), d.Env...)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t, err := m.StartTurn(ctx, "session-1", "What is in this project?",
		claudecode.TurnOpts{Cwd: d.Project, PermissionMode: "dontAsk", AllowedTools: d.AllowedTools})
	if err != nil {
		log.Fatal(err) // ErrBusy, an *engine.BinaryNotFoundError naming every path tried, …
	}
	defer t.Close()
	// ctx bounded the start; the turn stops by Interrupt or Kill, so the
	// deadline is kept this way (engine.Engine's context rule).
	defer context.AfterFunc(ctx, func() { _ = t.Kill() })()
	for t.Next() {
		ev := t.Event() // session:init, chat:delta, tool:start, tool:result, session:complete, process:exit…
		fmt.Printf("%s\n", ev.AppendJSON(nil))
	}
	if err := t.Err(); err != nil {
		log.Fatal(err)
	}
}
