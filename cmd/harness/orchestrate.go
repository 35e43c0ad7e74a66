package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// runOrchestrated is `harness turn --session ID | --persona ID`: the
// gateway's orchestration from the terminal. The session's persona gives
// the prompt and the tool flags, so the driver-level flags that would
// contradict it are refused.
func runOrchestrated(f *turnFlags, message string, stdout, stderr io.Writer) int {
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
	logger := zerolog.Nop()
	if f.verbose {
		logger = zerolog.New(zerolog.ConsoleWriter{Out: stderr}).With().Timestamp().Logger()
	}
	root := f.projectRoot
	if root == "" {
		root = "."
	}
	root, err := filepath.Abs(root)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		fmt.Fprintln(stderr, "harness turn:", err)
		return 1
	}
	var s *session.Session
	if f.session != "" {
		// The session decides the project: find it before building the
		// harness whose only root it is.
		if s, err = findSession(f.session, f.projectRoot, root); err != nil {
			fmt.Fprintln(stderr, "harness turn:", err)
			return 1
		}
		root = s.ProjectRoot
	}
	h, err := harness.New(harness.Config{
		Roots: []string{root}, ClaudeBinary: f.claudeBin, Logger: &logger,
		PermissionMode: f.permissionMode, MaxTurns: f.maxTurns,
	})
	if err != nil {
		fmt.Fprintln(stderr, "harness turn:", err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	}()
	if s == nil {
		mode := f.mode
		if mode == "" {
			mode = "workbench"
		}
		if s, err = h.CreateSession(root, f.persona, mode); err != nil {
			fmt.Fprintln(stderr, "harness turn:", err)
			return 1
		}
		fmt.Fprintf(stderr, "harness: created session %s (continue it with --session %s)\n", s.ID, s.ID)
	}
	return followTurn(h, s.ID, message, f.json, stdout, stderr)
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
	return st.Get(id)
}

// followTurn starts a turn of the session and prints its events as they
// are stored. SIGINT or SIGTERM interrupts the turn, a second one kills
// it; the remaining events are still printed. It returns 0 only when the
// turn completed, 130 when it was interrupted.
func followTurn(h *harness.Harness, id, message string, asJSON bool, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	t, err := h.StartTurn(context.Background(), id, message)
	if err != nil {
		fmt.Fprintln(stderr, "harness turn:", err)
		return 1
	}
	go func() {
		count := 0
		for {
			select {
			case <-sigs:
				if count++; count == 1 {
					_ = h.Interrupt(id)
				} else {
					_ = h.Kill(id)
				}
			case <-t.Done():
				return
			}
		}
	}()
	events, err := h.Follow(context.Background(), id, t.StartSeq)
	if err != nil {
		fmt.Fprintln(stderr, "harness turn:", err)
		return 1
	}
	out := bufio.NewWriterSize(stdout, 64<<10)
	text := &textPrinter{out: out, errw: stderr}
	for rec, err := range events {
		if err != nil {
			fmt.Fprintln(stderr, "harness turn:", err)
			break
		}
		if asJSON {
			_, _ = out.Write(rec.Event)
			_ = out.WriteByte('\n')
		} else {
			var ev event.Event
			if json.Unmarshal(rec.Event, &ev) == nil {
				text.print(ev)
			}
		}
		if err := out.Flush(); err != nil {
			_ = h.Kill(id) // stdout is gone: stop the agent too
		}
	}
	<-t.Done()
	if err := t.Err(); err != nil {
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
