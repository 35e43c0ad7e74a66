package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/event"
)

func init() { register("turn", runTurn) }

// turnFlags are the driver-level flags of `harness turn`.
type turnFlags struct {
	claudeBin, cwd, resume, permissionMode, model, promptFile string
	maxTurns                                                  int
	tools, allowedTools, disallowedTools                      stringList
	toolsSet                                                  bool
	json, verbose                                             bool
	// The orchestrated path (orchestrate.go): a harness session.
	session, persona, mode, projectRoot string
}

func (f *turnFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.claudeBin, "claude-bin", "", "claude executable (default: $HARNESS_CLAUDE_BIN, claude on PATH, ./node_modules/.bin/claude)")
	fs.StringVar(&f.cwd, "cwd", "", "directory to run in (default: the current one)")
	fs.StringVar(&f.resume, "resume", "", "Claude session id to continue")
	fs.IntVar(&f.maxTurns, "max-turns", 0, fmt.Sprintf("agentic turns at most (default %d)", claudecode.DefaultMaxTurns))
	fs.Func("tools", `tools that exist for the model, comma-separated ("" none, "default" all)`, func(v string) error {
		f.toolsSet = true
		return f.tools.Set(v)
	})
	fs.Var(&f.allowedTools, "allowed-tools", "tools to auto-approve (comma-separated, repeatable)")
	fs.Var(&f.disallowedTools, "disallowed-tools", "tools to remove (comma-separated, repeatable)")
	fs.StringVar(&f.permissionMode, "permission-mode", "", "one of "+strings.Join(claudecode.PermissionModes, ", "))
	fs.StringVar(&f.model, "model", "", "model name")
	fs.StringVar(&f.promptFile, "append-system-prompt-file", "", "file appended to the system prompt")
	fs.BoolVar(&f.json, "json", false, "print each event as one JSON line on stdout")
	fs.BoolVar(&f.verbose, "v", false, "log the driver's diagnostics to stderr")
	fs.StringVar(&f.session, "session", "", "run the turn in this harness session (persona, prompt and resume as the gateway does)")
	fs.StringVar(&f.persona, "persona", "", "create a harness session with this persona and run the turn in it")
	fs.StringVar(&f.mode, "mode", "", "mode of the session --persona creates: workbench (default), pipeline or direct")
	fs.StringVar(&f.projectRoot, "project-root", "", "project of the session (default: the current directory)")
}

func (f *turnFlags) opts() claudecode.TurnOpts {
	o := claudecode.TurnOpts{
		Cwd: f.cwd, Resume: f.resume, MaxTurns: f.maxTurns, PermissionMode: f.permissionMode,
		Model: f.model, AppendSystemPromptFile: f.promptFile,
		AllowedTools: f.allowedTools, DisallowedTools: f.disallowedTools,
	}
	if f.toolsSet {
		o.Tools = append([]string{}, f.tools...)
	}
	return o
}

func runTurn(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness turn", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f turnFlags
	f.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: harness turn [flags] MESSAGE")
		fmt.Fprintln(stderr, "       harness turn --session ID | --persona ID [--mode M] [--project-root DIR] MESSAGE")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		fmt.Fprintln(stderr, "harness turn: give exactly one non-empty MESSAGE (quote it)")
		return 2
	}
	if f.session != "" || f.persona != "" {
		return runOrchestrated(&f, pos[0], stdout, stderr)
	}
	logger := zerolog.Nop()
	if f.verbose {
		logger = zerolog.New(zerolog.ConsoleWriter{Out: stderr}).With().Timestamp().Logger()
	}
	mgr := claudecode.NewManager(claudecode.Config{Binary: f.claudeBin, Logger: &logger})
	return streamTurn(mgr, "cli", pos[0], f.opts(), f.json, stdout, stderr)
}

// streamTurn runs one turn and prints it. SIGINT or SIGTERM interrupts the
// turn (a second one kills it) and the remaining events are still printed.
// It returns 0 only when the turn completed.
func streamTurn(mgr *claudecode.Manager, key, message string, opts claudecode.TurnOpts, asJSON bool, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	turn, err := mgr.StartTurn(context.Background(), key, message, opts)
	if err != nil {
		fmt.Fprintln(stderr, "harness turn:", err)
		return 1
	}
	defer turn.Close()
	go func() {
		count := 0
		for {
			select {
			case <-sigs:
				count++
				if count == 1 {
					_ = turn.Interrupt()
				} else {
					_ = turn.Kill()
				}
			case <-turn.Done():
				return
			}
		}
	}()

	out := bufio.NewWriterSize(stdout, 64<<10)
	var p printer
	if asJSON {
		p = &jsonPrinter{w: out}
	} else {
		p = &textPrinter{out: out, errw: stderr}
	}
	for turn.Next() {
		p.print(turn.Event())
		// Flush when nothing else is waiting: batches under load, stays
		// interactive when tokens trickle in.
		if turn.Buffered() == 0 {
			if err := out.Flush(); err != nil {
				_ = turn.Kill() // stdout is gone (a closed pipe): stop the agent too
			}
		}
	}
	_ = out.Flush()
	if err := turn.Err(); err != nil {
		if !asJSON {
			fmt.Fprintln(stderr, "harness turn:", err)
		}
		if errors.Is(err, claudecode.ErrInterrupted) {
			return 130
		}
		return 1
	}
	return 0
}

type printer interface{ print(event.Event) }

type jsonPrinter struct {
	w   *bufio.Writer
	buf []byte
}

func (p *jsonPrinter) print(e event.Event) {
	p.buf = e.AppendJSON(p.buf[:0])
	p.buf = append(p.buf, '\n')
	_, _ = p.w.Write(p.buf)
}

// textPrinter streams the answer to stdout and everything about it (tools,
// cost, errors) to stderr, so `harness turn "…" > answer.md` keeps only the
// answer.
type textPrinter struct {
	out      *bufio.Writer
	errw     io.Writer
	midLine  bool
	thinking bool
}

func (p *textPrinter) side(format string, args ...any) {
	_ = p.out.Flush()
	if p.midLine {
		fmt.Fprintln(p.errw)
		p.midLine = false
	}
	fmt.Fprintf(p.errw, format, args...)
}

func (p *textPrinter) print(e event.Event) {
	switch e.Type {
	case event.TypeSessionInit:
		p.side("· session %s · %s\n", e.Init.ClaudeSessionID, e.Init.Model)
	case event.TypeChatDelta:
		if e.ParentToolUseID != "" {
			return // a subagent's text; its result arrives as a tool result
		}
		_, _ = p.out.WriteString(e.Text)
		p.midLine = !strings.HasSuffix(e.Text, "\n")
	case event.TypeThinkingDelta:
		if !p.thinking {
			p.side("· thinking…\n")
			p.thinking = true
		}
	case event.TypeToolStart:
		p.thinking = false
		p.side("⚙ %s %s\n", e.ToolStart.Name, oneLine(string(e.ToolStart.Input), 100))
	case event.TypeToolResult:
		mark := "✓"
		if e.ToolResult.IsError {
			mark = "✗"
		}
		p.side("  %s %s\n", mark, oneLine(e.ToolResult.Content, 100))
	case event.TypeChatComplete:
		if p.midLine {
			_, _ = p.out.WriteString("\n")
			p.midLine = false
		}
	case event.TypeSessionComplete:
		p.side("· done · $%.4f · %d turns · %d ms\n", e.Complete.CostUSD, e.Complete.NumTurns, e.Complete.DurationMS)
	case event.TypeSessionError:
		p.side("· %s: %s\n", e.Error.Kind, e.Error.Error)
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) > n {
		return string([]rune(s)[:n]) + "…"
	}
	return s
}
