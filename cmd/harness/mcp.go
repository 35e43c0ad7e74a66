package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/logging"
	"github.com/chirality/harness/mcpserver"
)

const mcpUsage = `usage: harness mcp [flags]

Serves the harness as a Model Context Protocol server on stdin/stdout (one
client; stdout carries only MCP, logs go to stderr). Tools: list_engines,
list_sessions, create_session, run_turn, get_transcript, get_usage, interrupt (package
mcpserver documents them). Project roots must lie in a --root. A tool that
asks for approval is asked of the client's user by MCP elicitation where the
client supports it, else denied. It ends at the end of its input or on
SIGTERM or SIGINT: running turns are interrupted, and killed after --grace.

For Claude Code: {"mcpServers": {"harness": {"command": "harness", "args": ["mcp", "--root", "/path/to/projects"]}}}
`

// mcpOptions are the flags of `harness mcp`.
type mcpOptions struct {
	roots                                       stringList
	claudeBin, perm, enginesFile, engine, state string
	projectConfig                               bool
	timeout, turnTimeout, grace                 time.Duration
	demo, verbose                               bool
	mcp                                         mcpConfigFlag
}

func (c *cli) mcpCmd() *cobra.Command {
	var o mcpOptions
	cmd := &cobra.Command{
		Use:   "mcp [flags]",
		Short: "the harness as an MCP server on stdin/stdout: sessions and turns on any engine as tools",
		Long:  mcpUsage,
		Args:  noArgs,
		RunE:  func(*cobra.Command, []string) error { return exitWith(c.mcpServe(&o)) },
	}
	flagRoot(cmd, &o.roots)
	flagClaudeBin(cmd, &o.claudeBin, "")
	flagProjectConfig(cmd, &o.projectConfig)
	flagPermissionMode(cmd, &o.perm, "default", "permission mode of turns whose persona sets none: default asks the client (elicitation); dontAsk never asks")
	flagApprovalTimeout(cmd, &o.timeout, harness.DefaultApprovalTimeout, "how long a tool waits for the client's answer before it is denied")
	flagEngine(cmd, &o.engine, "", "engine of sessions whose request and persona name none")
	flagEngines(cmd, &o.enginesFile)
	flagMCPConfig(cmd, &o.mcp)
	flagDemo(cmd, &o.demo)
	flagVerbose(cmd, &o.verbose, "log to stderr")
	flagStateDir(cmd.Flags(), &o.state)
	cmd.Flags().DurationVar(&o.turnTimeout, "turn-timeout", mcpserver.DefaultTurnTimeout, "longest run_turn: past it the turn is interrupted")
	flagGrace(cmd, &o.grace, 5*time.Second)
	return cmd
}

// nopWriteCloser keeps the transport from closing stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func (c *cli) mcpServe(o *mcpOptions) int {
	stderr := c.stderr
	for _, r := range o.roots {
		if msg := checkDir("--root", r); msg != "" {
			fmt.Fprintln(stderr, "harness mcp:", msg)
			return 2
		}
	}
	logger := zerolog.Nop()
	if o.verbose {
		logger = zerolog.New(zerolog.ConsoleWriter{Out: logging.Scrubbed(stderr), TimeFormat: time.TimeOnly}).With().Timestamp().Logger()
	}
	cfg := harness.Config{Roots: o.roots, StateDir: o.state, Logger: &logger, DefaultPermissionMode: o.perm,
		Approvals: true, ApprovalTimeout: o.timeout, Aliases: engines.Aliases, DefaultEngine: o.engine, MCP: o.mcp.Config()}
	if o.demo {
		undo, err := setUpDemo(&cfg, stderr, "harness mcp")
		defer undo()
		if err != nil {
			fmt.Fprintln(stderr, "harness mcp --demo:", err)
			return 1
		}
	}
	var err error
	if cfg.Engines, err = buildEngines(o.enginesFile, engines.Config{ClaudeBinary: o.claudeBin, ProjectConfig: o.projectConfig, ChildEnv: cfg.ChildEnv, Logger: &logger}); err != nil {
		fmt.Fprintln(stderr, "harness mcp:", err)
		return 2
	}
	h, err := harness.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "harness mcp:", userError(err))
		return 2
	}
	srv := mcpserver.New(h, mcpserver.Options{Version: version, TurnTimeout: o.turnTimeout})
	sigs := notifyStop()
	defer signal.Stop(sigs)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() {
		served <- srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(c.stdin), Writer: nopWriteCloser{c.stdout}, MaxLineLength: 8 << 20})
	}()
	select {
	case err = <-served:
	case <-sigs:
		logger.Info().Msg("signal: stopping (a second one kills the turns)")
		stop()
	}
	var serr error
	if !gracefulStop(sigs, o.grace+time.Second, &logger, func(ctx context.Context) { serr = h.Shutdown(ctx) }) {
		fmt.Fprintln(stderr, "harness mcp: the turns did not stop in time")
		return 1
	}
	if serr != nil {
		fmt.Fprintln(stderr, "harness mcp: turns still running at the end of the grace period were killed")
		return 1
	}
	if err != nil {
		// The SDK ends Run on a line that is not JSON-RPC: say so, not a
		// silent exit 0 a client cannot tell from a clean end of input.
		fmt.Fprintln(stderr, "harness mcp: input is not MCP (JSON-RPC 2.0, one message a line):", err)
		return 1
	}
	return 0
}
