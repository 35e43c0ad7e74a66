package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/logging"
	"github.com/chirality/harness/session"
)

// runOrchestrated is `harness turn --session ID | --persona ID`: the
// gateway's orchestration from the terminal. The session's persona gives
// the prompt and the tool flags, so the driver-level flags that would
// contradict it are refused.
func runOrchestrated(f *turnFlags, message string, childEnv, allowed []string, stdout, stderr io.Writer) int {
	switch {
	case f.session != "" && f.persona != "":
		fmt.Fprintln(stderr, "harness turn: give --session or --persona, not both")
		return 2
	case f.session != "" && f.mode != "":
		fmt.Fprintln(stderr, "harness turn: --mode is for the session --persona creates; a session keeps its mode")
		return 2
	case f.resume != "" || f.toolsSet || len(f.allowedTools) > 0 || len(f.disallowedTools) > 0 || f.promptFile != "" || f.cwd != "" || f.model != "":
		fmt.Fprintln(stderr, "harness turn: with --session or --persona the prompt, tools, model, resume and directory come from the session and its persona;\n"+
			"  drop --resume, --tools, --allowed-tools, --disallowed-tools, --append-system-prompt-file, --cwd and --model")
		return 2
	}
	logger := verboseLogger(f.verbose, stderr)
	root := f.projectRoot
	if root == "" {
		root = "."
	}
	root, err := filepath.Abs(root)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		fmt.Fprintln(stderr, "harness turn:", userError(err))
		return 1
	}
	var s *session.Session
	if f.session != "" {
		// The session decides the project: find it before building the
		// harness whose only root it is.
		if s, err = findSession(f.session, f.projectRoot, root); err != nil {
			fmt.Fprintln(stderr, "harness turn:", userError(err))
			return failCode(err)
		}
		root = s.ProjectRoot
	}
	// On a terminal, a tool the rules do not allow waits for the person
	// at it (in permission modes default, acceptEdits and plan); without
	// one the turn runs headless, as the gateway's dontAsk does.
	tty := isTTY(os.Stdin)
	h, err := harness.New(harness.Config{
		Roots: []string{root}, Logger: &logger, Aliases: engines.Aliases,
		Engines:        engines.Builtin(engines.Config{ClaudeBinary: f.claudeBin, ProjectConfig: f.projectConfig, ChildEnv: childEnv, Logger: &logger}),
		PermissionMode: f.permissionMode, MaxTurns: f.maxTurns,
		ChildEnv: childEnv, AllowedTools: allowed, Approvals: tty, MCP: f.mcp.Config(),
	})
	if err != nil {
		fmt.Fprintln(stderr, "harness turn:", userError(err))
		return 1
	}
	defer shutdownTurns(h)
	if s == nil {
		mode := f.mode
		if mode == "" {
			mode = "workbench"
		}
		if s, err = h.NewSession(harness.SessionSpec{ProjectRoot: root, Persona: f.persona, Mode: mode, Engine: f.engine}); err != nil {
			fmt.Fprintln(stderr, "harness turn:", userError(err))
			return 1
		}
		fmt.Fprintf(stderr, "harness: created session %s (continue it with --session %s)\n", s.ID, s.ID)
	}
	var ask *asker
	if tty {
		ask = &asker{h: h, id: s.ID, in: bufio.NewReader(os.Stdin), out: stderr}
	}
	return followTurn(h, s.ID, message, f.json, ask, stdout, stderr)
}

// shutdownTurns shuts h down at the end of a command that ran a turn:
// its turns get 10 s to end, then they are killed.
func shutdownTurns(h *harness.Harness) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = h.Shutdown(ctx)
}

// verboseLogger is the driver's diagnostics on stderr (scrubbed) with
// --verbose, else nothing.
func verboseLogger(verbose bool, stderr io.Writer) zerolog.Logger {
	if !verbose {
		return zerolog.Nop()
	}
	return zerolog.New(zerolog.ConsoleWriter{Out: logging.Scrubbed(stderr)}).With().Timestamp().Logger()
}

func isTTY(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// asker puts approval requests to the person at the terminal, one at a
// time: [a]llow / [d]eny / al[w]ays.
type asker struct {
	h   *harness.Harness
	id  string
	in  *bufio.Reader
	out io.Writer
	mu  sync.Mutex
}

func (a *asker) ask(req *event.ApprovalRequested) {
	a.mu.Lock()
	defer a.mu.Unlock()
	where := ""
	if req.Unsandboxed { // the core asks each time, "always" remembers nothing
		where = " (MAYBE OUTSIDE its sandbox)"
	}
	for {
		fmt.Fprintf(a.out, "\n%s wants to run%s: %s\n[a]llow / [d]eny / al[w]ays? ", printable(req.ToolName, 80), where, printable(string(req.Input), 200))
		line, err := a.in.ReadString('\n')
		if err != nil && line == "" {
			return // no more input: the timeout or the end of the turn decides
		}
		decision := ""
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "a", "allow", "y", "yes":
			decision = "allow"
		case "d", "deny", "n", "no":
			decision = "deny"
		case "w", "always":
			decision = "always"
		default:
			fmt.Fprintln(a.out, "answer a, d or w")
			continue
		}
		if err := a.h.Approve(a.id, req.RequestID, harness.ApprovalAnswer{Decision: decision}); err != nil {
			fmt.Fprintln(a.out, "harness turn:", err)
		}
		return
	}
}

// findSession finds id through the index, or in the project at root when
// --project-root was given.
func findSession(id, projectRootFlag, root string) (*session.Session, error) {
	st, err := session.Open(session.Config{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if projectRootFlag != "" {
		return st.GetIn(root, id)
	}
	s, err := st.Get(id)
	if errors.Is(err, session.ErrNotFound) {
		// the index is this state directory's: a session made elsewhere
		// (harness serve --demo keeps a scratch one) is found in its project
		return nil, fmt.Errorf("%w (a session of another state directory, such as harness serve --demo's, is found with --project-root DIR)", err)
	}
	return s, err
}

// followTurn starts a turn of the session and prints its events as they
// are stored. SIGINT or SIGTERM interrupts the turn, a second one kills
// it; the remaining events are still printed. It returns 0 only when the
// turn completed, 130 when it was interrupted.
func followTurn(h *harness.Harness, id, message string, asJSON bool, ask *asker, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	t, err := h.StartTurn(context.Background(), harness.TurnRequest{SessionID: id, Message: message})
	if err != nil {
		fmt.Fprintln(stderr, "harness turn:", userError(err))
		return 1
	}
	go func() {
		count := 0
		for {
			select {
			case <-sigs:
				if count++; count == 1 {
					_ = t.Interrupt()
				} else {
					_ = t.Kill()
				}
			case <-t.Done():
				return
			}
		}
	}()
	out := bufio.NewWriterSize(stdout, 64<<10)
	text := &textPrinter{out: out, errw: stderr}
	_, err = t.Wait(context.Background(), func(rec session.Record) error {
		ev := *rec.Typed
		if asJSON {
			_, _ = out.Write(rec.Event)
			_ = out.WriteByte('\n')
		} else {
			text.print(&ev)
		}
		if ask != nil && ev.Type == event.TypeApprovalRequested {
			_ = out.Flush()
			go ask.ask(ev.Approval)
		}
		if err := out.Flush(); err != nil {
			_ = t.Kill() // stdout is gone: stop the agent too (Wait only stops reading)
			return err
		}
		return nil
	})
	if err != nil {
		var te *harness.TurnError
		switch {
		case !errors.As(err, &te):
			fmt.Fprintln(stderr, "harness turn:", userError(err))
		case asJSON: // the events said it
		case te.Err != nil:
			fmt.Fprintln(stderr, "harness turn:", secrets.Scrub(te.Err.Error())) // the engine's own words, which may quote what the agent saw
		default:
			fmt.Fprintln(stderr, "harness turn:", userError(err))
		}
		if te != nil && te.Kind == event.ErrorInterrupted {
			return 130
		}
		return 1
	}
	return 0
}
