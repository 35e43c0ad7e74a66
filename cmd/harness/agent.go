package main

import (
	"context"
	"errors"
	"flag"
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

	"github.com/chirality/harness"
	"github.com/chirality/harness/agentserver"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/internal/httpguard"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/logging"
	"github.com/chirality/harness/persona"
)

func init() { register("agent", runAgent) }

const agentUsage = `usage: harness agent serve [flags]

Serves one harness session over HTTP; the terminal UI (harness tui)
talks to it. The session is made in the project's .chirality/ on start
(--persona, --mode, --engine), or --session ID continues one; its turns
run on the core like every door's: the persona's prompt and tools, the
event log, warm turns and approvals (in permission mode default, a tool
no rule allows waits for POST /approval).

  GET  /events     SSE: user, text and reasoning (one event per completed
                   block), tool_call, tool_result, status, approval,
                   approval_resolved; every event has an id, and
                   Last-Event-ID (or ?after=ID) replays from the log;
                   ?deltas=1 adds text_delta / reasoning_delta
  POST /prompt     {"content": "…"}             (409 while one runs)
  POST /cancel                                   interrupt the turn
  POST /approval   {"requestId": "…", "decision": "allow|deny|always"}

Loopback only unless --token. The gateway's guard: a foreign Origin is
refused on every route, a POST with a body must be application/json.
SIGINT or SIGTERM interrupts the turn and stops (a second one at once).
`

func runAgent(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprint(stdout, agentUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] != "serve" {
		fmt.Fprintf(stderr, "harness agent: unknown subcommand %q\n%s", args[0], agentUsage)
		return 2
	}
	sigs := notifyStop()
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the first signal starts the shutdown; gracefulStop takes a second
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	return agentServe(ctx, sigs, args[1:], stdout, stderr)
}

// agentOptions are what `agent serve` and `tui` (without --url) run an
// agent server with.
type agentOptions struct {
	engine, cwd, model, persona, mode, session, permissionMode, claudeBin string
	maxTurns, warm                                                        int
	demo                                                                  bool
	approvalTimeout                                                       time.Duration

	// Server side.
	addr, token              string
	allowHosts, allowOrigins []string
	heartbeat                time.Duration
	enginesFile              string
	set                      map[string]bool // the flags given
}

// agentFlags declares the flags `agent serve` and `tui` share. withEngines
// says whether the command has --engines (its help mentions it then).
func agentFlags(fs *flag.FlagSet, o *agentOptions, withEngines bool) {
	engines := ""
	if withEngines {
		engines = " or an engine of --engines"
	}
	fs.StringVar(&o.engine, "engine", "", "engine of a new session: anthropic (the native loop on the Messages API), claude-code (the Claude Code CLI), codex, opencode, claude-acp, copilot"+engines+" (default: the persona's, else anthropic)")
	fs.StringVar(&o.cwd, "cwd", "", "project directory the agent works in (default: the current directory)")
	fs.StringVar(&o.model, "model", "", "model of a new session (default: the persona's, else the engine's; aliases haiku, sonnet, opus)")
	fs.StringVar(&o.persona, "persona", "", "persona of a new session (agents/AGENT_<ID>.md in the project)")
	fs.StringVar(&o.mode, "mode", "workbench", "mode of a new session: workbench, pipeline or direct")
	fs.StringVar(&o.session, "session", "", "continue this session of the project instead of making one")
	fs.StringVar(&o.permissionMode, "permission-mode", "", "permission mode of every turn, over the persona's (default: the persona's, else default: a tool no rule allows is put to the person at the TUI)")
	fs.IntVar(&o.maxTurns, "max-turns", 0, "model calls per prompt (default: the persona's, else the mode's)")
	fs.IntVar(&o.warm, "warm", 1, "start the next turn's agent ahead while the person reads (0 = off)")
	fs.DurationVar(&o.approvalTimeout, "approval-timeout", harness.DefaultApprovalTimeout, "how long a tool waits for an answer before it is denied")
	fs.BoolVar(&o.demo, "demo", false, demoHelp)
	fs.StringVar(&o.claudeBin, "claude-bin", "", claudeBinHelp+" (--engine claude-code)")
}

// flagsSet records which flags fs was given.
func flagsSet(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// agentServe serves until ctx is done (the first SIGINT or SIGTERM), then
// stops as gracefulStop says: a second signal on sigs (nil: none) cuts
// the grace period short.
func agentServe(ctx context.Context, sigs <-chan os.Signal, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness agent serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o agentOptions
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8788", "address to listen on (a non-loopback one needs --token)")
	fs.StringVar(&o.token, "token", "", "bearer token every request must carry (default: $HARNESS_TOKEN)")
	fs.DurationVar(&o.heartbeat, "heartbeat", 30*time.Second, "interval of the SSE heartbeat comments")
	var hosts, origins stringList
	fs.Var(&hosts, "allow-host", "extra Host header value to accept (repeatable)")
	fs.Var(&origins, "allow-origin", "origin allowed to call cross-origin (repeatable; none by default)")
	agentFlags(fs, &o, true)
	fs.StringVar(&o.enginesFile, "engines", "", enginesHelp)
	verbose := fs.Bool("v", false, "debug logging on stderr")
	if code, ok := parseNoArgs(fs, agentUsage, args, stdout, stderr); !ok {
		return code
	}
	o.allowHosts, o.allowOrigins, o.set = hosts, origins, flagsSet(fs)
	if o.token == "" {
		o.token = os.Getenv("HARNESS_TOKEN")
	}
	level := zerolog.InfoLevel
	if *verbose {
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
		for _, f := range []string{"persona", "mode", "engine", "model"} {
			if o.set[f] {
				return nil, usage("--%s is for a new session; --session %s keeps its own", f, o.session)
			}
		}
	} else if !persona.ValidMode(o.mode) {
		return nil, usage("--mode %q: want workbench, pipeline or direct", o.mode)
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
	}
	if o.demo {
		undo, err := setUpDemo(&cfg, stderr)
		a.cleanup = append(a.cleanup, undo)
		if err != nil {
			return nil, fmt.Errorf("--demo: %w", err)
		}
	}
	if cfg.Engines, err = buildEngines(o.enginesFile, engines.Config{ClaudeBinary: o.claudeBin, ChildEnv: cfg.ChildEnv, Logger: logger}); err != nil {
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
		sess, err := a.h.NewSession(harness.SessionSpec{ProjectRoot: o.cwd, Persona: o.persona, Mode: o.mode, Engine: o.engine, Model: o.model})
		if err != nil {
			if errors.Is(err, harness.ErrPersonaNotFound) || errors.Is(err, harness.ErrInvalidPersona) {
				return nil, fmt.Errorf("%w: --persona: %w", errAgentUsage, err)
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

func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "help" }
