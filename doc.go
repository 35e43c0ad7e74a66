// Package harness is the composition point of the harness: one turn of a
// session, end to end. The gateway (package gateway) and the CLI
// (cmd/harness) both drive a Harness; nothing here knows about HTTP.
//
//	h, err := harness.New(harness.Config{Roots: []string{root}})
//	s, err := h.CreateSession(root, "REVIEWER", "workbench")
//	t, err := h.StartTurn(ctx, s.ID, "review the diff")   // runs on the Harness's goroutine
//	events, err := h.Follow(ctx, s.ID, t.StartSeq)       // stored, then live, until process:exit
//	for rec, err := range events {                        // rec.Event: the UI event JSON with "seq"
//		…
//	}
//	err = h.Shutdown(ctx)                                 // interrupt, wait, kill what is left
//
// A turn: load the session → build the persona's system prompt and save it
// to <root>/.chirality/prompts/<id>-system.txt → start the CLI with the
// persona's tool flags, the mode's max turns and the permission policy,
// resuming the stored Claude session → on session:init store
// claudeSessionId → append every event to the session's event log (which
// gives it its seq) and only then publish it to live readers → save the
// session after the turn, however it ended. Events carry the harness
// session ID as sessionId, never Claude's.
//
// # Permission policy
//
// Every mode defaults to dontAsk (headless-safe: nothing waits for an
// approval, what no rule allows is denied). Precedence:
// Config.DefaultPermissionMode < the persona's permission_mode <
// Config.PermissionMode. bypassPermissions is refused (ErrBypassRefused)
// unless Config.AllowBypass. Tool flags come from the persona and
// Config.AllowedTools only; a client cannot widen them.
//
// # Max turns
//
// ModeMaxTurns: workbench 25, pipeline 50, direct 25; a persona's
// max_turns replaces it; Config.MaxTurns replaces both.
//
// # Live fan-out
//
// Each running turn has a broker. Readers subscribe, then read the event
// log after their last seq, then take live events, skipping seqs already
// read: nothing is lost or repeated. Publishing never blocks: a reader
// whose bounded queue is full is dropped and catches up from the log
// (Follow does it for the caller). Terminal events have reserved queue
// room. A turn runs on a goroutine of the Harness, so a reader going away
// (a closed browser tab) never stops it.
//
// # Logs
//
// Each project's .chirality/logs/harness.log gets: turn started (first 200
// characters of the message, persona, mode), session:init, tool invoked
// (name, first 200 characters of the input), tool result (name, isError,
// length), turn completed (cost, tokens, duration), resume attempted and
// failed, and errors. Secrets are never logged: the child's environment is
// not, and the driver scrubs withheld values.
package harness
