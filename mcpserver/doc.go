// Package mcpserver is the harness as a Model Context Protocol server: a
// door on the core (package harness), on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk). Any MCP client — Claude
// Desktop, Cursor, Claude Code itself, another agent — can hand work to an
// agent the harness runs, on any engine.
//
// Tools (each input a JSON object; a bad input is a tool error whose text
// says what is wrong, never a protocol error):
//
//	list_engines                                  → {engines: [{name, kind, available, reason?, …}]}
//	list_sessions  {projectRoot?}                 → {sessions: [SessionSummary]}
//	create_session {projectRoot, persona?, engine?, model?} → {sessionId, projectRoot, engine, …}
//	run_turn       {sessionId, message}           → {sessionId, status, final, costUsd, toolCalls: [{name, input, isError}], error?}
//	get_transcript {sessionId}                    → {sessionId, entries: [{seq, role, text, tool?, isError?}], truncated}
//	interrupt      {sessionId}                    → {sessionId, interrupted}
//
// run_turn runs the turn to its end (Harness.StartTurn, Turn.Wait) and answers then.
// When the call carries a progress token, notifications/progress go out
// while it runs (each tool call, an approval asked, and while text is
// written at most one each half second). The turn is bounded by
// Options.TurnTimeout; a client that cancels the call or goes away
// interrupts it, and what has not stopped DefaultGrace later is killed:
// no turn outlives its caller.
//
// Approvals: the server runs sessions under the harness's policy
// (harness.Config: permission mode, rules, AllowedTools). When a turn asks
// a person (approval:requested), the server asks the calling client's
// user through MCP elicitation (a form with decision allow / deny /
// always) if the client declared the elicitation capability on a protocol
// version before 2026-07-28 (that version forbids a request from the
// server while it serves a call and asks by multi round-trip results
// instead, which run_turn does not do yet: such a client is denied), bounded by
// Options.ElicitTimeout and the harness's ApprovalTimeout; a client that
// cannot be asked is answered as the policy dontAsk would: denied. Any
// answer but accept with allow or always denies; nothing waits forever.
//
// Roots: create_session and list_sessions take only project roots inside
// the Harness's allowed roots (harness.Config.Roots, the command's
// --root); a root outside is a tool error and nothing is written.
//
// Limits: message MaxMessageBytes, projectRoot MaxPathBytes, every other
// string MaxNameBytes; session ids must be canonical UUIDs; a transcript
// answer holds at most MaxTranscriptEntries entries of at most
// MaxEntryBytes each. Errors are mapped to their text in one place
// (toolError).
//
// Transports: Run serves one client on any mcp.Transport (stdio for
// `harness mcp`, in-memory in tests); Handler serves streamable HTTP
// (the gateway mounts it at /api/harness/mcp behind its guard).
package mcpserver
