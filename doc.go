// Package harness is the composition point of the harness: one turn of a
// session, end to end, on any engine. The doors — the gateway (package
// gateway), the JSON-RPC door (package rpc), one conversation over HTTP
// (package agentserver, which the TUI talks to), the IRC agents (packages
// runner and daemon), the CLI (cmd/harness) — drive a Harness; the engines
// run the turns behind package engine's seam; nothing here knows about
// HTTP or about which agent answers.
//
//	all := engines.Builtin(engines.Config{})              // package engines: the built-in ones
//	h, err := harness.New(harness.Config{Roots: []string{root}, Engines: all, Aliases: engines.Aliases})
//	s, err := h.NewSession(harness.SessionSpec{ProjectRoot: root, Persona: "REVIEWER", Mode: "workbench"})
//	t, err := h.StartTurn(ctx, harness.TurnRequest{SessionID: s.ID, Message: "review the diff"}) // on the Harness's goroutine
//	for rec, err := range t.Events(ctx) {                 // stored, then live, until its process:exit
//		…                                                  // rec.Typed: the event.Event; rec.Wire(): its JSON with "seq"
//	}
//	res, err := t.Wait(ctx, nil)                          // how it ended: res.Status, res.Final, res.Complete; err a *TurnError
//	t, err = h.StartTurn(ctx, harness.TurnRequest{Message: "hi", Request: engine.Request{Cwd: root}}) // ephemeral: nothing kept,
//	                                                      // records held in a ring: copy *rec.Typed to keep one
//	err = h.Shutdown(ctx)                                 // interrupt, wait, kill what is left
//
// A turn: load the session → build the persona's system prompt and save it
// to <root>/.chirality/prompts/<id>-system.txt → emit user:message →
// snapshot the project's files (checkpoints.go) → start
// the session's engine (engine.Request: the prompt, the persona's tool
// flags, the mode's max turns, the permission policy, the conversation to
// resume; on a warm agent when one waits, see warm.go) → on session:init
// store the engine's conversation id → append every event to the session's
// event log (which gives it its seq) and only then publish it to live
// readers → save the session after the turn, however it ended. Events
// carry the harness session ID as sessionId, never the engine's.
//
// # One turn starter, one event stream, one context rule
//
// StartTurn starts every turn: a session's (TurnRequest.SessionID, with
// TurnOptions) or an ephemeral one (no session; TurnRequest.Engine and
// Request). With TurnRequest.Queue, a session that cannot start it now
// queues the message in its prompt queue instead of refusing it with
// ErrBusy: the Turn is then nil and the error a *Queued saying where
// (errors.Is(err, ErrQueued)), so a caller cannot take a queued prompt
// for a running turn. Every API that hands out events hands out an
// iter.Seq2[session.Record, error] (Turn.Events, Follow, and Watch for
// every session's) or reads one to its end (Turn.Wait), and all follow
// one rule: the ctx given to them only stops the reading (and Wait's
// waiting). A turn stops only by Interrupt or Kill (Turn's or
// Harness's), its own end, or Shutdown; a door that stops a turn when
// its client goes away calls Interrupt itself. The ctx given to
// StartTurn bounds its start only, as it does an engine's
// (engine.Engine).
//
// # Engines
//
// The core imports no engine: Config.Engines are the engines it runs,
// built at the edge. Package engines builds the built-in ones (Claude
// Code, the native loop on the Messages API, Codex and the ACP agents
// opencode, claude-acp and copilot) and reads an engines file; any
// engine.Engine may be added. Config.Aliases are other names of them
// (claude, native, openai). DeleteSession also closes what an engine
// keeps for the session (an ACP agent's process). A session names its
// engine at creation (SessionSpec.Engine > the persona's engine: >
// Config.DefaultEngine) and keeps it.
//
// # Approvals
//
// With Config.Approvals, turns in permission modes default, acceptEdits
// and plan get an engine.Approver (approvals.go): approval:requested is
// stored and published, Approve takes the first answer exactly once,
// "always" remembers the exact use as a rule of the session, in the trust
// record and the session file (permrule.Exact,
// never the agent's wider suggestion; approval:requested shows it as
// rule), later requests that permrule finds allowed by the session's
// rules are resolved by rule, and a timeout, an interrupt,
// a kill, a delete or Shutdown denies what is still open before the turn
// ends.
//
// # Trust (trust.go, package trust)
//
// What an agent can write in its project grants nothing by itself: a
// turn honours the "always" rules a person gave and the persona, mode
// and engine a person chose, as the trust record in the state directory
// (outside every project) keeps them, not as the session file says; a
// persona file whose grants widened since a person trusted it runs with
// the trusted grants; a project .mcp.json server starts only once a
// person trusted its definition. What a turn does not honour it says in
// trust:required events after user:message; PendingTrust and AcceptTrust
// show and take a person's trust.
//
// # A turn's owner, across processes (cutturn.go)
//
// A running turn holds its session's turn lock (an flock on
// .chirality/sessions/<id>.d/turn.lock, package internal/flock), so a
// turn of a session another process runs is refused with ErrBusy in
// every process (a server and a CLI, two servers, a cluster node and its
// restart). The first time a process touches a session (Session), a turn
// the log shows open (no process:exit) whose lock nobody holds was cut by
// a dead process: it is ended in the log, each approval it left waiting
// denied (approval:resolved by "shutdown"), a session:error of kind
// process, then its process:exit.
//
// # File checkpoints
//
// Before each turn the core snapshots the project's files (package
// checkpoint: a private git object store in .chirality/checkpoints, never
// the project's own repository) and records the snapshot under the seq of
// the turn's user:message. FilesDiff previews and RestoreFiles makes the
// files as they were before a turn; FileCheckpoints lists the snapshots,
// with the reason where none was taken. A snapshot that fails (no git, a
// project over Config.Checkpoints' limits) never stops the turn.
// Config.Checkpoints.Off turns them off. A project's first snapshot walks
// its files and starts an inotify watcher (fsnotify) that the project
// keeps until Shutdown; each later snapshot hashes only what the watcher
// saw change, and walks again (recorded as full, with why) after an
// overflow, a watcher error or a change it cannot follow.
//
// # Switch, fork, rewind (conversation.go)
//
// UpdateSession changes a session's persona, model, permission mode and
// effort from its next turn (a running turn's copy of the session is
// changed in place, so its save keeps them). Fork copies a session's
// event records up to a cut (same seqs) and its engine state directory
// into a new session, then session:forked; Rewind appends
// session:rewound and, for the conversation, stores a cut
// (session.Pending) that the next turn takes as engine.Request
// Resume/ResumeAt/Fork (always Fork where the engine can, so no
// conversation a log names is changed in place); for files it calls the
// checkpoints' restore. Turns reads the turns from the log. Each is
// refused while a turn runs (ErrBusy), for an unknown turn or event
// (ErrSeqNotFound), and where the engine has not the control
// (engine.Controller, ErrUnsupported). A per-session lock orders them
// with a turn's start; Fork and Rewind also reserve the session as a
// turn does. A warm agent never runs a turn with a pending cut.
//
// # Permission policy
//
// Every mode defaults to dontAsk (headless-safe: nothing waits for an
// approval, what no rule allows is denied). Precedence:
// Config.DefaultPermissionMode < the persona's permission_mode < the
// session's own (UpdateSession) < Config.PermissionMode. bypassPermissions is refused (ErrBypassRefused)
// unless Config.AllowBypass. Tool flags come from the persona and
// Config.AllowedTools only; a client cannot widen them. 004's per-turn
// overrides (TurnOptions: toolsOverride, disallowedToolsOverride,
// autoApproveToolsOverride) only narrow them for one turn (ErrWidens).
//
// # Max turns
//
// ModeMaxTurns: 25 in every mode (004's default); a persona's
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
// (a closed browser tab, a cancelled ctx) never stops it.
//
// # Logs
//
// Each project's .chirality/logs/harness.log gets spec 004's LogEntry
// lines ({timestamp, sessionId, level, event, data}; package logging):
// turn:start (userMessage: the first 200 characters, persona, mode),
// resume:attempt and resume:fail, session:init, tool:start (toolName,
// inputSummary: the first 200 characters), tool:result (toolName,
// isError, contentLength), turn:complete (cost, tokens, duration), the
// engine's process:spawn, process:exit, parse:error and stderr (a warm
// turn's too), a turn runner's unhandled error (message, stack), and
// errors. Secrets are never logged: the child's environment is not, and
// the driver scrubs withheld values.
package harness
