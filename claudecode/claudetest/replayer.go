package claudetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Replayer plays a recorded stream-json transcript the way the CLI would
// have printed it, so the driver can be tested, and benchmarked, without
// the real CLI. It speaks enough of the stdin side to stand in for it:
//
//   - it waits for the first "user" message on stdin before playing
//     (unless NoWait is set);
//   - it answers every control_request with a success control_response;
//     an "interrupt" request stops playback and ends the turn with an
//     error_during_execution result, as the CLI does;
//   - after the last line it waits for stdin to close, then exits with
//     ExitCode.
type Replayer struct {
	// Transcript is the NDJSON to play, line by line.
	Transcript io.Reader
	// LineDelay waits between lines (0: as fast as the pipe takes them).
	LineDelay time.Duration
	// NoWait plays at once, without waiting for a user message, and exits
	// without waiting for stdin to close.
	NoWait bool
	// ExitCode is the status the replayer asks its caller to exit with.
	ExitCode int
}

// Replay environment variables understood by [RunReplayerIfRequested] and
// by the claude-replay command.
const (
	EnvReplayTranscript = "CLAUDETEST_REPLAY"            // transcript path; presence turns replay on
	EnvReplayLineDelay  = "CLAUDETEST_REPLAY_LINE_DELAY" // a time.Duration, e.g. "5ms"
	EnvReplayNoWait     = "CLAUDETEST_REPLAY_NO_WAIT"    // "1": play without waiting for stdin
	EnvReplayExitCode   = "CLAUDETEST_REPLAY_EXIT"       // exit status after playing
)

// Run plays the transcript to stdout, reading the host's messages from
// stdin. It returns when the transcript is played (or interrupted) and
// stdin is closed.
func (r *Replayer) Run(stdin io.Reader, stdout io.Writer) error {
	out := &lockedWriter{w: bufio.NewWriterSize(stdout, 64<<10)}
	defer out.flush()

	started := make(chan struct{})
	interrupted := make(chan struct{})
	stdinDone := make(chan struct{})
	var startOnce, interruptOnce sync.Once
	if r.NoWait {
		startOnce.Do(func() { close(started) })
	}
	go func() {
		defer close(stdinDone)
		br := bufio.NewReaderSize(stdin, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var msg struct {
					Type      string `json:"type"`
					RequestID string `json:"request_id"`
					Request   struct {
						Subtype string `json:"subtype"`
					} `json:"request"`
				}
				if json.Unmarshal(line, &msg) == nil {
					switch msg.Type {
					case "user":
						startOnce.Do(func() { close(started) })
					case "control_request":
						out.writeControlSuccess(msg.RequestID, msg.Request.Subtype)
						if msg.Request.Subtype == "interrupt" {
							interruptOnce.Do(func() { close(interrupted) })
						}
					}
				}
			}
			if err != nil {
				return
			}
		}
	}()

	select {
	case <-started:
	case <-stdinDone:
		select {
		case <-started: // it came, then stdin closed: both were ready and select chose this one
		default:
			return errors.New("claudetest: stdin closed before a user message arrived")
		}
	}

	br := bufio.NewReaderSize(r.Transcript, 1<<20)
	var sessionID string
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if sessionID == "" {
				sessionID = sniffSessionID(line)
			}
			select {
			case <-interrupted:
				out.writeInterrupted(sessionID)
				goto played
			default:
			}
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			if r.LineDelay > 0 {
				out.write(line)
				out.flush()
				time.Sleep(r.LineDelay)
			} else {
				out.write(line)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("claudetest: read transcript: %w", err)
		}
	}
played:
	out.flush()
	if !r.NoWait {
		<-stdinDone
	}
	return nil
}

// sniffSessionID pulls session_id from a frame so synthesized frames match
// the transcript's session.
func sniffSessionID(line []byte) string {
	var f struct {
		SessionID string `json:"session_id"`
	}
	_ = json.Unmarshal(line, &f)
	return f.SessionID
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (l *lockedWriter) write(b []byte) {
	l.mu.Lock()
	_, _ = l.w.Write(b)
	l.mu.Unlock()
}

func (l *lockedWriter) flush() {
	l.mu.Lock()
	_ = l.w.Flush()
	l.mu.Unlock()
}

func (l *lockedWriter) writeControlSuccess(requestID, subtype string) {
	resp := map[string]any{"subtype": "success", "request_id": requestID, "response": map[string]any{}}
	if subtype == "initialize" {
		resp["response"] = map[string]any{"commands": []any{}, "models": []any{}, "account": map[string]any{}}
	}
	b, _ := json.Marshal(map[string]any{"type": "control_response", "response": resp})
	l.write(append(b, '\n'))
	l.flush()
}

func (l *lockedWriter) writeInterrupted(sessionID string) {
	user, _ := json.Marshal(map[string]any{"type": "user", "session_id": sessionID, "parent_tool_use_id": nil,
		"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "[Request interrupted by user]"}}}})
	result, _ := json.Marshal(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true,
		"session_id": sessionID, "num_turns": 1, "total_cost_usd": 0, "usage": map[string]any{}, "terminal_reason": "aborted_streaming"})
	l.write(append(user, '\n'))
	l.write(append(result, '\n'))
	l.flush()
}

// RunReplayerIfRequested turns the current program into a replayer when
// CLAUDETEST_REPLAY names a transcript, and exits when it is done. Call it
// first thing in TestMain so the test binary can stand in for claude
// (see [WriteReplayerScript]); it returns at once otherwise.
func RunReplayerIfRequested() {
	path := os.Getenv(EnvReplayTranscript)
	if path == "" {
		return
	}
	os.Exit(RunReplayerFromEnv(path))
}

// RunReplayerFromEnv plays the transcript at path with the options taken
// from the CLAUDETEST_REPLAY_* variables and returns the exit status.
func RunReplayerFromEnv(path string) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "claude-replay:", err)
		return 2
	}
	defer f.Close()
	r := &Replayer{Transcript: f, NoWait: os.Getenv(EnvReplayNoWait) == "1"}
	if d := os.Getenv(EnvReplayLineDelay); d != "" {
		if r.LineDelay, err = time.ParseDuration(d); err != nil {
			fmt.Fprintln(os.Stderr, "claude-replay: bad", EnvReplayLineDelay+":", err)
			return 2
		}
	}
	if c := os.Getenv(EnvReplayExitCode); c != "" {
		if r.ExitCode, err = strconv.Atoi(c); err != nil {
			fmt.Fprintln(os.Stderr, "claude-replay: bad", EnvReplayExitCode+":", err)
			return 2
		}
	}
	if err := r.Run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "claude-replay:", err)
		return 1
	}
	return r.ExitCode
}

// WriteReplayerScript writes an executable "claude" into dir that runs the
// current test binary as a replayer of transcript (the binary's TestMain
// must call [RunReplayerIfRequested]). extraEnv entries (KEY=VALUE) are
// exported to it, for example a line delay. It returns the script's path.
func WriteReplayerScript(dir, transcript string, extraEnv ...string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(transcript)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	b.WriteString("#!/bin/sh\n")
	fmt.Fprintf(&b, "export %s=%s\n", EnvReplayTranscript, shellQuote(abs))
	for _, kv := range extraEnv {
		k, v, ok := bytes.Cut([]byte(kv), []byte("="))
		if !ok {
			return "", fmt.Errorf("claudetest: env entry %q is not KEY=VALUE", kv)
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(string(v)))
	}
	fmt.Fprintf(&b, "exec %s \"$@\"\n", shellQuote(exe))
	path := filepath.Join(dir, "claude")
	if err := os.WriteFile(path, b.Bytes(), 0o755); err != nil {
		return "", err
	}
	return path, nil
}

func shellQuote(s string) string {
	return "'" + string(bytes.ReplaceAll([]byte(s), []byte("'"), []byte(`'\''`))) + "'"
}
