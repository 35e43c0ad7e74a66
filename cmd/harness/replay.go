package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/logging"
)

func init() { register("replay", runReplay) }

// runReplay is `harness replay SESSION_ID MESSAGE`: it re-runs a turn of a
// stored session exactly as the gateway would (the saved system prompt
// file, --resume of the stored Claude session, the persona's flags and the
// permission policy) but straight through the driver, without the event
// log or the resume fallback, so a wrapper bug can be told from a model
// bug. The session file is not changed; the Claude conversation is
// continued, as a gateway turn would.
func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		projectRoot, claudeBin, permissionMode string
		maxTurns                               int
		printOnly, asJSON, verbose             bool
	)
	fs.StringVar(&projectRoot, "project-root", "", "look the session up in this project instead of the index")
	fs.BoolVar(&printOnly, "print", false, "print the command (secrets redacted) instead of running it")
	fs.StringVar(&claudeBin, "claude-bin", "", claudeBinHelp)
	fs.StringVar(&permissionMode, "permission-mode", "", "the server's permission-mode override, if it had one")
	fs.IntVar(&maxTurns, "max-turns", 0, "the server's max-turns override, if it had one")
	fs.BoolVar(&asJSON, "json", false, "print each event as one JSON line on stdout")
	fs.BoolVar(&verbose, "v", false, "log the driver's diagnostics to stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: harness replay SESSION_ID MESSAGE [--project-root DIR] [--print]")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 2 || strings.TrimSpace(pos[1]) == "" {
		switch {
		case len(pos) == 0:
			fmt.Fprintln(stderr, "harness replay: missing SESSION_ID and MESSAGE (the id as `harness sessions list` shows it, then the message to re-run)")
		case len(pos) == 1 || strings.TrimSpace(pos[1]) == "":
			fmt.Fprintln(stderr, "harness replay: missing MESSAGE (the message to re-run, quoted)")
		default:
			fmt.Fprintf(stderr, "harness replay: unexpected argument %q (quote the MESSAGE)\n", pos[2])
		}
		fmt.Fprintln(stderr, "usage: harness replay SESSION_ID MESSAGE [--project-root DIR] [--print]")
		return 2
	}
	id, message := pos[0], pos[1]
	root := ""
	if projectRoot != "" {
		if root, err = filepath.Abs(projectRoot); err == nil {
			root, err = filepath.EvalSymlinks(root)
		}
		if err != nil {
			fmt.Fprintln(stderr, "harness replay:", userError(err))
			return 1
		}
	}
	s, err := findSession(id, projectRoot, root)
	if err != nil {
		fmt.Fprintln(stderr, "harness replay:", userError(err))
		return failCode(err)
	}
	logger := zerolog.Nop()
	if verbose {
		logger = zerolog.New(zerolog.ConsoleWriter{Out: logging.Scrubbed(stderr)}).With().Timestamp().Logger()
	}
	if s.Engine != "" && s.Engine != engine.ClaudeCode {
		fmt.Fprintf(stderr, "harness replay: session %s runs on %s; replay re-runs Claude Code sessions only\n", s.ID, s.Engine)
		return 1
	}
	// The replay runs the Claude Code CLI itself: the Harness only plans.
	cc := claudecode.NewEngine(claudecode.Config{Binary: claudeBin, Logger: &logger})
	h, err := harness.New(harness.Config{Roots: []string{s.ProjectRoot}, Logger: &logger, Engines: []engine.Engine{cc},
		PermissionMode: permissionMode, MaxTurns: maxTurns, NoProjectLogs: true})
	if err != nil {
		fmt.Fprintln(stderr, "harness replay:", userError(err))
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	}()
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
	if printOnly {
		bin, err := claudecode.FindBinary(claudeBin)
		if err != nil {
			bin = "claude"
		}
		fmt.Fprintln(stdout, replayCommand(bin, opts))
		return 0
	}
	return streamTurn(func() (engine.Turn, error) {
		return cc.Manager().StartTurn(context.Background(), s.ID, message, opts)
	}, asJSON, stdout, stderr)
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
