// Package claudecode drives the Claude Code CLI: one turn is one
// `claude -p --input-format stream-json --output-format stream-json`
// child, and its NDJSON stdout becomes a stream of UI events.
//
// The flow:
//
//	m := claudecode.NewManager(claudecode.Config{})      // finds claude, filters the env
//	t, err := m.StartTurn(ctx, "session-1", "hello", claudecode.TurnOpts{Cwd: root})
//	if err != nil { … }                                   // engine.ErrBusy, *engine.BinaryNotFoundError, ErrInvalidOptions
//	defer t.Close()
//	for t.Next() {
//		ev := t.Event()                                   // session:init, chat:delta, tool:start, …
//	}
//	err = t.Err()                                         // nil, or a *TurnError: errors.Is(err, ErrInterrupted) …
//
// The pieces, each usable alone:
//
//   - Decoder reads stream-json from any io.Reader (a pipe, a recorded
//     transcript) and maps frames to Events. It knows nothing about
//     processes. Lines may be of any size up to a bound (128 MiB by
//     default); bad lines are reported and skipped, unknown frame types
//     are ignored.
//   - OptsFor maps an engine.Request onto TurnOpts (Request.Effort
//     becomes CLAUDE_CODE_EFFORT_LEVEL in the child's environment).
//   - MCP servers (Request.MCP, TurnOpts.MCP): written in .mcp.json form
//     to a private 0600 file in the harness's runtime directory (package
//     internal/rundir; never in the project the agent reads), passed with
//     --mcp-config and --strict-mcp-config (the core's merged
//     configuration is exactly what the CLI gets: it reads no .mcp.json
//     or user servers of its own; none is an empty file), removed when
//     the child has exited. The CLI names their tools mcp__server__tool
//     itself; session:init's mcpServers is system/init's mcp_servers
//     (connected / failed / pending). A warm child matches only a turn
//     with the same servers.
//   - Protected paths and project settings (issue 29): OptsFor gives the
//     CLI --setting-sources=user (a project's .claude/settings.local.json
//     allowed tools and its settings.json hooks approved them; its
//     CLAUDE.md is then not read either) and, outside bypassPermissions,
//     --settings with an "ask" rule for each of Request.Protected
//     (ProtectSettings): the CLI then asks, in acceptEdits and over a
//     Write rule too, and dontAsk denies. Verified on 2.1.329.
//   - TurnOpts.Args builds the argv; the environment is the caller's
//     filtered by the harness's one rule (internal/secrets: credentials
//     withheld unless allowed by name); FindBinary finds the CLI.
//   - Manager and Turn own the process: its own process group, the prompt
//     on stdin (never argv), stdin kept open for control requests until
//     the result, stdout and stderr drained, every wait bounded. They
//     share the other engines' machinery: the running turns sit in the
//     one turn registry (internal/turns: busy, closed, shutdown), the
//     events queue in an engine.Stream (an approval's question deferred
//     behind the events before it), the child is run by internal/child
//     (spawn, its stderr scrubbed, logged at warn level and kept as a
//     bounded tail for session:error, reaping, the stop ladder), and the
//     turn ends through engine.TurnEnd.
//
// Secrets: every event a Turn gives is scrubbed by the process's one
// scrubber (internal/secrets.Events): the values withheld from the child,
// the credentials it is handed (its Config.Env's and TurnOpts.Env's), any
// value registered with the scrubber, and text in a known key format are
// [REDACTED] wherever they appear (a tool's output, an answer, an error,
// the stderr tail), deltas through a secrets.Stream so a key split
// across deltas is replaced whole. Turn.Err, Turn.Command and the logs
// are scrubbed alike. TurnOpts.OnFrame gets the CLI's frames as they are.
//
// Event order: session:init first (when the CLI got that far), then
// deltas, tool starts and results, chat:complete, then exactly one of
// session:complete or session:error, then exactly one process:exit, last.
// A result of subtype "success" with is_error set is an error.
//
// Stopping: Turn.Interrupt asks over the control protocol, then signals
// the process group (SIGINT, SIGTERM, SIGKILL) if the CLI does not end the
// turn in time; Turn.Kill sends SIGTERM then SIGKILL. Once the CLI has
// exited, whatever is left of its group is killed, so tools it started
// never outlive the turn. Manager.Shutdown interrupts every running turn
// and, when its context ends first, sends SIGKILL to what is left.
//
// Conversation control (engine.Controller: fork and rewind): a turn with
// Request.Fork runs `--resume ID --fork-session` (a copy with a new
// session id; the original transcript is untouched); Request.ResumeAt
// adds `--resume-session-at UUID`, always with --fork-session, where UUID
// is the last assistant message of the turn to keep (session:complete's
// Checkpoint, read from the turn's top-level assistant frames; verified
// on 2.1.329 against the fake API: the next request holds the
// conversation up to that message only; a uuid the transcript lacks ends
// the turn with "No message found with message.uuid", mapped to
// resume_not_found like a lost conversation). A resumed conversation keeps
// its first turn's --append-system-prompt-file, so when
// Request.PromptChanged (a persona switched) the new prompt travels at
// the head of the turn's message (MessageFor), once.
//
// Package claudetest holds the test doubles: a fake Messages API that the
// real CLI can run against offline, and a transcript replayer.
package claudecode
