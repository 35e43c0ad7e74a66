package claudecode_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// Children that misbehave, played by this test binary (see fakeChild).

func fastManager(env ...string) *claudecode.Manager {
	return claudecode.NewManager(claudecode.Config{
		Env:            append([]string{"PATH=" + os.Getenv("PATH")}, env...),
		InterruptGrace: 200 * time.Millisecond,
		KillGrace:      300 * time.Millisecond,
	})
}

func collect(t *testing.T, tr *claudecode.Turn) []event.Event {
	t.Helper()
	var evs []event.Event
	for tr.Next() {
		evs = append(evs, tr.Event())
	}
	assertWellFormed(t, evs)
	return evs
}

func TestChildDiesWithoutResult(t *testing.T) {
	mgr := fastManager()
	tr, err := mgr.StartTurn(context.Background(), "s-die", "hi", claudecode.TurnOpts{Binary: fakeChildScript(t, "die")})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, tr)
	if !errors.Is(tr.Err(), claudecode.ErrProcessDied) {
		t.Fatalf("Err = %v, want ErrProcessDied", tr.Err())
	}
	se := ofType(evs, event.TypeSessionError)[0].Error
	if se.Kind != event.ErrorProcess || se.ExitCode == nil || *se.ExitCode != 3 || !strings.Contains(se.StderrTail, "something broke") {
		t.Errorf("session:error = %+v", se)
	}
	if !strings.Contains(se.Error, "exit status 3") || !strings.Contains(se.Error, "something broke") {
		t.Errorf("error text %q should give the status and the last stderr line", se.Error)
	}
	if ex := evs[len(evs)-1].Exit; ex.Code != 3 {
		t.Errorf("process:exit = %+v", ex)
	}
	// session:error comes right before process:exit.
	if evs[len(evs)-2].Type != event.TypeSessionError {
		t.Errorf("order: %s before process:exit", evs[len(evs)-2].Type)
	}
}

// A hanging child is stopped by Kill (SIGTERM to its group, then
// SIGKILL); the ctx it was started with is not what stops it
// (engine.Engine's rule: engines' TestExitCodeTable).
func TestHangingChildKilled(t *testing.T) {
	mgr := fastManager()
	tr, err := mgr.StartTurn(context.Background(), "s-hang", "hi", claudecode.TurnOpts{Binary: fakeChildScript(t, "hang")})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Next() || tr.Event().Type != event.TypeSessionInit {
		t.Fatal("expected session:init first")
	}
	_ = tr.Kill()
	evs := collect(t, tr)
	if !errors.Is(tr.Err(), claudecode.ErrKilled) {
		t.Fatalf("Err = %v, want ErrKilled", tr.Err())
	}
	if ex := evs[len(evs)-1].Exit; ex.Signal != "SIGTERM" || ex.Code != -1 {
		t.Errorf("process:exit = %+v, want SIGTERM", ex)
	}
	assertGroupGone(t, tr.Pid())
}

// The driver queues events without waking the consumer for each and
// flushes them before it reads the pipe again: a burst of lines (more
// than one batch, and a last part smaller than one) all reach the consumer
// while the child, silent, still runs.
func TestBurstReachesTheConsumerWhileTheChildWaits(t *testing.T) {
	mgr := fastManager()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr, err := mgr.StartTurn(ctx, "s-burst", "hi", claudecode.TurnOpts{Binary: fakeChildScript(t, "burst-hang")})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Next() || tr.Event().Type != event.TypeSessionInit {
		t.Fatal("expected session:init first")
	}
	var text strings.Builder
	for i := range 300 {
		if !tr.Next() {
			t.Fatalf("the stream ended after %d deltas", i)
		}
		if ev := tr.Event(); ev.Type != event.TypeChatDelta {
			t.Fatalf("delta %d: %s", i, ev.Type)
		}
		text.WriteString(tr.Event().Text)
	}
	select {
	case <-tr.Exited():
		t.Fatal("the child exited: the events were not read while it waited")
	default:
	}
	if want := func() string {
		var b strings.Builder
		for i := range 300 {
			fmt.Fprintf(&b, "%d ", i)
		}
		return b.String()
	}(); text.String() != want {
		t.Fatalf("text = %.80q…", text.String())
	}
	// A started turn stops by Kill, not by its start's ctx (engine's
	// context rule): cancelling ctx here left the silent child running.
	_ = tr.Kill()
	collect(t, tr)
}

func TestChildIgnoringSIGTERMIsKilled(t *testing.T) {
	mgr := fastManager()
	tr, err := mgr.StartTurn(context.Background(), "s-stubborn", "hi", claudecode.TurnOpts{Binary: fakeChildScript(t, "ignore-term")})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Next() {
		t.Fatal("no first event")
	}
	// Interrupt escalates: control request, SIGINT, SIGTERM, SIGKILL.
	if err := mgr.Interrupt("s-stubborn"); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, tr)
	if ex := evs[len(evs)-1].Exit; ex.Signal != "SIGKILL" {
		t.Errorf("process:exit = %+v, want SIGKILL", ex)
	}
	if !errors.Is(tr.Err(), claudecode.ErrInterrupted) {
		t.Errorf("Err = %v, want ErrInterrupted", tr.Err())
	}
	assertGroupGone(t, tr.Pid())
}

func TestGrandchildDoesNotOutliveTurn(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	mgr := fastManager()
	tr, err := mgr.StartTurn(context.Background(), "s-gc", "hi", claudecode.TurnOpts{
		Binary: fakeChildScript(t, "grandchild", "CLAUDECODE_TEST_PIDFILE="+pidFile),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Next() {
		t.Fatal("no first event")
	}
	waitForFile(t, pidFile)
	_ = tr.Kill()
	_ = tr.Kill() // idempotent
	collect(t, tr)
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		t.Fatalf("bad pid file %q", b)
	}
	if processAlive(pid) {
		t.Errorf("grandchild %d outlived the turn", pid)
	}
}

func TestOversizedLineIsSkipped(t *testing.T) {
	mgr := claudecode.NewManager(claudecode.Config{Env: []string{"PATH=" + os.Getenv("PATH")}, MaxLineBytes: 64 << 20})
	tr, err := mgr.StartTurn(context.Background(), "s-huge", "hi", claudecode.TurnOpts{Binary: fakeChildScript(t, "huge-line")})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, tr)
	if tr.Err() != nil {
		t.Fatalf("Err = %v", tr.Err())
	}
	c := ofType(evs, event.TypeChatComplete)
	if len(c) != 1 || c[0].Text != "after the big line" {
		t.Errorf("the line after the oversized one was lost: %+v", c)
	}
	if n := len(ofType(evs, event.TypeChatDelta)); n != 0 {
		t.Errorf("%d deltas from an oversized line", n)
	}
}

func TestPromptGoesOnStdinNotArgv(t *testing.T) {
	mgr := fastManager()
	msg := "line one\nline \"two\" with 'quotes' and $(dollar) ünï -- --flag"
	var args []string
	tr, err := mgr.StartTurn(context.Background(), "s-stdin", msg, claudecode.TurnOpts{Binary: fakeChildScript(t, "echo-stdin")})
	if err != nil {
		t.Fatal(err)
	}
	args = tr.Command()
	evs := collect(t, tr)
	for _, a := range args {
		if strings.Contains(a, "line one") {
			t.Errorf("the prompt is on argv: %q", a)
		}
	}
	got := ofType(evs, event.TypeChatComplete)[0].Text
	var sent struct {
		Type    string `json:"type"`
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
	}
	if err := jsonUnmarshal(got, &sent); err != nil {
		t.Fatalf("stdin line %q: %v", got, err)
	}
	if sent.Type != "user" || sent.Message.Role != "user" || sent.Message.Content != msg {
		t.Errorf("stdin user message = %+v", sent)
	}
}

func TestChildEnvironmentIsFiltered(t *testing.T) {
	mgr := claudecode.NewManager(claudecode.Config{
		Env: []string{"PATH=" + os.Getenv("PATH"), "ANTHROPIC_API_KEY=sk-keep", "GITHUB_TOKEN=ghp-drop",
			"AWS_SECRET_ACCESS_KEY=aws-drop", "CLAUDECODE=1", "ANTHROPIC_AUTH_TOKEN=allowed-by-config", "PLAIN=ok"},
		AllowEnv: []string{"ANTHROPIC_AUTH_TOKEN"},
	})
	spy := filepath.Join(t.TempDir(), "env")
	tr, err := mgr.StartTurn(context.Background(), "s-env", "hi", claudecode.TurnOpts{
		Binary: fakeChildScript(t, "echo-env", "CLAUDECODE_TEST_ENVFILE="+spy), Env: []string{"EXPLICIT_TOKEN=given-by-caller"},
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, tr)
	// The child's own record: its events are scrubbed of the values it
	// was given (ANTHROPIC_AUTH_TOKEN=[REDACTED] there).
	b, err := os.ReadFile(spy)
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	if ev := ofType(evs, event.TypeToolResult)[0].ToolResult.Content; strings.Contains(ev, "allowed-by-config") || strings.Contains(ev, "given-by-caller") ||
		!strings.Contains(ev, "ANTHROPIC_AUTH_TOKEN=[REDACTED]") || !strings.Contains(ev, "EXPLICIT_TOKEN=[REDACTED]") {
		t.Errorf("the tool:result is not scrubbed of the credentials the child was given:\n%s", ev)
	}
	for _, want := range []string{"ANTHROPIC_API_KEY=sk-keep", "ANTHROPIC_AUTH_TOKEN=allowed-by-config", "PLAIN=ok", "EXPLICIT_TOKEN=given-by-caller"} {
		if !strings.Contains(env, want) {
			t.Errorf("child env lacks %s", want)
		}
	}
	for _, bad := range []string{"ghp-drop", "aws-drop", "CLAUDECODE="} {
		if strings.Contains(env, bad) {
			t.Errorf("child env has %s", bad)
		}
	}
}

func TestMissingBinaryNamesEveryPath(t *testing.T) {
	mgr := fastManager()
	_, err := mgr.StartTurn(context.Background(), "s", "hi", claudecode.TurnOpts{Binary: "/nonexistent/claude"})
	var nf *engine.BinaryNotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, engine.ErrBinaryNotFound) || !strings.Contains(err.Error(), "/nonexistent/claude") {
		t.Fatalf("err = %v", err)
	}
	if mgr.IsRunning("s") {
		t.Error("a failed start left the session busy")
	}

	t.Setenv(claudecode.EnvClaudeBin, "")
	t.Setenv("PATH", t.TempDir())
	t.Chdir(t.TempDir())
	_, err = claudecode.FindBinary("")
	if !errors.As(err, &nf) || len(nf.Tried) != 5 || !strings.Contains(err.Error(), filepath.Join("node_modules", ".bin", "claude")) || !strings.Contains(nf.Tried[4], filepath.Join("node_modules", ".bin", "claude")) {
		t.Errorf("search error = %v", err)
	}
}

func TestInvalidOptionsRejected(t *testing.T) {
	mgr := fastManager()
	for _, o := range []claudecode.TurnOpts{
		{Resume: "../../etc/passwd"},
		{PermissionMode: "yolo"},
		{Model: "--dangerously-skip-permissions"},
		{Tools: []string{"-x"}},
		{MaxTurns: -1},
	} {
		o.Binary = "/bin/true"
		if _, err := mgr.StartTurn(context.Background(), "s", "hi", o); !errors.Is(err, claudecode.ErrInvalidOptions) {
			t.Errorf("%+v: err = %v, want ErrInvalidOptions", o, err)
		}
	}
}

func TestReplayedTranscriptThroughManager(t *testing.T) {
	script, err := claudetest.WriteReplayerScript(t.TempDir(), "testdata/transcripts/tool.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	mgr := fastManager()
	var frames []string
	tr, err := mgr.StartTurn(context.Background(), "s-replay", "hi", claudecode.TurnOpts{
		Binary:  script,
		OnFrame: func(f claudecode.Frame) { frames = append(frames, f.Type+"/"+f.Subtype) },
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, tr)
	if tr.Err() != nil {
		t.Fatal(tr.Err())
	}
	want := decodeFile(t, "testdata/transcripts/tool.ndjson")
	var got strings.Builder
	for _, e := range evs[:len(evs)-1] {
		got.Write(e.AppendJSON(nil))
		got.WriteByte('\n')
	}
	if strings.ReplaceAll(got.String(), `"sessionId":"s-replay"`, `"sessionId":"golden-session"`) != string(want) {
		t.Errorf("the driver's events differ from the decoder's on the same transcript")
	}
	// OnFrame saw every line, including those that make no event.
	if len(frames) < 20 || frames[1] != "system/status" {
		t.Errorf("frames = %v", frames)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func TestSecretsNeverInLogsEventsOrErrors(t *testing.T) {
	var logs strings.Builder
	logger := zerolog.New(&syncWriter{w: &logs})
	mgr := claudecode.NewManager(claudecode.Config{
		Env:      []string{"PATH=" + os.Getenv("PATH"), "ANTHROPIC_API_KEY=sk-ant-very-secret-value", "ANTHROPIC_AUTH_TOKEN=oauth-secret-value"},
		AllowEnv: []string{"ANTHROPIC_AUTH_TOKEN"},
		Logger:   &logger,
	})
	tr, err := mgr.StartTurn(context.Background(), "s-leak", "hi", claudecode.TurnOpts{
		Binary: fakeChildScript(t, "leak-stderr"), ExtraArgs: []string{"--note=sk-ant-very-secret-value"},
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, tr)
	var all strings.Builder
	for _, e := range evs {
		all.Write(e.AppendJSON(nil))
	}
	all.WriteString(tr.Err().Error())
	all.WriteString(strings.Join(tr.Command(), " "))
	all.WriteString(logs.String())
	for _, secret := range []string{"sk-ant-very-secret-value", "oauth-secret-value"} {
		if strings.Contains(all.String(), secret) {
			t.Errorf("secret %q appeared in events, errors, the command or logs", secret)
		}
	}
	if !strings.Contains(all.String(), "auth failed with key [REDACTED]") {
		t.Errorf("the stderr line should be kept, scrubbed: %s", all.String())
	}
}

// syncWriter serialises writes from the turn's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Shutdown racing with StartTurn: starters keep starting turns until they
// are refused, and Shutdown is called while they do. Every turn that
// started, however close to the Shutdown call, has exited by the time
// Shutdown returns, and later starts are refused.
func TestShutdownStopsTurnsStartedConcurrently(t *testing.T) {
	mgr := fastManager()
	script := fakeChildScript(t, "hang")
	var mu sync.Mutex
	var started []*claudecode.Turn
	first := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				tr, err := mgr.StartTurn(context.Background(), fmt.Sprintf("s-%d-%d", w, i), "hi", claudecode.TurnOpts{Binary: script})
				if errors.Is(err, engine.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("StartTurn: %v", err)
					return
				}
				mu.Lock()
				started = append(started, tr)
				mu.Unlock()
				once.Do(func() { close(first) })
			}
		}()
	}
	<-first
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = mgr.Shutdown(ctx)
	var leftover []string
	mu.Lock()
	for _, tr := range started {
		select {
		case <-tr.Exited():
		default:
			leftover = append(leftover, tr.SessionKey())
		}
	}
	mu.Unlock()
	wg.Wait()
	if len(leftover) > 0 {
		t.Errorf("%d of %d turns still running after Shutdown returned: %v", len(leftover), len(started), leftover)
	}
	for _, tr := range started {
		_ = tr.Close()
		assertGroupGone(t, tr.Pid())
	}
	if _, err := mgr.StartTurn(context.Background(), "late", "hi", claudecode.TurnOpts{Binary: script}); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("StartTurn after Shutdown = %v, want ErrClosed", err)
	}
}

// The engine's turn registry, through engine.Engine: a second turn of a
// key is engine.ErrBusy (the one sentinel; this package has no copy);
// Shutdown interrupts the turn, and a CLI that ignores the interrupt
// request, SIGINT and SIGTERM (KillGrace far away) is killed when
// Shutdown's context ends: Shutdown returns that context's error, the
// stream ends with SIGKILL, the group is gone, and no turn starts after.
func TestEngineRegistryBusyClosedAndShutdownKills(t *testing.T) {
	e := claudecode.NewEngine(claudecode.Config{
		Binary:         fakeChildScript(t, "ignore-term"),
		Env:            []string{"PATH=" + os.Getenv("PATH")},
		InterruptGrace: 100 * time.Millisecond,
		KillGrace:      time.Hour,
	})
	req := engine.Request{SessionKey: "s", Message: "hi", Cwd: t.TempDir()}
	tr, err := e.StartTurn(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if !tr.Next() || tr.Event().Type != event.TypeSessionInit {
		t.Fatal("no session:init")
	}
	if _, err := e.StartTurn(context.Background(), req); !errors.Is(err, engine.ErrBusy) {
		t.Fatalf("a second turn of the key: %v, want ErrBusy", err)
	}
	read := make(chan []event.Event, 1)
	go func() {
		var evs []event.Event
		for tr.Next() {
			evs = append(evs, tr.Event())
		}
		read <- evs
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want the context's deadline (the turn had to be killed)", err)
	}
	var evs []event.Event
	select {
	case evs = <-read:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn's stream did not end after Shutdown returned")
	}
	if len(evs) == 0 || evs[len(evs)-1].Type != event.TypeProcessExit || evs[len(evs)-1].Exit.Signal != "SIGKILL" {
		t.Errorf("the turn ended with %v, want process:exit by SIGKILL", evs)
	}
	if !errors.Is(tr.Err(), claudecode.ErrKilled) {
		t.Errorf("Err = %v, want ErrKilled", tr.Err())
	}
	assertGroupGone(t, tr.(*claudecode.Turn).Pid())
	req.SessionKey = "t"
	if _, err := e.StartTurn(context.Background(), req); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("a turn after Shutdown: %v, want ErrClosed", err)
	}
}
