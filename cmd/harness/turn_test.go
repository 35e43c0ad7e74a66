package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

func TestTurnJSONFromReplayedCLI(t *testing.T) {
	script, err := claudetest.WriteReplayerScript(t.TempDir(), "../../claudecode/testdata/transcripts/tool.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"turn", "--json", "--claude-bin", script, "--cwd", t.TempDir(), "hi"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	var types []event.Type
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var e event.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		types = append(types, e.Type)
	}
	want := []event.Type{"session:init", "chat:delta", "tool:start", "usage:update", "tool:result", "chat:delta", "usage:update", "chat:complete", "session:complete", "process:exit"}
	if strings.Join(toStrings(types), ",") != strings.Join(toStrings(want), ",") {
		t.Errorf("events %v, want %v", types, want)
	}
}

func TestTurnTextOutput(t *testing.T) {
	script, err := claudetest.WriteReplayerScript(t.TempDir(), "../../claudecode/testdata/transcripts/tool.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"turn", "--claude-bin", script, "hi"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if got := stdout.String(); got != "Let me look.\n\nDone.\n" {
		t.Errorf("stdout %q: only the answer belongs there", got)
	}
	for _, want := range []string{"⚙ Bash", "✓ hi-from-tool", "· done · $"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestTurnFailures(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"turn"}, &stdout, &stderr); code != 2 {
		t.Errorf("no message: exit %d, want 2", code)
	}
	stderr.Reset()
	if code := run([]string{"turn", "--claude-bin", "/nonexistent/claude", "hi"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "/nonexistent/claude") {
		t.Errorf("missing binary: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"turn", "--permission-mode", "yolo", "hi"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--permission-mode") {
		t.Errorf("bad permission mode: exit %d, stderr %q", code, stderr.String())
	}
	script, err := claudetest.WriteReplayerScript(t.TempDir(), "../../claudecode/testdata/transcripts/apierr.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run([]string{"turn", "--claude-bin", script, "hi"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "api_error") {
		t.Errorf("API error: exit %d, stderr %q", code, stderr.String())
	}
}

// TestTurnSIGINTInterruptsCleanly runs `harness turn` as a real process
// with the real CLI against a slow fake model, sends it SIGINT mid-answer,
// and expects the rest of the stream, an interrupted ending and exit 130.
func TestTurnSIGINTInterruptsCleanly(t *testing.T) {
	bin := claudetest.FindCLI(t)
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("word ", 500))}, ChunkSize: 5, ChunkDelay: 20 * time.Millisecond})

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "turn", "--json", "--claude-bin", bin, "--cwd", t.TempDir(), "talk")
	cmd.Env = append(append(claudetest.ScratchEnv(t), "HARNESS_TEST_MAIN=1"), api.Env()...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	signalled := false
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if !signalled && strings.Contains(sc.Text(), `"chat:delta"`) {
			signalled = true
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d (%v), want 130", code, err)
	}
	if !signalled {
		t.Fatal("no chat:delta arrived")
	}
	last := lines[len(lines)-1]
	if !strings.Contains(last, `"process:exit"`) {
		t.Errorf("last line %q, want process:exit", last)
	}
	joined := strings.Join(lines, "\n")
	if !strings.Contains(joined, `"kind":"interrupted"`) {
		t.Error("no session:error of kind interrupted")
	}
	if strings.Count(joined, "word ") >= 500 {
		t.Error("the whole answer streamed: SIGINT did not interrupt")
	}
}

func toStrings(ts []event.Type) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

// TestTurnShowsRetries runs `harness turn` with the real CLI against a
// model API that answers 529 twice: each retry is reported on stderr
// ("· Retrying 1/10 in 0.6 s — overloaded (HTTP 529)") within 2 s of the
// failed request, while the turn still runs, and the turn then completes.
func TestTurnShowsRetries(t *testing.T) {
	bin := claudetest.FindCLI(t)
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	firstFailure := api.FailThenAnswer(2, "Recovered.")

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "turn", "--claude-bin", bin, "--cwd", t.TempDir(), "hi")
	cmd.Env = append(append(claudetest.ScratchEnv(t), "HARNESS_TEST_MAIN=1"), api.Env()...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	type line struct {
		text string
		at   time.Time
	}
	lines := make(chan line, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- line{sc.Text(), time.Now()}
		}
	}()
	deadline := time.After(60 * time.Second)
	var retries []string
	var all []string
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				break wait
			}
			all = append(all, l.text)
			if strings.HasPrefix(l.text, "· Retrying ") {
				retries = append(retries, l.text)
				if len(retries) == 1 {
					if lag := l.at.Sub(firstFailure()); firstFailure().IsZero() || lag > 2*time.Second {
						t.Errorf("first retry shown %v after the failed request (want ≤ 2 s)", lag)
					}
				}
			}
		case <-deadline:
			t.Fatalf("no end after 60 s; stderr so far:\n%s", strings.Join(all, "\n"))
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v\n%s", err, strings.Join(all, "\n"))
	}
	if len(retries) != 2 || !strings.HasPrefix(retries[0], "· Retrying 1/10 in ") || !strings.HasSuffix(retries[0], " s — overloaded (HTTP 529)") ||
		!strings.HasPrefix(retries[1], "· Retrying 2/10 in ") {
		t.Errorf("retry lines %q, want attempts 1 and 2 of 10", retries)
	}
	if got := stdout.String(); got != "Recovered.\n" {
		t.Errorf("stdout %q", got)
	}
}

// The max-turns default `harness turn --help` states is the one every
// path of the command runs with: the Claude Code driver's and each
// mode's of a harness session (the pipeline's was 50 while the help said
// 25).
func TestTurnHelpStatesTheMaxTurnsDefault(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"turn", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want := fmt.Sprintf("agentic turns at most (default %d)", claudecode.DefaultMaxTurns)
	if !strings.Contains(stdout.String()+stderr.String(), want) {
		t.Fatalf("help lacks %q:\n%s", want, stdout.String())
	}
	for mode, n := range harness.ModeMaxTurns {
		if n != claudecode.DefaultMaxTurns {
			t.Errorf("mode %s runs with max turns %d, the help says %d", mode, n, claudecode.DefaultMaxTurns)
		}
	}
}
