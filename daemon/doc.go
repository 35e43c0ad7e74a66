// Package daemon runs agents on IRC: one Daemon per agent of
// agents.yaml, each with its IRC connection, control socket, supervisor
// and runner. `harness agents start` runs them in the foreground.
//
//	cfg, err := daemon.LoadConfig("agents.yaml")        // errors name the line
//	d, err := daemon.New(daemon.Options{Config: cfg, Agent: cfg.Agents[0]})
//	err = d.Start(ctx)   // buffer → IRC → webhook client → IPC → supervisor → runner
//	<-d.Done()           // after Stop, or an IPC shutdown: runner → supervisor → IPC → IRC → PID file
//
// # What a daemon does
//
// A PRIVMSG that mentions the agent's IRC nick ("@lab-alice") becomes
// the prompt
//
//	[IRC @mention in #dev] <bob> @lab-alice the message, exactly as sent
//
// sent to the runner (a runner.Keeper over a runner.Core over the
// agent's own *harness.Harness; prompts queue in the core queue of the
// agent's session, stored with it, and run in order, also those that came
// while the runner was starting or restarting). Paused
// means paused: the agent finishes the turn it is in and starts no
// other until resumed; the queue is kept, new mentions join it, and
// status says how many wait. A mention the agent cannot take (its queue
// full, its circuit breaker open) is not dropped silently: its sender is
// told in the channel (one line per channel for a burst). Every runner
// Message goes to the supervisor; its whispers wait for the agent's next
// skill-CLI call and are printed on that command's stderr; an escalation
// POSTs JSON (Alert, type "escalation") to supervisor.webhook — as does
// the agent's irc_ask once its question is sent (type "ask", with the
// channel: a person is alerted that an answer is awaited) — and pauses the supervisor
// (the runner keeps running; `harness agents resume` resumes it, and so
// do five clean evaluations). Three failed turns pause the agent and a
// circuit breaker (three crashes in 300 s) stops restarts: both post an
// [error] line to the channel of the last mention.
//
// The agent posts to IRC itself with the skill CLI (`harness channel
// send …`): the daemon puts the harness binary first on its PATH, sets
// HARNESS_NICK (and XDG_RUNTIME_DIR, so the CLI finds the socket), and
// allows "Bash(harness channel:*)" (SkillTool) without asking. When a
// turn that answered a mention ends without the agent having posted (no
// irc_send or irc_ask during the turn), the daemon relays the turn's
// final answer to the mention's channel, as plain text (irc.PlainText:
// IRC renders no markdown), at most MaxRelayLines lines. An answer that
// finds the agent disconnected waits for its reconnection and is posted
// once the channel is joined again. Per engine (each proven end to
// end with the real agent on ngircd: e2e_test.go, engines_e2e_test.go):
//
//	anthropic   native loop, no shell: always relayed
//	claude      Claude Code's Bash; SkillTool is its --allowedTools rule
//	codex       its shell, in its workspace-write sandbox, which refuses
//	            the socket's connect: InstallSkill writes CodexRules (an
//	            execpolicy allow rule for `harness channel …`, which runs
//	            it outside the sandbox), and the daemon's threads use a
//	            non-login shell (CodexThreadConfig) so its PATH survives
//	copilot     ACP permission request of kind execute: SkillTool answers
//	            it (permrule, the one matcher: a Bash rule matches the
//	            execute kind; a chained, substituted or redirected
//	            command never matches it)
//	acp         likewise (OpenCode asks only if configured to; Claude
//	            over ACP names its tool Bash)
//
// Any agent whose permission layer refuses the command gets the
// failure in its tool result; its final answer is then relayed.
//
// # agents.yaml
//
//	server:
//	  name: lab            # prefixes short nicks: alice → lab-alice (letters, digits, _; 16 at most)
//	  host: 127.0.0.1      # default
//	  port: 6667           # default
//	  hosts: ["irc-b.example:6667"]   # optional: more servers of the network, tried in order
//	supervisor:            # optional: no section, no supervisor
//	  agent: claude        # claude | codex | copilot | acp | anthropic (native)
//	  acp_command: [opencode, acp]   # agent acp only; this is the default
//	  model: ""            # the engine's default
//	  thinking: low        # low | medium | high
//	  window_size: 20      # turns kept
//	  eval_interval: 5     # evaluate every 5 observed turns
//	  escalation_threshold: 3
//	  webhook: https://hooks.example/irc   # escalations, JSON POST
//	agents:
//	  - nick: alice
//	    agent: claude      # claude (the default) | codex | copilot | acp | anthropic (or native)
//	    directory: ./alice # relative to agents.yaml
//	    channels: ["#dev", "#ops"]   # quote them: # starts a YAML comment
//	    model: ""          # optional
//	    thinking: medium   # optional: low | medium (the default) | high; Claude's only
//	    tags: [backend]    # optional, shown in status
//	  - nick: oc
//	    agent: acp
//	    acp_command: ["opencode", "acp"]   # the ACP agent's argv (the default); a string is split on spaces
//	    directory: ./oc
//	    channels: ["#dev"]
//	    sandbox: strict    # any other key: backend-specific, passed through (AgentConfig.Extra)
//
// nick is the agent's IRC nick. One rule: a nick that starts with
// "<server.name>-" is used as written (the seed's form: server spark,
// nick spark-culture); any other nick is the short form and gets the
// prefix (alice → lab-alice). Two agents whose IRC nicks are the same
// are an error naming both lines. The socket, PID file and HARNESS_NICK
// use the nick as configured, and `harness agents status` takes either
// spelling. testdata/seed-agents.yaml is spec 003's example, verbatim.
//
// On a network of linked servers (see docs/irc-network.md) each daemon
// connects to host:port, then to each of hosts in order when a connection
// fails, with back-off, and rejoins its channels. A nick already in use on
// the network when a daemon first registers (another daemon, on any
// linked server) ends its start with an irc.NickError; it never answers
// under another nick.
//
// agent maps to harness engines: claude → claude-code, codex → codex,
// anthropic/native → anthropic, copilot → the ACP engine "copilot"
// (copilot --acp --stdio), acp → an ACP engine "acp-<nick>" running
// acp_command. thinking is a claude agent's effort (harness.Config.Effort
// → engine.Request.Effort: Claude Code's CLAUDE_CODE_EFFORT_LEVEL),
// "medium" when left out; the other kinds ignore it unless it is written
// for them (the opt-in extension: Codex's reasoning effort; the native
// loop and the ACP agents run at their default). The supervisor's
// one-shot turns run on a Harness of their own with supervisor.thinking
// the same way; a supervisor with agent acp runs supervisor.acp_command
// (the engine "acp-supervisor"; default opencode acp).
//
// # Commands
//
//	harness agents start [NICK…] [--config agents.yaml]  # foreground; SIGINT/SIGTERM stop cleanly
//	harness agents status NICK [--json]                  # a readable line, or the status object
//	harness agents pause|resume|stop NICK
//	harness agents skills install [NICK…]                # SKILL.md where each engine reads skills
//	harness channel send '#dev' 'text'                   # the agent's skill CLI (needs HARNESS_NICK)
//	harness channel read '#dev' [limit]
//	harness channel ask '#dev' --timeout 300 'question?'
//	harness channel join|part '#ops'
//	harness channel channels | who '#dev' | topic '#dev' ['text'] | compact | clear
//
// Each daemon's control socket is ipc.SocketPath(nick):
// $XDG_RUNTIME_DIR/harness-<nick>.sock, else
// ~/.harness/run/harness-<nick>.sock (see package ipc for the protocol).
// Skills (InstallSkill; `harness agents start` installs them too):
// claude .claude/skills/irc-channel/SKILL.md, codex .agents/skills/… (and
// .codex/rules/harness-channel.rules), copilot .github/skills/…, acp
// .agents/skills/… and .claude/skills/…; anthropic gets none. Each was
// checked on the pinned binary: the model's request carries the skill.
package daemon
