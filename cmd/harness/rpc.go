package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/logging"
	"github.com/chirality/harness/rpc"
)

const rpcUsage = `usage: harness rpc [--cwd DIR] [--root ROOT...] [flags]

Serves one client JSON-RPC 2.0 on stdin/stdout (newline-delimited; stdout
carries only JSON-RPC, logs go to stderr): threads, turns, items and
approvals, persisted under DIR/.harness/threads. A thread's directory
(thread.create {directory}) must be DIR or lie in it, or in a --root. It ends at the end of its
input or on SIGTERM or SIGINT: running turns are interrupted (their ends are
still written), what has not stopped after --grace is killed, and it exits 0
(1 when it had to kill). A second signal kills the turns and exits at once.
The protocol: rpc/PROTOCOL.md.
`

// rpcOptions are the flags of `harness rpc`.
type rpcOptions struct {
	cwd, claudeBin, perm, enginesFile string
	projectConfig                     bool
	roots                             stringList
	timeout, grace                    time.Duration
	demo, verbose, noCheckpoints      bool
	mcp                               mcpConfigFlag
}

func (c *cli) rpcCmd() *cobra.Command {
	var o rpcOptions
	cmd := &cobra.Command{
		Use:   "rpc [--cwd DIR] [--root ROOT...] [flags]",
		Short: "JSON-RPC 2.0 on stdin/stdout: threads, turns, approvals",
		Long:  rpcUsage,
		Args:  noArgs,
		RunE:  func(*cobra.Command, []string) error { return exitWith(c.rpc(&o)) },
	}
	flagCwd(cmd, &o.cwd, "project directory (default: the current one)")
	flagRoot(cmd, &o.roots)
	flagClaudeBin(cmd, &o.claudeBin, "")
	flagProjectConfig(cmd, &o.projectConfig)
	flagPermissionMode(cmd, &o.perm, "default", "permission mode of turns whose persona sets none: default asks through approval.requested; dontAsk never asks")
	flagApprovalTimeout(cmd, &o.timeout, harness.DefaultApprovalTimeout, "how long a tool waits for approval.respond before it is denied")
	flagDemo(cmd, &o.demo)
	flagNoCheckpoints(cmd, &o.noCheckpoints)
	flagEngines(cmd, &o.enginesFile)
	flagMCPConfig(cmd, &o.mcp)
	flagVerbose(cmd, &o.verbose, "log to stderr")
	flagGrace(cmd, &o.grace, rpc.DefaultGrace)
	return cmd
}

// rpcMain is `harness rpc ARGS…` reading stdin.
func rpcMain(stdin io.Reader, args []string, stdout, stderr io.Writer) int {
	return (&cli{stdin: stdin, stdout: stdout, stderr: stderr}).run(append([]string{"rpc"}, args...))
}

func (c *cli) rpc(o *rpcOptions) int {
	stdin, stdout, stderr := c.stdin, c.stdout, c.stderr
	if msg := checkDir("--cwd", o.cwd); msg != "" {
		fmt.Fprintln(stderr, "harness rpc:", msg)
		return 2
	}
	for _, r := range o.roots {
		if msg := checkDir("--root", r); msg != "" {
			fmt.Fprintln(stderr, "harness rpc:", msg)
			return 2
		}
	}
	dir := o.cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	dir, err := filepath.Abs(dir)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		fmt.Fprintln(stderr, "harness rpc:", err)
		return 1
	}
	logger := zerolog.Nop()
	if o.verbose {
		logger = zerolog.New(zerolog.ConsoleWriter{Out: logging.Scrubbed(stderr), TimeFormat: time.TimeOnly}).With().Timestamp().Logger()
	}
	// The threads' default directory is always allowed; --root adds the
	// trees a thread.create {directory} may also name.
	cfg := harness.Config{Roots: append([]string{dir}, o.roots...), Logger: &logger, DefaultPermissionMode: o.perm,
		Approvals: true, ApprovalTimeout: o.timeout, Aliases: engines.Aliases,
		Checkpoints: harness.CheckpointConfig{Off: o.noCheckpoints}, MCP: o.mcp.Config()}
	if o.demo {
		d, err := engines.StartDemo(engines.DemoOptions{})
		if err != nil {
			fmt.Fprintln(stderr, "harness rpc --demo:", err)
			return 1
		}
		defer d.Close()
		cfg.ChildEnv, cfg.AllowedTools = d.Env, d.AllowedTools
	}
	if cfg.Engines, err = buildEngines(o.enginesFile, engines.Config{ClaudeBinary: o.claudeBin, ProjectConfig: o.projectConfig, ChildEnv: cfg.ChildEnv, Logger: &logger}); err != nil {
		fmt.Fprintln(stderr, "harness rpc:", err)
		return 2
	}
	h, err := harness.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "harness rpc:", err)
		return 1
	}
	// Serve until the input ends (Serve then interrupts the turns and waits
	// up to --grace for their ends) or a signal comes; then stop as
	// gracefulStop says: the turns get --grace and one second more, a
	// second signal kills them (the whole process groups) at once.
	sigs := notifyStop()
	defer signal.Stop(sigs)
	serveCtx, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	served := make(chan error, 1)
	go func() {
		served <- rpc.Serve(serveCtx, h, stdin, stdout, rpc.Options{Cwd: dir, Logger: &logger, Grace: o.grace})
	}()
	var serr error
	serving := true
	stopGrace := time.Second // the input ended: Serve has had its grace
	select {
	case err = <-served:
		serving = false
	case <-sigs:
		logger.Info().Msg("signal: stopping (a second one kills the turns)")
		stopGrace += o.grace
	}
	finished := gracefulStop(sigs, stopGrace, &logger, func(ctx context.Context) {
		stopServing()
		if serving {
			select {
			case err = <-served:
			case <-ctx.Done():
			}
		}
		serr = h.Shutdown(ctx) // ctx done: kills at once, which ends Serve's wait
	})
	if !finished {
		fmt.Fprintln(stderr, "harness rpc: the turns did not stop in time")
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "harness rpc:", err)
		return 1
	}
	if serr != nil {
		fmt.Fprintln(stderr, "harness rpc: turns still running at the end of the grace period were killed")
		return 1
	}
	return 0
}
