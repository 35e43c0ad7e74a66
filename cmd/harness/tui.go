package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/agentserver"
	"github.com/chirality/harness/tui"
)

func init() { register("tui", runTUI) }

const tuiUsage = `usage: harness tui [--url URL [--token T]] [flags]

A conversation with the agent in the terminal. With --url it talks to a
running harness agent serve; without, it starts one in-process on a
loopback port for the current directory (--engine, --model, --demo).
Keys: Enter send · Ctrl+Enter newline (Alt+Enter or Ctrl+J where the
terminal cannot send Ctrl+Enter) · Ctrl+C stop / quit · Up/Down history ·
PageUp/PageDown scroll · Ctrl+U clear · ? or F1 help.
`

func runTUI(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness tui", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "agent server to talk to (default: start one in-process)")
	token := fs.String("token", "", "its bearer token (default: $HARNESS_TOKEN)")
	logFile := fs.String("log", defaultTUILog(), "file for the TUI's log (invalid events are written there, never to the screen)")
	var o agentserver.Options
	agentFlags(fs, &o)
	if code, ok := parseNoArgs(fs, tuiUsage, args, stdout, stderr); !ok {
		return code
	}
	if *token == "" {
		*token = os.Getenv("HARNESS_TOKEN")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	if *url == "" {
		o.Addr, o.Token = "127.0.0.1:0", *token
		nop := zerolog.Nop()
		o.Logger = &nop // the screen is the TUI's
		sctx, cancel := context.WithCancel(ctx)
		defer func() { cancel(); <-served }()
		ready := make(chan string, 1)
		go func() { served <- agentserver.Run(sctx, o, func(u string) { ready <- u }) }()
		select {
		case *url = <-ready:
		case err := <-served:
			served <- nil
			fmt.Fprintln(stderr, "harness tui:", err)
			return 1
		}
	} else {
		served <- nil
	}
	if err := tui.Run(ctx, tui.Options{URL: *url, Token: *token, LogFile: *logFile}); err != nil {
		fmt.Fprintln(stderr, "harness tui:", err)
		return 1
	}
	return 0
}

func defaultTUILog() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".harness", "tui.log")
}
