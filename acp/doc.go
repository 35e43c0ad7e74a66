// Package acp runs any Agent Client Protocol agent (OpenCode, Claude over
// ACP, GitHub Copilot, or a command of the user's) behind the engine seam
// (package engine), on github.com/coder/acp-go-sdk v0.13.5 (its JSON-RPC
// connection; the requests the client sends are its own spec-named
// structs, so no non-spec field is ever sent).
//
//	eng, _ := acp.NewEngine(acp.Config{Name: "opencode", Command: []string{"opencode", "acp"}})
//	t, _ := eng.StartTurn(ctx, engine.Request{SessionKey: id, Message: "hi", Cwd: root})
//	for t.Next() { … } // session:init … session:complete|session:error, process:exit
//
// A turn: initialize (protocol 1; no fs or terminal capability: the
// client serves neither, and answers every request it does not serve —
// fs/*, terminal/*, anything else — with JSON-RPC "method not found"),
// session/new {cwd, mcpServers: []} (or session/load, below), then
// session/prompt; its answer's stopReason ends the turn. Interrupt sends
// session/cancel and answers pending permission requests "cancelled"; an
// agent that has not ended the prompt InterruptGrace later is stopped. A
// prompt is never retried, and no request is ever cancelled with
// $/cancel_request (not in protocol 1).
//
// # One agent process per session
//
// Measured on this machine (2 shared cores, loopback fake Messages API):
// from spawn to the answer of session/new takes about 4–8 s for opencode,
// 2–4 s for claude-agent-acp and 2–7 s for copilot, while a prompt on a
// running agent answers its first chunk in well under a second. And
// session/load is optional in ACP: an agent without it cannot continue
// a conversation in a new process at all. So the engine keeps the
// session's agent between turns, and the session's conversation lives in
// it. It lives at most as long as the session: Close(key) (which the core
// calls on DELETE), IdleTimeout without a turn (default 30 minutes),
// Shutdown, a Kill, a crash, a failed set-up or a prompt the agent
// cancelled by itself (below) stop it. The next turn then
// starts a new process and, when the agent advertises loadSession and the
// turn has Request.Resume (the ACP session id session:init reported as
// ConversationID), sends session/load (the history it replays is not
// re-emitted); otherwise it starts a new session, and the conversation's
// context is lost: the turn says so in a thinking:delta after
// session:init and in the log. A stop is bounded: stdin closed, then
// SIGINT, SIGTERM and SIGKILL to the agent's process group, StopGrace
// apart; pipes are drained and every goroutine joined. Nothing outlives
// the server: the agents are children in their own groups, stopped by
// Shutdown, and an agent whose parent dies reads the end of its stdin.
//
// # MCP servers
//
// Request.MCP goes to the agent as mcpServers in session/new, session/load
// and session/fork, in ACP's shapes (stdio: name, command, args, env as
// name/value pairs; http and sse: type, name, url, headers). Stdio
// servers always go; http and sse ones only where the agent's initialize
// answer advertises mcpCapabilities.http / .sse, the others are reported
// failed (with the reason) in session:init, where the servers handed over
// are "pending": the agent starts them and reports nothing of their
// state. A session the agent keeps between turns keeps the servers it was
// set up with.
//
// Each agent names the servers' tools its own way; the events and the
// approval path (rules included) name them mcp__SERVER__TOOL, as every
// engine does (Mapper.SetMCPServers): claude-agent-acp 0.101.0 already
// says mcp__everything__echo, OpenCode 1.18.33 everything_echo, Copilot
// 1.0.102 everything-echo. Verified on the pinned agents: OpenCode runs
// MCP tools without asking (its default permission), so its built-in
// entry (Config.MCPEnv = OpenCodeEnv, with OpenCodeAskMCP) adds "<server>_*": "ask" to its
// OPENCODE_CONFIG_CONTENT outside bypassPermissions, and then it asks
// (session/request_permission) like Copilot does: both are answered like
// any tool, by rule, person or policy. Copilot 1.0.102 advertises http and sse
// and rejects stdio servers from an ACP client ("Rejecting non-http/sse
// MCP server" in its log): its built-in entry has Config.NoStdioMCP, so
// they are not sent and session:init reports them failed with why.
//
// # Protected paths and the agents' own project configuration (issue 29)
//
// A write to a protected path (engine.Request.Protected, package
// internal/protect: .chirality/, agents/, .mcp.json, the agents' project
// configuration, the state directory) is put to the core's Approver in
// the modes that ask, where no rule allows it; where nobody is asked
// (dontAsk, no Approver) it is rejected whatever AllowedTools say (the
// call's input and ACP locations name its files). The agents are started
// so that they ask: claude-acp's _meta gives the CLI the paths' "ask"
// rules (ClaudeACPSessionMeta); OpenCode gets an "edit" permission of
// "ask" for them (OpenCodeEnv; it edits unasked by default). Neither
// reads the project's own configuration, which could allow the shell:
// claude-acp's CLI reads the user's settings only (settingSources
// ["user"]: the project's .claude/settings.local.json allowed Bash), and
// OpenCode runs with OPENCODE_DISABLE_PROJECT_CONFIG=1 (an agent entry
// of the project's opencode.json allowed bash). Verified on the pinned
// agents (TestRealAgentsProtect). Copilot 1.0.102 asks before its shell
// and its writes (create) by default; its repository settings
// (.github/copilot/settings*.json) are protected, but which of their
// keys it reads is not verified. bypassPermissions skips all of this.
//
// # Fork and rewind
//
// A turn with Request.Fork continues a copy of Request.Resume's ACP
// session: after initialize the client sends session/fork {sessionId,
// cwd, mcpServers: []} (unstable in ACP) instead of session/new or
// session/load, and prompts the new session, whose id session:init
// reports; the source session is left as it was. The fork's turn runs in
// the fork's own agent process (its own session key), so the agent must
// find the source session in its store, as the pinned opencode and
// claude-agent-acp do. Only an agent whose initialize answer advertises
// sessionCapabilities.fork is sent it: Controls reports fork as the
// engine's last initialize answer said (Config.Fork before any agent
// answered; the built-in opencode and claude-acp entries set it, as
// their pinned versions advertise, copilot does not), and StartTurn
// refuses a fork the agent does not offer with engine.ErrUnsupported. An
// entry that claims fork for an agent that does not advertise it fails
// that turn at its start (session:error start, with the reason); an
// unknown source session fails it with resume_not_found.
//
// Engine.ForkNow (engine.Forker) does the same outside a turn: the core
// calls it when a session is forked, so the copy is made then (a fork is
// pinned when it is made, and a turn of the source before the fork's
// first turn is not in it). The fork's agent keeps the copy; the fork's
// first turn prompts it (Request.Resume, the copy's id, without Fork),
// or loads it in a new agent when that one has gone.
//
// Rewind (Request.ResumeAt) is not supported: ACP has no means to continue
// a session cut at a turn (session/fork copies a whole session; no turn
// positions are exchanged), so Controls never reports it and StartTurn
// refuses it with engine.ErrUnsupported. (claude-agent-acp 0.101.0 reads
// a fork point from a vendor _meta of JetBrains' client,
// jetbrains.air.fork.messageId; no spec means, so not used.)
// session:complete carries no Checkpoint.
//
// # Events
//
//	agent_message_chunk        chat:delta; chat:complete (the whole message)
//	                           when another kind of update, a new messageId
//	                           or the end of the prompt follows
//	  (claude-agent-acp's informational notices: thinking:delta)
//	agent_thought_chunk        thinking:delta
//	tool_call, tool_call_update
//	                           tool:start exactly once, when the input is
//	                           final: at status in_progress, at a permission
//	                           request for it, at the latest at completed /
//	                           failed (or the turn's end), with the last
//	                           rawInput seen; tool:result at completed
//	                           (isError for failed) with its content as text
//	                           (diffs as "diff PATH" and the new text,
//	                           terminals as a placeholder), else rawOutput
//	plan                       thinking:delta: "Plan:" and one line per
//	                           entry, "[x]" done, "[~]" in progress, "[ ]"
//	                           pending (no new event type)
//	usage_update               its USD cost becomes session:complete's costUsd
//	other kinds                ignored (logged at debug), never an error
//	                           (ACP has no update for a retried model
//	                           request, so an ACP agent's retries make no
//	                           session:retry: the agent keeps them to itself)
//	stopReason end_turn        session:complete (usage as the agent sent it)
//	  cancelled                session:error interrupted (execution when
//	                           the client did not cancel: Copilot does when
//	                           its event stream lags; the agent is then
//	                           stopped, and the next turn starts another)
//	  end_turn after a cancel  session:error interrupted (OpenCode answers a
//	                           cancel so)
//	  max_turn_requests        session:error max_turns
//	  max_tokens, refusal      session:error execution (subtype: the reason)
//	agent gone                 session:error process (exit code, stderr tail)
//	every turn                 process:exit last: the agent's own status when
//	                           it ended in the turn, else 0 (completed) or 1
//
// A tool's name is the agent's own when it says it (claude-agent-acp's
// _meta.claudeCode.toolName: "Bash"), else the ACP tool kind ("execute",
// "read", "edit"…), else its title. Approval rules and AllowedTools match
// that name through permrule, the harness's one matcher: the shell's names
// are one (a Bash rule matches the execute kind Copilot and OpenCode
// send, and the reverse), and a shell rule with a pattern never allows a
// chained, substituted or redirected command it does not name.
//
// # Permissions
//
//	permission mode          Approver  session/request_permission
//	dontAsk, ""              any       answered by AllowedTools (permrule; allow_once),
//	                                   else rejected (reject_once); no person
//	default, acceptEdits,    set       asked through the core (approval:requested);
//	plan                               allow_once or reject_once; "always"
//	                                   is remembered by the core (the exact
//	                                   use), never sent as allow_always
//	default, acceptEdits,    nil       as dontAsk
//	plan
//	bypassPermissions        any       allowed (allow_once)
//	turn interrupted         any       cancelled
//
// The agent's own session mode is set to match when it offers one
// (session/set_mode): the mode of the same id, or whose id ends in
// "#MODE" (claude-agent-acp: default, acceptEdits, plan,
// bypassPermissions; Copilot: plan; OpenCode: plan); dontAsk and "" pick
// the agent's "default" mode when offered, so that what it gates comes to
// the client's rules. Agents that gate little (OpenCode allows most tools
// unless its configuration says "ask") are asked little. The mode is set
// before every prompt when it is not the session's already, so a
// permission mode switched between turns reaches the agent the session
// keeps.
//
// # Persona, model, tools
//
// ACP has no system prompt field: Request.SystemPrompt is sent as a
// preamble (Preamble: a first text block of its own) of the ACP
// session's first prompt only, not of a loaded session's; a persona
// switched between turns (Request.PromptChanged) is sent likewise before
// the next prompt (SwitchPreamble: follow these instead of the earlier
// ones), and stays in the session's history from then on. Request.Model
// is set (session/set_config_option on the option of category "model")
// only when set and the agent offers that value; otherwise the agent's
// own model is used and a warning logged; like the mode it is set before
// every prompt when it changed, so a model switched between turns takes
// effect on the next. Request.Tools,
// DisallowedTools, MaxTurns and Effort are not supported by ACP and are
// ignored by every ACP agent; AllowedTools only answers permission
// requests.
//
// # Environment
//
// Children get the caller's environment filtered with
// secrets.FilterEnv's rules: secret-looking variables (…_KEY,
// …_TOKEN, …_SECRET…) are withheld except the engine entry's
// Credentials and the operator's AllowEnv; ANTHROPIC_API_KEY reaches only
// agents that list it. An entry's ExtraEnv and a Request's Env are added
// after filtering. stderr goes to the logger (credential values
// scrubbed), never into the stream.
//
// # Engines (built in: acp.Builtin, the root package's engines.go)
//
// Each binary is found by engine.FindBinary: the entry's binary, then
// $HARNESS_<NAME>_BIN (HARNESS_OPENCODE_BIN, HARNESS_CLAUDE_ACP_BIN,
// HARNESS_COPILOT_BIN), PATH, ./node_modules/.bin (`make cli` installs
// all three, pinned). Each keeps its own configuration; the harness only
// passes the credential variables named here (plus AllowEnv).
//
// opencode — `opencode acp`; install `npm install opencode-ai@1.18.33`.
// It reads its providers and models from ~/.config/opencode (or
// OPENCODE_CONFIG_CONTENT, JSON); the harness passes ANTHROPIC_API_KEY.
// Offline/CI: OPENCODE_CONFIG_CONTENT naming a provider with
// "npm":"@ai-sdk/anthropic" and its baseURL, OPENCODE_DISABLE_MODELS_FETCH=1,
// OPENCODE_DISABLE_AUTOUPDATE=1, OPENCODE_DISABLE_LSP_DOWNLOAD=1,
// OPENCODE_DISABLE_DEFAULT_PLUGINS=1. It asks permission only for what its
// configuration says "ask" ("permission":{"bash":"ask"}); it answers a
// cancel with end_turn (mapped to interrupted). Modes: build, plan.
// loadSession: yes. Start-up: 4–8 s to the first session here.
//
// claude-acp — `claude-agent-acp` (Claude Code over ACP); install
// `npm install @agentclientprotocol/claude-agent-acp@0.101.0`. Credentials:
// ANTHROPIC_API_KEY (also ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN);
// ANTHROPIC_BASE_URL points it elsewhere; as root, bypassPermissions needs
// IS_SANDBOX=1 in its environment. Modes: default, acceptEdits, plan,
// bypassPermissions (set from the permission mode; its own default is
// "auto", a model-side classifier, which the engine replaces by
// "default"). Tool names are Claude's (Bash, Read, Edit…), so approval
// rules read like the CLI engine's. loadSession: yes.
//
// copilot — `copilot --acp --stdio` (GitHub Copilot CLI); install
// `npm install @github/copilot@1.0.102`. With a GitHub login
// (COPILOT_GITHUB_TOKEN, GH_TOKEN or GITHUB_TOKEN) it uses Copilot's
// models; with a provider of your own (BYOK): COPILOT_PROVIDER_TYPE
// (anthropic, openai…), COPILOT_PROVIDER_BASE_URL, COPILOT_PROVIDER_API_KEY,
// COPILOT_MODEL, and COPILOT_OFFLINE=true to keep it off GitHub. It asks
// permission for every shell command (its "allow all" option stays off);
// modes are URLs ending in #agent, #plan, #autopilot (plan is set for
// plan). loadSession: yes. When a burst of model deltas outruns its ACP
// event stream (its log, ~/.copilot/logs: "ACP event stream lagged and
// lost N event(s); ending the stream"), it ends the prompt "cancelled"
// by itself (session:error execution, subtype cancelled) and that
// session's stream is over: it would answer no later prompt, so the
// engine stops it and the next turn starts a new process (session/load
// with Request.Resume). Here the fake Messages API's 1,000 deltas sent
// in one burst triggered it in about one turn of five; paced 1 ms
// apart, as a model streams, in none of 20.
//
// Any other ACP agent: an entry of an engines file (`harness serve
// --engines FILE`, also `agent serve` and `rpc`):
//
//	engines:
//	  - name: my-agent
//	    kind: acp
//	    command: [my-agent, --acp]
//	    env: [MY_AGENT_MODE=fast]        # not secrets
//	    credentials: [MY_AGENT_API_KEY]  # secret variables it may get
//	    binary: /opt/bin/my-agent        # optional
//
// An entry named like a built-in one changes it (its binary, env,
// credentials), keeping what it does not say.
//
// Not supported by any ACP agent (ACP has no field for them):
// Request.Tools and DisallowedTools (tool scoping), MaxTurns, Effort (the
// thinking level), a system prompt (sent as the first prompt's preamble
// instead), warm turns.
//
// Package acptest is a scriptable fake ACP agent for tests.
package acp
