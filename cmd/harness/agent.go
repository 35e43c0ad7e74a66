package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chirality/harness"
	"github.com/chirality/harness/agentserver"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/internal/httpguard"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/logging"
	"github.com/chirality/harness/persona"
)

const agentUsage = `usage: harness agent serve [flags]

Serves one harness session over HTTP; the terminal UI (harness tui)
talks to it. The session is made in the project's .chirality/ on start
(--persona, --mode, --engine), or --session ID continues one; its turns
run on the core like every door's: the persona's prompt and tools, the
event log, warm turns and approvals (in permission mode default, a tool
no rule allows waits for POST /approval). --isolation worktree makes
the new session in a git worktree of its own (--base, --branch), outside
the project's tree; --sandbox runs its agent in the kernel sandbox.

  GET  /events     SSE: user, text and reasoning (one event per completed
                   block), tool_call, tool_result, status, approval,
                   approval_resolved; every event has an id, and
                   Last-Event-ID (or ?after=ID) replays from the log;
                   ?deltas=1 adds text_delta / reasoning_delta;
                   ?usage=1 adds usage and rate_limit
  POST /prompt     {"content": "…"}             (409 while one runs)
  POST /cancel                                   interrupt the turn
  POST /approval   {"requestId": "…", "decision": "allow|deny|always"}
  GET  /session    the session served (a worktree session's isolation,
                   workdir, branch and base)
  GET  /sessions   {"sessions": […]}: the project's sessions, each
                   worktree session's branch (the TUI's /sessions)

Loopback only unless --token. The gateway's guard: a foreign Origin is
refused on every route, a POST with a body must be application/json.
SIGINT or SIGTERM interrupts the turn and stops (a second one at once).
`

func (c *cli) agentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent serve [flags]",
		Short: "serve one conversation over HTTP (agent serve)",
		Long:  agentUsage,
		Args:  cobra.ArbitraryArgs,
	}
	cmd.RunE = c.group("subcommand")
	cmd.AddCommand(c.agentServeCmd())
	return cmd
}

func (c *cli) agentServeCmd() *cobra.Command {
	var o agentOptions
	var verbose bool
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "serve one harness session over HTTP",
		Long:  agentUsage,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.set = flagsSet(cmd)
			ctx, sigs := c.agentCtx, c.agentSigs
			if ctx == nil {
				stop := notifyStop()
				defer signal.Stop(stop)
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(context.Background())
				defer cancel()
				go func() { // the first signal starts the shutdown; gracefulStop takes a second
					select {
					case <-stop:
						cancel()
					case <-ctx.Done():
					}
				}()
				sigs = stop
			}
			return exitWith(c.agentServe(ctx, sigs, o, verbose))
		},
	}
	flagAddr(cmd, &o.addr, "127.0.0.1:8788")
	flagToken(cmd, &o.token, "bearer token every request must carry")
	cmd.Flags().DurationVar(&o.heartbeat, "heartbeat", 30*time.Second, "interval of the SSE heartbeat comments")
	flagAllowHostOrigin(cmd, &o.allowHosts, &o.allowOrigins, "origin allowed to call cross-origin (repeatable; none by default)")
	agentFlags(cmd, &o, true)
	flagEngines(cmd, &o.enginesFile)
	flagVerbose(cmd, &verbose, "debug logging on stderr")
	return cmd
}

// agentOptions are what `agent serve` and `tui` (without --url) run an
// agent server with.
type agentOptions struct {
	engine, cwd, model, persona, mode, session, permissionMode, claudeBin string
	projectConfig                                                         bool
	maxTurns, warm                                                        int
	demo, noCheckpoints                                                   bool
	approvalTimeout                                                       time.Duration

	// Server side.
	addr, token              string
	allowHosts, allowOrigins stringList
	heartbeat                time.Duration
	enginesFile              string
	mcp                      mcpConfigFlag
	set                      map[string]bool // the flags given
	iso                      isolationFlags  // --isolation, --base, --branch, --sandbox
}

// agentFlags declares the flags `agent serve` and `tui` share. withEngines
// says whether the command has --engines (its help mentions it then).
func agentFlags(cmd *cobra.Command, o *agentOptions, withEngines bool) {
	more := ""
	if withEngines {
		more = " or an engine of --engines"
	}
	flagEngine(cmd, &o.engine, "", "engine of a new session"+more+" (default: the persona's, else anthropic)")
	flagCwd(cmd, &o.cwd, "project directory the agent works in (default: the current directory)")
	flagModel(cmd, &o.model, "model of a new session (default: the persona's, else the engine's; aliases haiku, sonnet, opus)")
	flagPersona(cmd, &o.persona, "persona of a new session (agents/AGENT_<ID>.md in the project)")
	flagMode(cmd, &o.mode, "workbench", "mode of a new session: workbench, pipeline or direct")
	flagSession(cmd, &o.session, "continue this session of the project instead of making one")
	flagPermissionMode(cmd, &o.permissionMode, "", "permission mode of every turn, over the persona's (default: the persona's, else default: a tool no rule allows is put to the person at the TUI)")
	flagMaxTurns(cmd, &o.maxTurns, "model calls per prompt (default: the persona's, else the mode's)")
	flagWarm(cmd, &o.warm, 1, "start the next turn's agent ahead while the person reads (0 = off)")
	flagApprovalTimeout(cmd, &o.approvalTimeout, harness.DefaultApprovalTimeout, "how long a tool waits for an answer before it is denied")
	flagDemo(cmd, &o.demo)
	flagNoCheckpoints(cmd, &o.noCheckpoints)
	flagClaudeBin(cmd, &o.claudeBin, " (--engine claude-code)")
	flagProjectConfig(cmd, &o.projectConfig)
	flagMCPConfig(cmd, &o.mcp)
	flagIsolation(cmd, &o.iso)
}

// flagsSet records which flags cmd was given.
func flagsSet(cmd *cobra.Command) map[string]bool {
	set := map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { set[f.Name] = true })
	return set
}

// agentServe is `harness agent serve ARGS…` that stops when ctx is done
// and whose grace period a receive on sigs (nil: none) cuts short.
func agentServe(ctx context.Context, sigs <-chan os.Signal, args []string, stdout, stderr io.Writer) int {
	c := &cli{stdin: os.Stdin, stdout: stdout, stderr: stderr, agentCtx: ctx, agentSigs: sigs}
	return c.run(append([]string{"agent", "serve"}, args...))
}

// agentServe serves until ctx is done (the first SIGINT or SIGTERM), then
// stops as gracefulStop says: a second signal on sigs (nil: none) cuts
// the grace period short.
func (c *cli) agentServe(ctx context.Context, sigs <-chan os.Signal, o agentOptions, verbose bool) int {
	stdout, stderr := c.stdout, c.stderr
	if o.token == "" {
		o.token = os.Getenv("HARNESS_TOKEN")
	}
	level := zerolog.InfoLevel
	if verbose {
		level = zerolog.DebugLevel
	}
	logger := zerolog.New(zerolog.ConsoleWriter{Out: logging.Scrubbed(stderr), TimeFormat: time.TimeOnly, NoColor: !isTerminal(stderr)}).Level(level).With().Timestamp().Logger()
	a, err := startAgent(o, &logger, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "harness agent serve:", userError(err))
		if errors.Is(err, errAgentUsage) {
			return 2
		}
		return 1
	}
	fmt.Fprintf(stdout, "harness agent: session %s (continue it with --session %s)\n", a.sessionID, a.sessionID)
	if s, err := a.h.Session(a.sessionID); err == nil {
		printWorktree(stdout, s)
	}
	fmt.Fprintf(stdout, "harness agent: listening on %s\n", a.url)
	status := 0
	select {
	case <-ctx.Done():
		logger.Info().Msg("shutting down: interrupting the running turn")
	case err := <-a.served:
		logger.Error().Err(err).Msg("server failed")
		a.served <- err
		status = 1
	}
	var serr error
	if !gracefulStop(sigs, shutdownGrace, &logger, func(ctx context.Context) { serr = a.shutdown(ctx) }) {
		return 1
	}
	if serr != nil && status == 0 {
		fmt.Fprintln(stderr, "harness agent serve:", userError(serr))
		status = 1
	}
	return status
}

// errAgentUsage marks a start error that is the command line's fault.
var errAgentUsage = errors.New("usage")

// runningAgent is an agent server started by startAgent.
type runningAgent struct {
	url, sessionID string
	token          string // the bearer token the server requires ("" = none)
	h              *harness.Harness
	srv            *agentserver.Server
	hs             *http.Server
	served         chan error
	cleanup        []func()
}

// startAgent makes the Harness (its engines: the built-in ones and
// --engines'), makes or continues the session, and serves it on o.addr.
// The caller must call stop.
func startAgent(o agentOptions, logger *zerolog.Logger, stderr io.Writer) (_ *runningAgent, err error) {
	usage := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errAgentUsage}, args...)...)
	}
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return nil, usage("--addr %q: %v", o.addr, err)
	}
	if err := secrets.CheckToken(o.token); err != nil {
		return nil, usage("--token (or HARNESS_TOKEN): %v", err)
	}
	if !isLoopbackHost(host) && o.token == "" {
		return nil, usage("--addr %s is not a loopback address: set --token (or HARNESS_TOKEN) so the agent is not open to the network", o.addr)
	}
	if o.cwd == "" {
		if o.cwd, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	if o.cwd, err = filepath.Abs(o.cwd); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(o.cwd); err != nil || !fi.IsDir() {
		return nil, usage("--cwd %s is not a directory", o.cwd)
	}
	if o.permissionMode != "" && !engine.ValidPermissionMode(o.permissionMode) {
		return nil, usage("--permission-mode %q is not one of %s", o.permissionMode, strings.Join(engine.PermissionModes, ", "))
	}
	if o.session != "" {
		for _, f := range []string{"persona", "mode", "engine", "model", "isolation", "base", "branch"} {
			if o.set[f] {
				return nil, usage("--%s is for a new session; --session %s keeps its own", f, o.session)
			}
		}
	} else if !persona.ValidMode(o.mode) {
		return nil, usage("--mode %q: want workbench, pipeline or direct", o.mode)
	}
	if err := o.iso.check(); err != nil {
		return nil, err
	}
	a := &runningAgent{token: o.token}
	defer func() {
		if err != nil {
			a.runCleanup()
		}
	}()
	cfg := harness.Config{
		Roots: []string{o.cwd}, MaxTurns: o.maxTurns, Logger: logger, Aliases: engines.Aliases,
		DefaultPermissionMode: "default", PermissionMode: o.permissionMode,
		Approvals: true, ApprovalTimeout: o.approvalTimeout, WarmTurns: o.warm, DefaultEngine: engine.Anthropic,
		Checkpoints: harness.CheckpointConfig{Off: o.noCheckpoints},
		MCP:         o.mcp.Config(), Sandbox: o.iso.sandbox, SandboxOpenNetwork: o.iso.openNetwork,
	}
	if o.demo {
		undo, err := setUpDemo(&cfg, stderr, "harness agent serve")
		a.cleanup = append(a.cleanup, undo)
		if err != nil {
			return nil, fmt.Errorf("--demo: %w", err)
		}
	}
	if cfg.Engines, err = buildEngines(o.enginesFile, engines.Config{ClaudeBinary: o.claudeBin, ProjectConfig: o.projectConfig, ChildEnv: cfg.ChildEnv, Logger: logger}); err != nil {
		return nil, fmt.Errorf("%w: %w", errAgentUsage, err)
	}
	if a.h, err = harness.New(cfg); err != nil {
		return nil, err
	}
	a.cleanup = append(a.cleanup, func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = a.h.Shutdown(ctx)
	})
	if o.session != "" {
		sess, err := a.h.SessionIn(o.cwd, o.session)
		if err != nil {
			return nil, fmt.Errorf("--session %s (in %s): %w", o.session, o.cwd, err)
		}
		a.sessionID = sess.ID
		o.engine = sess.Engine
	} else {
		if o.engine != "" && !slices.Contains(a.h.EngineNames(), o.engine) {
			more := ""
			if o.set["engines"] || o.enginesFile != "" {
				more = " (with --engines' entries)"
			}
			return nil, usage("--engine %q: want one of %s%s", o.engine, strings.Join(a.h.EngineNames(), ", "), more)
		}
		sess, err := a.h.NewSession(harness.SessionSpec{ProjectRoot: o.cwd, Persona: o.persona, Mode: o.mode, Engine: o.engine, Model: o.model,
			Isolation: o.iso.isolation, Base: o.iso.base, Branch: o.iso.branch})
		if err != nil {
			if errors.Is(err, harness.ErrPersonaNotFound) || errors.Is(err, harness.ErrInvalidPersona) {
				return nil, fmt.Errorf("%w: --persona: %w", errAgentUsage, err)
			}
			if errors.Is(err, harness.ErrNotGitRepo) || errors.Is(err, harness.ErrBaseNotFound) || errors.Is(err, harness.ErrInvalidIsolation) {
				return nil, fmt.Errorf("%w: --isolation: %w", errAgentUsage, err)
			}
			return nil, err
		}
		a.sessionID, o.engine = sess.ID, sess.Engine
	}
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, st := range a.h.Engines(cctx) {
		if st.Name == o.engine && !st.Available {
			return nil, fmt.Errorf("engine %s cannot run here: %s", st.Name, st.Reason)
		}
	}
	a.srv, err = agentserver.New(agentserver.Config{Harness: a.h, SessionID: a.sessionID, Token: o.token, Addr: o.addr,
		AllowHosts: o.allowHosts, AllowOrigins: o.allowOrigins, Heartbeat: o.heartbeat, Logger: logger})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, err
	}
	a.url = "http://" + ln.Addr().String()
	a.hs = httpguard.Server(a.srv)
	a.served = make(chan error, 1)
	go func() { a.served <- a.hs.Serve(ln) }()
	return a, nil
}

func (a *runningAgent) runCleanup() {
	for i := len(a.cleanup) - 1; i >= 0; i-- {
		a.cleanup[i]()
	}
	a.cleanup = nil
}

// stop interrupts the running turn (waiting up to shutdownGrace, then
// killing what is left), ends the event streams, stops serving and
// removes the demo's scratch files. No process outlives it.
func (a *runningAgent) stop() error {
	var err error
	if !gracefulStop(nil, shutdownGrace, nil, func(ctx context.Context) { err = a.shutdown(ctx) }) {
		return errors.New("the agent server did not stop in time")
	}
	return err
}

// shutdown is stop within ctx: the running turn is interrupted and
// waited for until ctx ends, then killed (whole process group); then the
// event streams end (a stuck one at once) and the server stops.
func (a *runningAgent) shutdown(ctx context.Context) error {
	herr := a.h.Shutdown(ctx) // the turn's last events reach the streams
	a.srv.Close()
	_ = a.hs.Shutdown(ctx)
	_ = a.hs.Close()
	err := <-a.served
	a.runCleanup()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if err == nil && herr != nil {
		err = herr
	}
	return err
}
