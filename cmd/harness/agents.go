package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/signal"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/chirality/harness/daemon"
	"github.com/chirality/harness/ipc"
	"github.com/chirality/harness/logging"
)

const agentsUsage = `usage:
  harness agents start [NICK…] [--config agents.yaml] [-v]
  harness agents status NICK [--json]
  harness agents pause NICK
  harness agents resume NICK
  harness agents stop NICK
  harness agents skills install [NICK…] [--config agents.yaml]

start   run the configured agents (all, or the NICKs given) on IRC in the
        foreground, one daemon each: IRC connection, control socket,
        supervisor and runner. It exits when all of them have stopped;
        SIGINT or SIGTERM stops them, a running turn getting 10 s to
        finish (a second signal: killed at once); no agent process is
        left. Each agent's skill file is
        installed first (see skills install). An agent that cannot start
        (one already running for its nick…) is reported, the others run,
        and the exit status is 1.
status  one line about the agent (--json: the status object: running,
        paused, circuit_open, turn_count, waiting, working,
        last_activation, activity, description…)
pause   the agent finishes the turn it is in and starts no other; new
        mentions wait in its queue (status says how many); resume runs
        them in order, closes an open circuit breaker and resumes an
        escalated supervisor
stop    shut the agent's daemon down
skills install
        write each agent's SKILL.md (the harness channel commands) where
        its engine reads skills: claude .claude/skills, codex
        .agents/skills, copilot .github/skills, acp .agents/skills;
        anthropic has no shell and gets none

The control socket of agent NICK is $XDG_RUNTIME_DIR/harness-NICK.sock,
else ~/.harness/run/harness-NICK.sock.

agents.yaml:
  server:     {name: lab, host: 127.0.0.1, port: 6667,   # name prefixes short nicks: alice → lab-alice;
               hosts: ["irc-b.example:6667"]}            # a nick lab-… is used as written; hosts: tried next
  supervisor: {agent: claude, model: "", thinking: low, window_size: 20,
               eval_interval: 5, escalation_threshold: 3, webhook: https://…}
  agents:
    - {nick: alice, agent: claude, directory: ./alice, channels: ["#dev"],
       model: "", thinking: medium, tags: [backend]}
    - {nick: nat, agent: anthropic, directory: ./nat, channels: ["#dev"]}
    - {nick: oc, agent: acp, acp_command: ["opencode", "acp"], directory: ./oc, channels: ["#dev"]}
  agent: claude | codex | copilot | acp | anthropic (native)
`

func (c *cli) agentsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents start|status|pause|resume|stop|skills",
		Short: "run agents on IRC (agents start|status|pause|resume|stop|skills)",
		Long:  agentsUsage,
		Args:  cobra.ArbitraryArgs,
	}
	cmd.RunE = c.group("subcommand")
	var cfgPath string
	var verbose, asJSON bool
	start := &cobra.Command{
		Use: "start [NICK…] [--config agents.yaml] [-v]", Short: "run the configured agents on IRC in the foreground, one daemon each",
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, nicks []string) error {
			return exitWith(agentsStart(cfgPath, nicks, verbose, c.stdout, c.stderr))
		},
	}
	flagConfig(start, &cfgPath)
	flagVerbose(start, &verbose, "debug logging")
	cmd.AddCommand(start)
	for _, ctl := range []struct{ name, short string }{
		{"status", "one line about the agent (--json: the status object)"},
		{"pause", "finish the turn the agent is in and start no other"},
		{"resume", "run the queued mentions, close an open circuit breaker"},
		{"stop", "shut the agent's daemon down"},
	} {
		sub := &cobra.Command{
			Use: ctl.name + " NICK", Short: ctl.short,
			Args: func(_ *cobra.Command, args []string) error {
				if len(args) != 1 {
					return usageErrorf("want one NICK")
				}
				return nil
			},
			RunE: func(_ *cobra.Command, args []string) error {
				return exitWith(agentsControl(ctl.name, args[0], asJSON, c.stdout, c.stderr))
			},
		}
		if ctl.name == "status" {
			flagJSON(sub.Flags(), &asJSON, "print the status object as JSON")
		}
		cmd.AddCommand(sub)
	}
	skills := &cobra.Command{
		Use: "skills install", Short: "write each agent's SKILL.md where its engine reads skills",
		Args: cobra.ArbitraryArgs,
	}
	skills.RunE = c.group("subcommand")
	install := &cobra.Command{
		Use: "install [NICK…] [--config agents.yaml]", Short: "write each agent's SKILL.md where its engine reads skills",
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, nicks []string) error {
			return exitWith(agentsSkills(cfgPath, nicks, c.stdout, c.stderr))
		},
	}
	flagConfig(install, &cfgPath)
	skills.AddCommand(install)
	cmd.AddCommand(skills)
	return cmd
}

// loadAgents loads the configuration and selects the agents nicks names
// (all when none). code is the exit status when it returns false (1 for a
// bad configuration, 2 for an unknown NICK, both printed).
func loadAgents(cfgPath string, nicks []string, stderr io.Writer) (cfg *daemon.Config, sel []daemon.AgentConfig, code int, ok bool) {
	cfg, err := daemon.LoadConfig(cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "harness agents: %s\n", userError(err))
		return nil, nil, 1, false
	}
	if sel, err = cfg.Select(nicks); err != nil {
		fmt.Fprintf(stderr, "harness agents: %s\n", userError(err))
		return nil, nil, 2, false // a nick the file does not have
	}
	return cfg, sel, 0, true
}

func agentsSkills(cfgPath string, nicks []string, stdout, stderr io.Writer) int {
	cfg, sel, code, ok := loadAgents(cfgPath, nicks, stderr)
	if !ok {
		return code
	}
	for _, a := range sel {
		path, err := daemon.InstallSkill(cfg, a)
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "harness agents: %s: %s\n", a.Nick, userError(err))
			code = 1
		case path == "":
			fmt.Fprintf(stdout, "%s: no skill (the %s engine has no shell; the daemon relays its answers)\n", a.Nick, a.Agent)
		default:
			fmt.Fprintf(stdout, "%s: %s\n", a.Nick, path)
		}
	}
	return code
}

func agentsStart(cfgPath string, nicks []string, verbose bool, stdout, stderr io.Writer) int {
	cfg, sel, code, ok := loadAgents(cfgPath, nicks, stderr)
	if !ok {
		return code
	}
	level := zerolog.InfoLevel
	if verbose {
		level = zerolog.DebugLevel
	}
	logger := zerolog.New(zerolog.ConsoleWriter{Out: logging.Scrubbed(stderr), TimeFormat: time.TimeOnly, NoColor: !isTerminal(stderr)}).
		Level(level).With().Timestamp().Logger()
	// a shutdown that always ends (shutdown.go): the first SIGINT/SIGTERM
	// ends the start-up and stops the agents, each turn getting
	// shutdownGrace to finish; a second one cuts it short
	sigs := notifyStop()
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signalled := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
			close(signalled)
		case <-ctx.Done():
		}
	}()

	var daemons []*daemon.Daemon
	failed := false
	// every agent's directory is made or refused before any agent connects
	ready := sel[:0:0]
	for _, a := range sel {
		if err := daemon.EnsureDirectory(a); err != nil {
			fmt.Fprintf(stderr, "harness agents: %s\n", userError(err))
			failed = true
			continue
		}
		ready = append(ready, a)
	}
	for _, a := range ready {
		if ctx.Err() != nil {
			break // a signal during start-up: start no more
		}
		if _, err := daemon.InstallSkill(cfg, a); err != nil {
			logger.Warn().Err(err).Str("agent", a.Nick).Msg("skill not installed")
		}
		d, err := daemon.New(daemon.Options{Config: cfg, Agent: a, Logger: &logger})
		if err == nil {
			err = d.Start(ctx)
		}
		if err != nil {
			fmt.Fprintf(stderr, "harness agents: %s: %s\n", a.Nick, userError(err))
			failed = true
			continue
		}
		fmt.Fprintf(stdout, "%s: up as %s on %s (socket %s)\n", a.Nick, d.IRCNick(), cfg.Server.Addr(), mustSocket(a.Nick))
		daemons = append(daemons, d)
	}
	if len(daemons) == 0 {
		return 1
	}
	// wait until every daemon has stopped (stop/shutdown) or a signal
	all := make(chan struct{})
	go func() {
		for _, d := range daemons {
			<-d.Done()
		}
		close(all)
	}()
	select {
	case <-all:
	case <-signalled:
		fmt.Fprintln(stderr, "harness agents: stopping")
		if !gracefulStop(sigs, shutdownGrace, &logger, func(ctx context.Context) {
			var wg sync.WaitGroup
			for _, d := range daemons {
				wg.Add(1)
				go func() { defer wg.Done(); _ = d.Stop(ctx) }()
			}
			wg.Wait()
		}) {
			return 1
		}
	}
	if failed {
		return 1 // the others ran, but not every agent asked for
	}
	return 0
}

func mustSocket(nick string) string {
	p, err := ipc.SocketPath(nick)
	if err != nil {
		return "?"
	}
	return p
}

func agentsControl(cmd, nick string, asJSON bool, stdout, stderr io.Writer) int {
	pos := []string{nick}
	typ := map[string]string{"status": ipc.CmdStatus, "pause": ipc.CmdPause, "resume": ipc.CmdResume, "stop": ipc.CmdShutdown}[cmd]
	resp, _, code := callDaemon(pos[0], ipc.Request{Type: typ}, stderr)
	if code != 0 {
		return code
	}
	if cmd == "stop" {
		fmt.Fprintf(stdout, "%s: stopping\n", pos[0])
		return 0
	}
	if asJSON {
		stdout.Write(append(resp.Data, '\n'))
		return 0
	}
	var st daemon.Status
	if err := json.Unmarshal(resp.Data, &st); err != nil {
		fmt.Fprintf(stderr, "harness agents: bad status from the daemon: %s\n", userError(err))
		return 1
	}
	fmt.Fprintln(stdout, st.Line())
	return 0
}

// callDaemon sends one request to nick's daemon; whispers go to stderr.
// code is 0 on an ok response, 1 otherwise (the error printed).
func callDaemon(nick string, req ipc.Request, stderr io.Writer) (ipc.Response, []ipc.Whisper, int) {
	ctx := context.Background()
	c, err := ipc.Dial(ctx, nick)
	if err != nil {
		fmt.Fprintf(stderr, "harness: %v (is `harness agents start` running for %s?)\n", err, nick)
		return ipc.Response{}, nil, 1
	}
	defer c.Close()
	resp, whispers, err := c.Call(ctx, req)
	for _, w := range whispers {
		fmt.Fprintf(stderr, "[supervisor %s] %s\n", w.WhisperType, w.Message)
	}
	if err != nil {
		fmt.Fprintf(stderr, "harness: %s\n", userError(err))
		return resp, whispers, 1
	}
	if !resp.OK {
		fmt.Fprintf(stderr, "harness: %s\n", resp.Error)
		return resp, whispers, 1
	}
	return resp, whispers, 0
}
