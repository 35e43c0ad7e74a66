package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/chirality/harness/tui"
)

const tuiUsage = `usage: harness tui [--url URL [--token T]] [flags]

A conversation with the agent in the terminal. With --url it talks to a
running harness agent serve; without, it starts one in-process on a
loopback port for the current directory, with a random token only it
knows (--engine, --persona, --session, --demo…).
Keys: Enter send · Ctrl+Enter newline (Alt+Enter or Ctrl+J where the
terminal cannot send Ctrl+Enter) · Ctrl+C stop / quit · Up/Down history ·
PageUp/PageDown scroll · Ctrl+U clear · ? or F1 help; when a tool asks:
a allow · d deny · w always allow.
`

func (c *cli) tuiCmd() *cobra.Command {
	var o agentOptions
	var url, token, logFile string
	cmd := &cobra.Command{
		Use:   "tui [--url URL [--token T]] [flags]",
		Short: "a conversation with the agent in the terminal",
		Long:  tuiUsage,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.set = flagsSet(cmd)
			return exitWith(c.tui(o, url, token, logFile))
		},
	}
	flagURL(cmd.Flags(), &url, "", "agent server to talk to (default: start one in-process)")
	flagToken(cmd, &token, "its bearer token")
	cmd.Flags().StringVar(&logFile, "log", defaultTUILog(), "file for the TUI's log (invalid events are written there, never to the screen)")
	agentFlags(cmd, &o, false)
	return cmd
}

func (c *cli) tui(o agentOptions, url, token, logFile string) int {
	stderr := c.stderr
	if token == "" {
		token = os.Getenv("HARNESS_TOKEN")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if url == "" {
		a, err := startEmbeddedAgent(o)
		if err != nil {
			fmt.Fprintln(stderr, "harness tui:", userError(err))
			if errors.Is(err, errAgentUsage) {
				return 2
			}
			return 1
		}
		defer a.stop()
		url, token = a.url, a.token
	}
	if err := tui.Run(ctx, tui.Options{URL: url, Token: token, LogFile: logFile}); err != nil {
		fmt.Fprintln(stderr, "harness tui:", userError(err))
		return 1
	}
	return 0
}

// startEmbeddedAgent starts the TUI's own agent server: on a loopback
// port, with a random token that only this TUI knows (a page in the
// user's browser cannot guess it, and the guard refuses its Origin and
// its text/plain anyway), logging nowhere (the screen is the TUI's).
func startEmbeddedAgent(o agentOptions) (*runningAgent, error) {
	o.addr, o.token = "127.0.0.1:0", randomToken()
	o.allowHosts, o.allowOrigins = nil, nil
	nop := zerolog.Nop()
	return startAgent(o, &nop, io.Discard)
}

// randomToken is 256 random bits.
func randomToken() string { return rand.Text() + rand.Text() }

func defaultTUILog() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".harness", "tui.log")
}
