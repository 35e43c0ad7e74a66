package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/agentserver"
	"github.com/chirality/harness/engine"
)

func init() { register("agent", runAgent) }

const agentUsage = `usage: harness agent serve [flags]

Serves one conversation with an agent over HTTP: GET /events (SSE),
POST /prompt {"content"}, POST /cancel. The terminal UI (harness tui)
talks to it.
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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return agentServe(ctx, args[1:], stdout, stderr)
}

// agentFlags are the flags `agent serve` and `tui` share.
func agentFlags(fs *flag.FlagSet, o *agentserver.Options) {
	fs.StringVar(&o.Engine, "engine", engine.Anthropic, "engine: anthropic (the native loop on the Messages API), claude-code (the Claude Code CLI), an ACP agent (opencode, claude-acp, copilot) or an engine of --engines (agent serve)")
	fs.StringVar(&o.Cwd, "cwd", "", "project directory the agent works in (default: the current directory)")
	fs.StringVar(&o.Model, "model", "", "model (default: the engine's; aliases haiku, sonnet, opus)")
	fs.IntVar(&o.MaxTurns, "max-turns", 0, "model calls per prompt (default: the engine's)")
	fs.StringVar(&o.SystemPromptFile, "system-prompt-file", "", "file whose text is the system prompt")
	fs.BoolVar(&o.Demo, "demo", false, "answer with the built-in demo model (no key needed)")
	fs.StringVar(&o.ClaudeBinary, "claude-bin", "", claudeBinHelp+" (--engine claude-code)")
}

func agentServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness agent serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o agentserver.Options
	fs.StringVar(&o.Addr, "addr", agentserver.DefaultAddr, "address to listen on (a non-loopback one needs --token)")
	fs.StringVar(&o.Token, "token", "", "bearer token every request must carry (default: $HARNESS_TOKEN)")
	fs.DurationVar(&o.Heartbeat, "heartbeat", 30*time.Second, "interval of the SSE heartbeat comments")
	agentFlags(fs, &o)
	enginesFile := fs.String("engines", "", enginesHelp)
	verbose := fs.Bool("v", false, "debug logging on stderr")
	if code, ok := parseNoArgs(fs, agentUsage, args, stdout, stderr); !ok {
		return code
	}
	if o.Token == "" {
		o.Token = os.Getenv("HARNESS_TOKEN")
	}
	level := zerolog.InfoLevel
	if *verbose {
		level = zerolog.DebugLevel
	}
	logger := zerolog.New(zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.TimeOnly, NoColor: !isTerminal(stderr)}).Level(level).With().Timestamp().Logger()
	o.Logger = &logger
	var err error
	if o.Engines, err = loadEngines(*enginesFile, nil, nil, nil, &logger); err != nil {
		fmt.Fprintln(stderr, "harness agent serve:", err)
		return 2
	}
	err = agentserver.Run(ctx, o, func(url string) { fmt.Fprintf(stdout, "harness agent: listening on %s\n", url) })
	if err != nil {
		fmt.Fprintln(stderr, "harness agent serve:", err)
		return 1
	}
	return 0
}

func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "help" }
