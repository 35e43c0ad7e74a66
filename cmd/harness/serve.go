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
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/gateway"
	"github.com/chirality/harness/internal/httpguard"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/internal/sse"
	"github.com/chirality/harness/logging"
	"github.com/chirality/harness/web"
)

type serveFlags struct {
	addr, claudeBin, token, permissionMode, stateDir string
	projectConfig                                    bool
	roots, allowOrigins, allowHosts, allowedTools    stringList
	maxBody                                          int64
	maxTurns, maxStreams, maxSessionStreams          int
	allowBypass, demo, verbose                       bool
	approvals                                        bool
	sandbox                                          bool
	sandboxOpenNetwork                               []string
	approvalTimeout, warmIdle, shutdownGrace         time.Duration
	warm                                             int
	noCheckpoints                                    bool
	engine                                           string
	enginesFile                                      string
	mcp                                              mcpConfigFlag
	cluster                                          clusterFlags // cluster.go
	notify                                           notifyFlags  // notify.go
}

func (c *cli) serveCmd() *cobra.Command {
	var f serveFlags
	var changed func(string) bool
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "serve the /api/harness gateway and the web console",
		Long: `usage: harness serve [flags]

Serves the /api/harness gateway (REST and SSE; see gateway/API.md) and the
web console on --addr until SIGINT or SIGTERM: running turns are then
interrupted and get --shutdown-grace to finish (a second signal: killed
at once). The one line on stdout is the ready line, "harness: listening
on http://ADDR"; the log goes to stderr.
`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			stop := c.serveStop
			if !c.hasServeStop {
				sigs := notifyStop()
				defer signal.Stop(sigs)
				stop = sigs
			}
			if err := f.cluster.resolve(changed); err != nil {
				fmt.Fprintln(c.stderr, "harness serve: --cluster-config:", err)
				return exitWith(2)
			}
			return exitWith(c.serve(&f, stop))
		},
	}
	fs := cmd.Flags()
	flagAddr(cmd, &f.addr, "127.0.0.1:8787")
	flagRoot(cmd, &f.roots)
	flagClaudeBin(cmd, &f.claudeBin, "")
	flagProjectConfig(cmd, &f.projectConfig)
	flagToken(cmd, &f.token, "bearer token every /api request must carry")
	flagAllowHostOrigin(cmd, &f.allowHosts, &f.allowOrigins, "origin allowed to call the API cross-origin (repeatable)")
	fs.Int64Var(&f.maxBody, "max-body", gateway.DefaultMaxBody, "request body limit in bytes")
	fs.DurationVar(&f.shutdownGrace, "shutdown-grace", shutdownGrace, "on SIGINT/SIGTERM, how long running turns get to finish before they are killed (a second signal: at once); the server exits within it + 2 s")
	fs.IntVar(&f.maxStreams, "max-streams", sse.DefaultMaxStreams, "event streams open at once, in all (beyond: 503 with Retry-After; -1 = no cap)")
	fs.IntVar(&f.maxSessionStreams, "max-session-streams", sse.DefaultMaxStreamsPerKey, "event streams open at once per session (beyond: 503 with Retry-After; -1 = no cap)")
	flagPermissionMode(cmd, &f.permissionMode, "", "permission mode for every turn, over the personas' (default: the persona's, else dontAsk; with --demo, default, so the demo's tool asks)")
	flagMaxTurns(cmd, &f.maxTurns, "max turns for every turn, over the personas' and the modes'")
	flagAllowedTools(cmd, &f.allowedTools, "tools to auto-approve on every turn, e.g. 'Bash(git status:*)' (repeatable)")
	fs.BoolVar(&f.allowBypass, "allow-bypass", false, "allow the bypassPermissions mode (off: such turns are refused)")
	flagStateDir(fs, &f.stateDir)
	flagDemo(cmd, &f.demo)
	flagVerbose(cmd, &f.verbose, "debug logging on stderr")
	flagSandbox(cmd, &f.sandbox, "run every session's agent in the kernel sandbox (Landlock): it writes only its workdir minus the protected paths, its own state and a private TMPDIR; turns fail on a kernel without Landlock")
	flagSandboxOpenNetwork(cmd, &f.sandboxOpenNetwork)
	fs.BoolVar(&f.approvals, "approvals", true, "in permission modes default, acceptEdits and plan, ask a person before a tool runs that no rule allows")
	flagApprovalTimeout(cmd, &f.approvalTimeout, harness.DefaultApprovalTimeout, "how long a tool waits for an answer before it is denied")
	flagWarm(cmd, &f.warm, 2, "CLI processes kept started ahead for sessions' next turns (0 = off; ~150 MB each)")
	fs.DurationVar(&f.warmIdle, "warm-idle", harness.DefaultWarmIdle, "how long a warm CLI waits for its message before it is stopped")
	flagEngine(cmd, &f.engine, "claude-code", "engine of sessions that name none, or one of --engines")
	flagNoCheckpoints(cmd, &f.noCheckpoints)
	flagEngines(cmd, &f.enginesFile)
	flagMCPConfig(cmd, &f.mcp)
	flagCluster(cmd, &f.cluster)
	flagNotify(cmd, &f.notify)
	changed = func(name string) bool { return fs.Changed(name) }
	return cmd
}

// serve is `harness serve ARGS…` that stops when stop receives (nil:
// never); a second receive cuts the grace period short.
func serve(args []string, stdout, stderr io.Writer, stop <-chan os.Signal) int {
	c := &cli{stdin: os.Stdin, stdout: stdout, stderr: stderr, serveStop: stop, hasServeStop: true}
	return c.run(append([]string{"serve"}, args...))
}

// serve runs the server until stop receives; a second receive cuts the
// grace period short. The one line on stdout is the ready line.
func (c *cli) serve(f *serveFlags, stop <-chan os.Signal) int {
	stdout, stderr := c.stdout, c.stderr
	var err error
	if f.token == "" {
		f.token = os.Getenv("HARNESS_TOKEN")
	}
	if err := secrets.CheckToken(f.token); err != nil {
		fmt.Fprintf(stderr, "harness serve: --token (or HARNESS_TOKEN): %v\n", err)
		return 2
	}
	host, _, err := net.SplitHostPort(f.addr)
	if err != nil {
		fmt.Fprintf(stderr, "harness serve: --addr %q: %v\n", f.addr, err)
		return 2
	}
	if !isLoopbackHost(host) && f.token == "" {
		fmt.Fprintf(stderr, "harness serve: refusing to listen on %s without a token: anyone who can reach it could run an agent on this machine.\n"+
			"  Set --token (or HARNESS_TOKEN), or bind 127.0.0.1.\n", f.addr)
		return 2
	}
	if f.permissionMode != "" && !slices.Contains(engine.PermissionModes, f.permissionMode) {
		fmt.Fprintf(stderr, "harness serve: --permission-mode %q is not one of %s\n", f.permissionMode, strings.Join(engine.PermissionModes, ", "))
		return 2
	}
	if f.maxTurns < 0 {
		fmt.Fprintf(stderr, "harness serve: --max-turns %d is negative\n", f.maxTurns)
		return 2
	}
	for _, r := range f.roots {
		if msg := checkDir("--root", r); msg != "" {
			fmt.Fprintln(stderr, "harness serve:", msg)
			return 2
		}
	}
	if f.permissionMode == harness.BypassPermissionMode && !f.allowBypass {
		fmt.Fprintln(stderr, "harness serve: --permission-mode bypassPermissions needs --allow-bypass")
		return 2
	}

	level := zerolog.InfoLevel
	if f.verbose {
		level = zerolog.DebugLevel
	}
	logger := zerolog.New(zerolog.ConsoleWriter{Out: logging.Scrubbed(stderr), TimeFormat: time.TimeOnly, NoColor: !isTerminal(stderr)}).
		Level(level).With().Timestamp().Logger()

	notifyCfg, notifying, err := f.notify.config(&logger)
	if err != nil {
		fmt.Fprintln(stderr, "harness serve:", err)
		return 2
	}
	cfg := harness.Config{
		Roots: f.roots, StateDir: f.stateDir, Aliases: engines.Aliases,
		PermissionMode: f.permissionMode, AllowBypass: f.allowBypass, MaxTurns: f.maxTurns,
		AllowedTools: f.allowedTools, Logger: &logger,
		Approvals: f.approvals, ApprovalTimeout: f.approvalTimeout, WarmTurns: f.warm, WarmIdle: f.warmIdle,
		Sandbox: f.sandbox, SandboxOpenNetwork: f.sandboxOpenNetwork, DefaultEngine: f.engine, Checkpoints: harness.CheckpointConfig{Off: f.noCheckpoints}, MCP: f.mcp.Config(),
		ResumeQueues: true, // the server goes on with the prompt queues a previous one left (issue 32)
	}
	var cleanup []func()
	defer func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}()
	if f.demo {
		undo, err := setUpDemo(&cfg, stderr, "harness serve")
		cleanup = append(cleanup, undo)
		if err != nil {
			fmt.Fprintln(stderr, "harness serve --demo:", err)
			return 1
		}
	}
	if cfg.Engines, err = buildEngines(f.enginesFile, engines.Config{ClaudeBinary: f.claudeBin, ProjectConfig: f.projectConfig, ChildEnv: cfg.ChildEnv, Logger: &logger}); err != nil {
		fmt.Fprintln(stderr, "harness serve:", err)
		return 2
	}
	// A cluster node (--node): it publishes every event the core stores
	// (Harness.Watch) and serves other nodes' sessions (Config.Wrap);
	// without --node no NATS starts.
	node, err := f.cluster.start(cfg.StateDir, &logger)
	if err != nil {
		fmt.Fprintln(stderr, "harness serve: cluster:", err)
		return 2
	}
	var wrap func(http.Handler) (http.Handler, error)
	if node != nil {
		cleanup = append(cleanup, func() { _ = node.Close() })
		logger.Info().Str("node", node.Name()).Str("routes", node.ClusterAddr()).Msg("cluster node started")
	}
	h, err := harness.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "harness serve:", userError(err))
		if errors.Is(err, harness.ErrUnknownEngine) {
			return 2
		}
		return 1
	}
	if node != nil {
		wrap = func(api http.Handler) (http.Handler, error) { return node.Attach(h, api) }
	}
	warnUnavailable(h, f.engine, stderr)
	demoRoot := ""
	if f.demo {
		demoRoot = h.Roots()[0]
	}
	gw, err := gateway.New(gateway.Config{
		Harness: h, Addr: f.addr, Token: f.token, AllowHosts: f.allowHosts, AllowOrigins: f.allowOrigins,
		MaxBody: f.maxBody, Console: web.Handler(), Logger: &logger, DemoRoot: demoRoot,
		MaxStreams: f.maxStreams, MaxSessionStreams: f.maxSessionStreams, Wrap: wrap,
	})
	if err != nil {
		fmt.Fprintln(stderr, "harness serve:", err)
		_ = h.Shutdown(context.Background())
		return 2
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		fmt.Fprintln(stderr, "harness serve:", err)
		_ = h.Shutdown(context.Background())
		return 1
	}
	if notifying {
		stopNotify, err := startNotify(h, notifyCfg, ln.Addr())
		cleanup = append(cleanup, stopNotify) // after h.Shutdown: what is queued goes out
		if err != nil {
			fmt.Fprintln(stderr, "harness serve:", err)
			_ = ln.Close()
			_ = h.Shutdown(context.Background())
			return 2
		}
	}
	srv := httpguard.Server(gw) // header, idle and size bounds; bodies are bounded by the gateway's guard
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info().Strs("roots", h.Roots()).Bool("token", f.token != "").Bool("demo", f.demo).Msg("serving")
	// Before the ready line, so whoever waits for it has this too.
	if f.demo {
		fmt.Fprintf(stderr, "harness serve --demo: try it: open http://%s in a browser and send \"hello\" (an answer and a tool run), "+
			"\"touch a file\" (you are asked before the tool runs), \"a long answer\" (press stop midway) or \"/demo error\" (a failed turn); Ctrl-C ends the demo\n", ln.Addr())
		if roots := h.Roots(); len(roots) == 1 {
			fmt.Fprintf(stderr, "harness serve --demo: continue a session from a terminal: harness turn --demo --project-root %s --session ID \"your message\"\n", roots[0])
		}
	}
	fmt.Fprintf(stdout, "harness: listening on http://%s\n", ln.Addr())

	status := 0
	select {
	case <-stop:
		logger.Info().Msg("shutting down: interrupting running turns")
	case err := <-served:
		logger.Error().Err(err).Msg("server failed")
		status = 1
	}
	// Stop accepting at once; interrupt turns and let their streams
	// deliver the ends, up to the grace period (a second signal cuts it
	// short), then kill what is left; end the remaining event streams —
	// stuck ones at once — and close the connections.
	finished := gracefulStop(stop, f.shutdownGrace, &logger, func(ctx context.Context) {
		srvDone := make(chan struct{})
		go func() {
			defer close(srvDone)
			_ = srv.Shutdown(ctx) // listeners closed now; waits for the streams below
		}()
		if err := h.Shutdown(ctx); err != nil {
			logger.Warn().Err(err).Msg("turns still running after the grace period were killed")
		}
		gw.Close()
		select {
		case <-srvDone:
		case <-ctx.Done():
		}
		_ = srv.Close()
	})
	if !finished {
		_ = srv.Close()
		return 1
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) && status == 0 {
		status = 1
	}
	logger.Info().Msg("stopped")
	return status
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// setUpDemo starts the one demo set-up (engines.StartDemo: the demo model
// as a Messages API and a Responses API on loopback, every built-in engine
// pointed at it, a scratch HOME) and applies it to cfg: the children's
// environment, the tools the demo's answers use, and, when cfg has none,
// a scratch project root and session index. The returned func stops the
// demo model and removes the scratch files.
func setUpDemo(cfg *harness.Config, stderr io.Writer, command string) (func(), error) {
	d, err := engines.StartDemo(engines.DemoOptions{Project: len(cfg.Roots) == 0})
	if err != nil {
		return func() {}, err
	}
	cfg.ChildEnv = append(cfg.ChildEnv, d.Env...)
	cfg.AllowedTools = append(cfg.AllowedTools, d.AllowedTools...)
	// The demo shows approvals: a session whose persona sets no mode runs
	// in default, where the demo's `touch` is put to a person (its `ls`
	// is allowed by rule). In dontAsk it was denied unasked (issue 34.3).
	if cfg.DefaultPermissionMode == "" && cfg.PermissionMode == "" {
		cfg.DefaultPermissionMode = "default"
	}
	if cfg.StateDir == "" {
		cfg.StateDir = d.State
	}
	if d.Project != "" {
		cfg.Roots = []string{d.Project}
		fmt.Fprintf(stderr, "%s --demo: scratch project root %s (removed on exit)\n", command, d.Project)
	}
	fmt.Fprintf(stderr, "%s --demo: demo model at %s (Messages API) and %s (Responses API); every engine uses it, no API key, nothing leaves this machine\n",
		command, d.MessagesURL, d.ResponsesURL)
	return func() { _ = d.Close() }, nil
}

// warnUnavailable says at start, on stderr, when the default engine cannot
// run here (the CLI not installed, no key): its sessions would fail, and
// before this only /health said so.
func warnUnavailable(h *harness.Harness, name string, stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lower := strings.ToLower(name)
	if alias, ok := engines.Aliases[lower]; ok {
		lower = alias
	}
	for _, st := range h.Engines(ctx) {
		if st.Name == lower && !st.Available {
			fmt.Fprintf(stderr, "harness serve: warning: the default engine %s cannot run here, so its turns will fail: %s\n", st.Name, st.Reason)
		}
	}
}
