// Package codex runs OpenAI Codex (`codex app-server`, @openai/codex
// 0.169.0) behind the engine seam (package engine).
//
//	eng := codex.NewEngine(codex.Config{Logger: &log})
//	t, _ := eng.StartTurn(ctx, engine.Request{SessionKey: id, Message: "hi", Cwd: root})
//	for t.Next() { … } // session:init … session:complete|session:error, process:exit
//
// Each turn starts `codex app-server` in its own process group and talks
// newline-delimited JSON-RPC without the "jsonrpc" member (a small peer on
// the harness's one JSON-RPC codec, internal/jsonrpc, in its Codex
// dialect: LineReader bounds a line at MaxLineBytes, DecodeMessage parses
// it, calls are correlated by id, the server's requests are answered).
// The turn sends initialize (opting into the experimental API, for plan
// mode's collaborationMode) + initialized, thread/start (or thread/resume
// with Request.Resume, the thread id session:init reported as
// ConversationID), then turn/start; Interrupt sends turn/interrupt.
// A turn in permission mode plan runs in Codex's plan collaboration mode,
// and a plan it proposes is reviewed by a person; once approved, the
// session's next turn (queued by the core) implements it (plan.go).
//
// # Fork and rewind
//
// Controls reports both. session:complete's Checkpoint is the Codex turn's
// id. A turn with Request.Fork, or with Request.ResumeAt (a checkpoint),
// sends thread/fork {threadId: Resume, lastTurnId: ResumeAt,
// excludeTurns: true} instead of thread/resume, then turn/start on the new
// thread, whose id session:init reports: the copy keeps the turns up to and
// including lastTurnId (all of them without it), and the original thread
// is never changed, so a rewind is a fork cut at its checkpoint. A fork
// keeps its source's turn ids, so a checkpoint from before a fork cuts the
// fork too. An unknown thread or turn id ends the turn with session:error
// resume_not_found. 0.169.0 has no thread/rollback (its thread/revert
// rewrites the original thread's history in place, which the harness never
// wants). testdata/schema.golden records the pinned version's schema of
// every method the engine calls (TestSchemaContract).
//
// # Child per turn, not per session
//
// Measured on the loopback fake (2 cores, BenchmarkFirstDelta): StartTurn
// to the first chat:delta is about 360 ms with a fresh child, of which
// about 270 ms is the child's start, initialize and thread/start; a child
// kept per session would answer later turns in about 90 ms. We chose a
// child per turn anyway: Codex persists threads in $CODEX_HOME, so
// thread/resume in a fresh child continues the conversation exactly (the
// tests prove the second request carries the first exchange); nothing can
// outlive its turn, so DELETE, idle expiry and Shutdown have nothing to
// reap; and a crashed child costs one turn, never a session. Close(key)
// stops a session's running turn.
//
// # Events
//
//	item/agentMessage/delta                 chat:delta
//	item/reasoning/summaryTextDelta, textDelta  thinking:delta
//	item/completed agentMessage             chat:complete
//	commandExecution, fileChange, mcpToolCall items
//	                                        tool:start once ("shell", "apply_patch",
//	                                        "mcp__SERVER__TOOL"), tool:result with
//	                                        aggregatedOutput (else the output deltas)
//	item/completed plan                     tool:start ExitPlanMode {"plan": markdown}
//	                                        once the turn completed, then the
//	                                        Approver; tool:result (plan.go)
//	turn/completed completed                session:complete (usage summed over the turn)
//	turn/completed interrupted / failed     session:error interrupted / api_error
//	child gone                              process:exit, always last
//
// # Permissions
//
//	permission mode           Approver  approvalPolicy  sandbox
//	dontAsk, ""               any       never           workspace-write
//	default, acceptEdits      set       untrusted       workspace-write
//	default, acceptEdits      nil       never           workspace-write
//	plan                      set / nil untrusted/never read-only, Codex's plan
//	                                                     collaboration mode (plan.go)
//	bypassPermissions         any       never           danger-full-access
//
// Every thread's config marks the project untrusted (trust.go): Codex
// 0.169 otherwise reads the project's own .codex/config.toml, whose MCP
// servers start commands unasked (issue 29; the project's AGENTS.md is
// then not read either). Protected paths (engine.Request.Protected): a
// file change Codex asks about goes to the core like any, and the core
// always puts a protected one to a person; and since in workspace-write
// Codex writes inside the workspace without asking, such a thread runs
// on a permission profile instead (protect.go): Codex's :workspace with
// every protected path read-only in its sandbox (a command's write fails
// with "Read-only file system"; verified on 0.169 with bubblewrap). Not
// when the engine's ThreadConfig or the user's $CODEX_HOME/config.toml
// sets sandbox_mode (Codex then ignores profiles): there they are
// writable. While .claude/ or .github/ does not exist, Codex cannot
// create it (a missing parent of a protected file is what is bound).
// Where a person is asked (untrusted) the profile denies reading the
// existing protected paths too, and one file name nobody uses
// (protect.go): Codex then retries an approved, seemingly denied command
// inside the sandbox, not without it, and runs an approved escalation
// (sandbox_permissions require_escalated) outside the sandbox but with
// the denied paths kept unreadable and unwritable; so neither writes a
// protected path that exists (an escalation can create a missing one).
// The cost: there Codex's commands cannot read them either. An
// escalation still writes anywhere else once approved, and one the model
// asks for without a justification comes as a request that looks exactly
// like a plain command's (verified on 0.169). So every command approval
// request is marked engine.ApprovalRequest.Unsandboxed (Codex may run it
// outside its sandbox; map.go's request), which the core always puts to
// a person: no rule or earlier "always" allows a Codex command, and
// "always" remembers nothing for it. (The granular approval policy
// {"granular":{"sandbox_approval":false,...}} makes Codex refuse every
// escalation itself, with a justification or without, but then it asks
// before no plain command either, verified on 0.169: not what default
// mode promises.) A file change request with a
// grantRoot or a reason is marked too. Under never Codex refuses an
// escalation and asks nobody. Codex's own $CODEX_HOME is in the profile
// as a protected path too (withCodexHome: its config.toml and rules/
// would widen every later session). Plan mode
// with an Approver runs on the same profile extending :read-only.
//
// untrusted (0.169.0 also accepts on-request and a granular policy) asks
// before every command not known to be safe. The approval requests
// item/commandExecution/requestApproval and item/fileChange/requestApproval
// go to Request.Approver from a goroutine of their own, once the events
// before them were read; the answer is accept or decline, never
// acceptForSession or an execpolicy amendment (which would have Codex
// remember a rule of its own making): a person's "always" is remembered
// by the core as the exact use (permrule.Exact), which answers Codex's
// next identical request (tool name shell, the command line). Other
// server requests are answered "method not found". The engine is not a Prestarter (no warm turns).
// Tool scoping (Request.Tools, DisallowedTools, AllowedTools) and MaxTurns
// are not supported by the app-server and are ignored. Request.Effort is
// sent as turn/start's effort (the model's reasoning effort: low, medium,
// high), which reaches the Responses API as reasoning.effort.
//
// # Environment
//
// Children get the caller's environment with secret-looking variables
// withheld (secrets.FilterEnv's rules) except OPENAI_API_KEY and
// CODEX_API_KEY; CODEX_HOME passes through, and the user's provider in
// $CODEX_HOME/config.toml is never overridden (a model is set only when
// Request.Model is) except by what Config.ThreadConfig names (sent as
// thread/start's and thread/resume's config; the IRC daemon turns the
// login shell off with it, so the PATH it gives reaches the commands). stderr goes to the logger, never into the stream.
//
// Switching between turns: thread/resume (and thread/fork) carry the
// turn's model, sandbox and approval policy (from the permission mode)
// and the persona's prompt as baseInstructions, which replaces the
// thread's earlier one in the next model request (TestRealCodexSwitch), so
// Request.PromptChanged needs nothing more; Effort goes with turn/start.
//
// MCP servers: Request.MCP goes as the mcp_servers table of thread/start's
// (thread/resume's, thread/fork's) config, over stdin, so env and header
// values are on no command line (stdio: command, args, env; http: url,
// http_headers; Codex has no SSE transport: such servers are reported
// failed). Without servers nothing is sent and $CODEX_HOME/config.toml's
// own servers apply. Codex offers a server's tools to the model as the
// namespace tool mcp__SERVER and reports calls as mcpToolCall items,
// mapped to tool:start/tool:result named mcp__SERVER__TOOL. Codex starts
// the servers in the background and offers the model only the tools of
// those ready by its first request, so turn/start waits until each
// server reported ready or failed (mcpServer/startupStatus/updated), at
// most Config.MCPStartupWait (TestRealCodexMCPSlowServerToolsInFirstRequest).
// session:init reports what they said (ready is connected; pending if the
// wait ran out). Codex 0.169 runs MCP tools without
// asking whatever its approval policy, so outside bypassPermissions a
// server's tools are offered only where a rule in Request.AllowedTools
// allows them (enabled_tools: mcp__SERVER__TOOL that tool, mcp__SERVER all
// of them, no rule none): on Codex an MCP tool runs by rule or not at all,
// never after a question (TestRealCodexMCPToolsOnlyWhereARuleAllows).
//
// Package codextest is a fake Responses API for offline tests.
package codex
