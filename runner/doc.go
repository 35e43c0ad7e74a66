// Package runner keeps one long-running agent busy: it owns a harness
// session on any engine, queues the prompts it is sent in the core's
// queue of that session (stored with it: they survive a restart), lets
// the core run them one at a time in order, and reports what the agent
// says as normalized Messages.
// The IRC daemon (package daemon) drives one Runner per agent; the
// supervisor (package supervisor) observes its Messages.
//
//	c, err := runner.New(runner.Config{Harness: h, ProjectRoot: dir, Engine: "anthropic"})
//	k := runner.NewKeeper(runner.KeeperConfig{Runner: c, OnPause: alert, OnCircuitOpen: alert})
//	k.OnMessage(sup.Observe)                 // {type:"assistant", model, content:[text|tool_use|thinking]}
//	err = k.Start(ctx, "")                    // a session: new, Config.ResumeSession, or the last one
//	err = k.SendPrompt("[IRC @mention in #dev] <ann> @bot hi") // queued in the core (Harness.Enqueue), run in order
//	// each prompt: a core turn the runner's gate lets start (Harness.GateQueue), followed
//	// (Harness.Watch, Harness.Follow: typed events → Messages) to its TurnEnd:
//	//   completed · failed (an API error…: 3 in a row pause the Keeper, OnPause)
//	//   crashed (the agent died, could not start, timed out: OnExit(≠0) → the Keeper calls
//	//   Stop, then Start(ResumePrompt) on the same session, and prompts sent meanwhile wait in the
//	//   Keeper, then follow it; 3 crashes in 300 s open the breaker)
//	err = k.Compact(ctx)                      // queued: summary turn, then a new session seeded with it;
//	//   what was queued behind it moves there (Harness.MoveQueue), as behind k.Clear(ctx)
//	err = k.Stop(ctx)                         // interrupt, wait, kill after a grace; OnExit(0)
//
// # Messages
//
// One Message per assistant step: the thinking, text and tool uses of one
// model response, in the order they came, flushed when the step's tools
// report their first result and at the turn's end. Every engine's events
// (package event) fold into the same shape, so a supervisor sees tool
// use on all of them.
//
// # Crash or failed turn
//
// Decided from how the turn ended: session:complete is completed; a
// session:error of kind process, start or killed (the child died, could
// not start, was killed from outside), a turn past Config.TurnTimeout, or
// an event stream that ends without process:exit is a crash — the runner
// stops and calls OnExit with the turn's exit code (1 when it was 0); an
// interrupted turn is neither; every other kind (api_error,
// not_logged_in, max_turns, max_budget, execution, resume_not_found) is a
// failed turn, and the runner goes on with the next prompt.
package runner
