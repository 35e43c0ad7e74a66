package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/secrets"
)

// replayOptions are the flags of `harness replay`.
type replayOptions struct {
	projectRoot, claudeBin, permissionMode string
	maxTurns                               int
	printOnly, asJSON, verbose             bool
}

// replayCmd is `harness replay SESSION_ID MESSAGE`: it re-runs a turn of a
// stored session exactly as the gateway would (the saved system prompt
// file, --resume of the stored Claude session, the persona's flags and the
// permission policy) but straight through the driver, without the event
// log or the resume fallback, so a wrapper bug can be told from a model
// bug. The session file is not changed; the Claude conversation is
// continued, as a gateway turn would. Its events are scrubbed as every
// turn's (Harness.StartTurn, ephemeral).
func (c *cli) replayCmd() *cobra.Command {
	var o replayOptions
	cmd := &cobra.Command{
		Use:   "replay SESSION_ID MESSAGE [--project-root DIR] [--print]",
		Short: "re-run a stored session's turn exactly as the gateway would",
		Long: `usage: harness replay SESSION_ID MESSAGE [--project-root DIR] [--print]

Re-runs a turn of a stored Claude Code session exactly as the gateway
would (the saved system prompt, --resume of the stored Claude session, the
persona's flags and the permission policy), straight through the driver,
so a wrapper bug can be told from a model bug. The session file is not
changed; the Claude conversation is continued.
`,
		Args: func(_ *cobra.Command, pos []string) error {
			switch {
			case len(pos) == 0:
				return usageErrorf("missing SESSION_ID and MESSAGE (the id as `harness sessions list` shows it, then the message to re-run)")
			case len(pos) == 1 || strings.TrimSpace(pos[1]) == "":
				return usageErrorf("missing MESSAGE (the message to re-run, quoted)")
			case len(pos) > 2:
				return usageErrorf("unexpected argument %q (quote the MESSAGE)", pos[2])
			}
			return nil
		},
		RunE: func(_ *cobra.Command, pos []string) error { return exitWith(c.replay(&o, pos[0], pos[1])) },
	}
	flagProjectRoot(cmd, &o.projectRoot, "", "look the session up in this project instead of the index")
	cmd.Flags().BoolVar(&o.printOnly, "print", false, "print the command (secrets redacted) instead of running it")
	flagClaudeBin(cmd, &o.claudeBin, "")
	flagPermissionMode(cmd, &o.permissionMode, "", "the server's permission-mode override, if it had one")
	flagMaxTurns(cmd, &o.maxTurns, "the server's max-turns override, if it had one")
	flagJSON(cmd.Flags(), &o.asJSON, "print each event as one JSON line on stdout")
	flagVerbose(cmd, &o.verbose, "log the driver's diagnostics to stderr")
	return cmd
}

// runReplay is `harness replay ARGS…`.
func runReplay(args []string, stdout, stderr io.Writer) int {
	return run(append([]string{"replay"}, args...), stdout, stderr)
}

func (c *cli) replay(o *replayOptions, id, message string) int {
	stdout, stderr := c.stdout, c.stderr
	var err error
	root := ""
	if o.projectRoot != "" {
		if root, err = filepath.Abs(o.projectRoot); err == nil {
			root, err = filepath.EvalSymlinks(root)
		}
		if err != nil {
			fmt.Fprintln(stderr, "harness replay:", userError(err))
			return 1
		}
	}
	s, err := findSession(id, o.projectRoot, root)
	if err != nil {
		fmt.Fprintln(stderr, "harness replay:", userError(err))
		return failCode(err)
	}
	logger := verboseLogger(o.verbose, stderr)
	if s.Engine != "" && s.Engine != engine.ClaudeCode {
		fmt.Fprintf(stderr, "harness replay: session %s runs on %s; replay re-runs Claude Code sessions only\n", s.ID, s.Engine)
		return 1
	}
	// The replay runs the Claude Code CLI itself: the Harness only plans.
	cc := claudecode.NewEngine(claudecode.Config{Binary: o.claudeBin, Logger: &logger})
	h, err := harness.New(harness.Config{Roots: []string{s.ProjectRoot}, Logger: &logger, Engines: []engine.Engine{cc},
		PermissionMode: o.permissionMode, MaxTurns: o.maxTurns, NoProjectLogs: true})
	if err != nil {
		fmt.Fprintln(stderr, "harness replay:", userError(err))
		return 1
	}
	defer shutdownTurns(h)
	plan, err := h.ReplayPlan(s)
	if err != nil {
		fmt.Fprintln(stderr, "harness replay:", userError(err))
		return 1
	}
	opts, err := claudecode.OptsFor(plan.Request)
	if err != nil {
		fmt.Fprintln(stderr, "harness replay:", userError(err))
		return 1
	}
	if o.printOnly {
		bin, err := claudecode.FindBinary(o.claudeBin)
		if err != nil {
			bin = "claude"
		}
		fmt.Fprintln(stdout, replayCommand(bin, opts))
		return 0
	}
	// Through the core, as every turn: its events are scrubbed (the
	// request is the plan's, as the gateway would send it; nothing is
	// stored).
	req := plan.Request
	req.Message, req.PromptChanged = message, false
	return streamTurn("harness replay", func() (*harness.Turn, error) {
		return h.StartTurn(context.Background(), harness.TurnRequest{Engine: engine.ClaudeCode, Message: message, Request: req})
	}, o.asJSON, stdout, stderr)
}

// replayCommand renders a plan's CLI options as a shell command. The
// message goes on stdin as a stream-json user message, so it is not part
// of it; the environment additions are shown with secret values redacted.
func replayCommand(bin string, opts claudecode.TurnOpts) string {
	var b strings.Builder
	b.WriteString("cd " + shellQuote(opts.Cwd) + " && ")
	for _, kv := range opts.Env {
		name, value, _ := strings.Cut(kv, "=")
		if secrets.IsSecretEnvName(name) {
			value = "[REDACTED]"
		}
		b.WriteString(name + "=" + shellQuote(value) + " ")
	}
	b.WriteString(shellQuote(bin))
	for _, a := range opts.Args() {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("  # the message goes on stdin as a stream-json user message")
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@%+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
