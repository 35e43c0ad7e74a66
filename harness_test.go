package harness

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/logging"
	"github.com/chirality/harness/session"
)

// These tests run the real, pinned Claude Code CLI against the fake
// Messages API, offline, with a scratch HOME.

type testEnv struct {
	t     *testing.T
	api   *claudetest.FakeAPI
	h     *Harness
	cfg   Config
	root  string
	home  string
	state string
	bin   string
}

func newTestEnv(t *testing.T, mutate func(*Config)) *testEnv {
	t.Helper()
	bin := claudetest.FindCLI(t)
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	e := &testEnv{t: t, api: api, root: realDir(t), home: t.TempDir(), state: t.TempDir()}
	e.bin = bin
	e.cfg = Config{
		Roots:    []string{e.root},
		StateDir: e.state,
		ChildEnv: api.Env(),
		Aliases:  engines.Aliases,
	}
	if mutate != nil {
		mutate(&e.cfg)
	}
	e.h = e.open()
	return e
}

func (e *testEnv) open() *Harness {
	e.t.Helper()
	// The built-in engines, then the test's own (which replace a
	// built-in one of the same name).
	cfg := e.cfg
	cfg.Engines = append(engines.Builtin(engines.Config{
		ClaudeBinary: e.bin, Env: claudetest.BaseEnv(e.home), ChildEnv: cfg.ChildEnv, Logger: cfg.Logger,
		InterruptGrace: time.Second, KillGrace: 2 * time.Second,
	}), e.cfg.Engines...)
	h, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h.Shutdown(ctx)
	})
	return h
}

func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stored is a decoded stored event.
type stored struct {
	event.Event
	Seq int64
	Raw string
}

func decode(t *testing.T, rec session.Record) stored {
	t.Helper()
	var ev event.Event
	if err := json.Unmarshal(rec.Event, &ev); err != nil {
		t.Fatalf("event %s: %v", rec.Event, err)
	}
	var head struct {
		Seq int64 `json:"seq"`
	}
	_ = json.Unmarshal(rec.Event, &head)
	if head.Seq != rec.Seq {
		t.Fatalf("record seq %d, JSON seq %d: %s", rec.Seq, head.Seq, rec.Event)
	}
	return stored{Event: ev, Seq: rec.Seq, Raw: string(rec.Event)}
}

// follow reads the session's events after `after` until the stream ends.
func (e *testEnv) follow(h *Harness, id string, after int64) []stored {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seq, err := h.Follow(ctx, id, after)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []stored
	for rec, err := range seq {
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, decode(e.t, rec))
	}
	if ctx.Err() != nil {
		e.t.Fatal("follow timed out")
	}
	return out
}

// turn runs one turn and returns its events.
func (e *testEnv) turn(id, message string) ([]stored, *Turn) {
	e.t.Helper()
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: id, Message: message})
	if err != nil {
		e.t.Fatalf("StartTurn: %v", err)
	}
	evs := e.follow(e.h, id, tr.StartSeq)
	<-tr.Done()
	checkTurn(e.t, id, tr.StartSeq, evs)
	return evs, tr
}

// checkTurn asserts a turn's invariants: consecutive seqs, the harness
// session ID on every event, exactly one process:exit, last.
func checkTurn(t *testing.T, id string, startSeq int64, evs []stored) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	for i, ev := range evs {
		if ev.Seq != startSeq+int64(i)+1 {
			t.Fatalf("event %d has seq %d, want %d", i, ev.Seq, startSeq+int64(i)+1)
		}
		if ev.SessionID != id {
			t.Fatalf("event %s has sessionId %q, want the harness session %q", ev.Type, ev.SessionID, id)
		}
		if (ev.Type == event.TypeProcessExit) != (i == len(evs)-1) {
			t.Fatalf("process:exit at %d of %d", i, len(evs))
		}
	}
}

func ofType(evs []stored, typ event.Type) []stored {
	var out []stored
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func text(evs []stored) string {
	var b strings.Builder
	for _, e := range ofType(evs, event.TypeChatDelta) {
		b.WriteString(e.Text)
	}
	return b.String()
}

func TestTurnPersonaPromptToolsAndLogs(t *testing.T) {
	e := newTestEnv(t, nil)
	writeFile(t, filepath.Join(e.root, "agents", "AGENT_TESTER.md"), "---\ntools: Read,Grep\ndescription: test persona\nmax_turns: 7\n---\nYou are the TESTER persona. Codeword: QUINCE.\n")
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Persona: "TESTER", Mode: "workbench"})
	if err != nil {
		t.Fatal(err)
	}
	e.api.Script(claudetest.TextReply("hello from the model"))
	evs, tr := e.turn(s.ID, "first message")
	if err := tr.Err(); err != nil {
		t.Fatalf("turn failed: %v", err)
	}
	if text(evs) != "hello from the model" {
		t.Errorf("text = %q", text(evs))
	}
	req := e.api.Requests()[len(e.api.Requests())-1]
	if !strings.Contains(req.SystemText(), "Codeword: QUINCE") {
		t.Error("the persona prompt did not reach the model")
	}
	tools := slices.DeleteFunc(slices.Clone(req.Tools), func(s string) bool { return s == "DeferredToolPlaceholder" })
	slices.Sort(tools)
	if !slices.Equal(tools, []string{"Grep", "Read"}) {
		t.Errorf("tools offered = %v, want [Grep Read]", req.Tools)
	}
	init := ofType(evs, event.TypeSessionInit)
	if len(init) != 1 || init[0].Init.PermissionMode != "dontAsk" {
		t.Fatalf("session:init = %+v", init)
	}
	got, err := e.h.Session(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ConversationID != init[0].Init.ConversationID || !got.UpdatedAt.After(s.UpdatedAt) {
		t.Errorf("stored session %+v, want claudeSessionId %s and a newer updatedAt", got, init[0].Init.ConversationID)
	}
	prompt, err := os.ReadFile(filepath.Join(e.root, ".chirality", "prompts", s.ID+"-system.txt"))
	if err != nil || !strings.Contains(string(prompt), "QUINCE") {
		t.Errorf("saved prompt: %v %q", err, prompt)
	}
	// The whole history replays by seq, from any point.
	all := e.follow(e.h, s.ID, 0)
	if len(all) != len(evs) || all[2].Raw != evs[2].Raw {
		t.Errorf("replay gave %d events, want %d", len(all), len(evs))
	}
	if tail := e.follow(e.h, s.ID, 3); len(tail) != len(evs)-3 || tail[0].Seq != 4 {
		t.Errorf("replay after 3 gave %d events from seq %d", len(tail), tail[0].Seq)
	}
	// The project log has the turn.
	e.h.Shutdown(context.Background())
	logText, err := os.ReadFile(filepath.Join(e.root, ".chirality", "logs", "harness.log"))
	if err != nil {
		t.Fatal(err)
	}
	// spec 004's LogEntry lines and its logging table's events
	for _, want := range []string{`"event":"turn:start"`, `"userMessage":"first message"`, `"event":"session:init"`, `"event":"turn:complete"`,
		`"maxTurns":7`, `"event":"process:spawn"`, `"event":"process:exit"`} {
		if !strings.Contains(string(logText), want) {
			t.Errorf("harness.log lacks %s", want)
		}
	}
	for line := range strings.Lines(string(logText)) {
		var le logging.Entry
		if err := json.Unmarshal([]byte(line), &le); err != nil || le.Timestamp == "" || le.Level == "" || le.Event == "" {
			t.Errorf("not a LogEntry: %s", line)
		}
		if le.Event == logging.EventProcessExit && (le.SessionID != s.ID || le.Data["exitCode"] != 0.0 || le.Data["signal"] != nil || le.Data["durationMs"] == nil) {
			t.Errorf("process:exit entry %+v", le)
		}
		if le.Event == logging.EventTurnStart && (le.SessionID != s.ID || le.Data["persona"] == nil || le.Data["mode"] != "workbench") {
			t.Errorf("turn:start entry %+v", le)
		}
	}
	if strings.Contains(string(logText), "sk-ant-fake-for-tests") {
		t.Error("the API key reached the log")
	}
	// One "message" key per line (the turn's text is "text"): a JSON
	// object with a key twice is read differently by each tool.
	for line := range strings.Lines(string(logText)) {
		if strings.Count(line, `"message":`) > 1 {
			t.Errorf("a log line has two message keys: %s", line)
		}
	}
}

func TestResumeContinuesAndFallsBack(t *testing.T) {
	e := newTestEnv(t, nil)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	e.api.Script(claudetest.TextReply("first answer"), claudetest.TextReply("second answer"), claudetest.TextReply("third answer"))
	evs1, _ := e.turn(s.ID, "remember the word PAPAYA")
	claude1 := ofType(evs1, event.TypeSessionInit)[0].Init.ConversationID

	evs2, tr2 := e.turn(s.ID, "what was the word?")
	if tr2.Err() != nil {
		t.Fatal(tr2.Err())
	}
	if got := ofType(evs2, event.TypeSessionInit)[0].Init.ConversationID; got != claude1 {
		t.Errorf("second turn ran in Claude session %s, want the resumed %s", got, claude1)
	}
	history := requestHistory(e.api.Requests()[len(e.api.Requests())-1])
	if !strings.Contains(history, "PAPAYA") || !strings.Contains(history, "first answer") {
		t.Errorf("resumed request lacks the earlier conversation: %q", history)
	}

	// Claude Code loses its storage: the next turn falls back to a fresh
	// session with the same message.
	if err := os.RemoveAll(filepath.Join(e.home, ".claude", "projects")); err != nil {
		t.Fatal(err)
	}
	evs3, tr3 := e.turn(s.ID, "message that must not be lost")
	if err := tr3.Err(); err != nil {
		t.Fatalf("fallback turn failed: %v", err)
	}
	errs := ofType(evs3, event.TypeSessionError)
	if len(errs) != 1 || errs[0].Error.Kind != event.ErrorResumeNotFound || !strings.Contains(errs[0].Error.Error, "fresh conversation") {
		t.Fatalf("session:error = %+v", errs)
	}
	inits := ofType(evs3, event.TypeSessionInit)
	if len(inits) != 1 || inits[0].Init.ConversationID == claude1 || inits[0].Seq < errs[0].Seq {
		t.Fatalf("session:init after the fallback = %+v", inits)
	}
	if n := len(ofType(evs3, event.TypeSessionComplete)); n != 1 || text(evs3) != "third answer" {
		t.Errorf("%d session:complete, text %q", n, text(evs3))
	}
	if last := e.api.Requests()[len(e.api.Requests())-1]; !strings.Contains(last.LastUserText(), "message that must not be lost") {
		t.Errorf("the fresh session did not get the message: %q", last.LastUserText())
	}
	got, _ := e.h.Session(s.ID)
	if got.ConversationID != inits[0].Init.ConversationID {
		t.Errorf("stored claudeSessionId %s, want the new %s", got.ConversationID, inits[0].Init.ConversationID)
	}
	logText, _ := os.ReadFile(filepath.Join(e.root, ".chirality", "logs", "harness.log"))
	if !strings.Contains(string(logText), `"event":"resume:fail"`) || !strings.Contains(string(logText), `"event":"resume:attempt"`) {
		t.Error("the log lacks the resume entries")
	}
}

func requestHistory(r *claudetest.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, c := range m.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func slowReply() claudetest.Reply {
	return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("slow words ", 400))}, ChunkSize: 4, ChunkDelay: 20 * time.Millisecond}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBusyInterruptAndSlowReader(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.SubscriberBuffer = 2 })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "workbench"})
	if err != nil {
		t.Fatal(err)
	}
	e.api.Script(slowReply())
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "talk slowly"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "again"}); !errors.Is(err, ErrBusy) {
		t.Errorf("second StartTurn = %v, want ErrBusy", err)
	}
	if !e.h.IsRunning(s.ID) {
		t.Error("IsRunning = false during the turn")
	}
	// A reader that does not read: it must not hold the turn back, and
	// once it reads it must still get every event (from the log).
	stalled, err := e.h.Follow(context.Background(), s.ID, tr.StartSeq)
	if err != nil {
		t.Fatal(err)
	}
	next, stop := iterPull(stalled)
	defer stop()
	first, _ := next() // subscribed, and one event in
	if first.Seq != tr.StartSeq+1 {
		t.Fatalf("first event seq %d", first.Seq)
	}
	// A second, live reader interrupts on the first delta.
	evs := []stored{}
	live, _ := e.h.Follow(context.Background(), s.ID, tr.StartSeq)
	interrupted := false
	for rec, err := range live {
		if err != nil {
			t.Fatal(err)
		}
		ev := decode(t, rec)
		evs = append(evs, ev)
		if ev.Type == event.TypeChatDelta && !interrupted {
			interrupted = true
			if err := e.h.Interrupt(s.ID); err != nil {
				t.Fatal(err)
			}
		}
		if ev.Type == event.TypeProcessExit {
			// A reader that has just seen process:exit finds the session
			// idle: a GUI may send the next message straight away.
			if e.h.IsRunning(s.ID) {
				t.Error("IsRunning when process:exit was delivered")
			}
			if err := e.h.Interrupt(s.ID); !errors.Is(err, ErrNotRunning) {
				t.Errorf("Interrupt when process:exit was delivered = %v, want ErrNotRunning", err)
			}
		}
	}
	<-tr.Done()
	checkTurn(t, s.ID, tr.StartSeq, evs)
	if !errors.Is(tr.Err(), claudecode.ErrInterrupted) {
		t.Errorf("Err = %v, want ErrInterrupted", tr.Err())
	}
	if se := ofType(evs, event.TypeSessionError); len(se) != 1 || se[0].Error.Kind != event.ErrorInterrupted {
		t.Errorf("session:error = %+v", se)
	}
	// The stalled reader now reads: everything, in order, once.
	got := []stored{decode(t, first)}
	for {
		rec, ok := next()
		if !ok {
			break
		}
		got = append(got, decode(t, rec))
	}
	checkTurn(t, s.ID, tr.StartSeq, got)
	if len(got) != len(evs) {
		t.Errorf("stalled reader got %d events, live reader %d", len(got), len(evs))
	}
}

// iterPull pulls records from a Follow sequence, failing on errors.
func iterPull(seq func(func(session.Record, error) bool)) (func() (session.Record, bool), func()) {
	ch := make(chan session.Record)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer close(ch)
		for rec, err := range seq {
			if err != nil {
				return
			}
			select {
			case ch <- rec:
			case <-done:
				return
			}
		}
	}()
	next := func() (session.Record, bool) {
		rec, ok := <-ch
		return rec, ok
	}
	stop := func() {
		close(done)
		<-finished
	}
	return next, stop
}

func TestShutdownLeavesNoProcess(t *testing.T) {
	e := newTestEnv(t, nil)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "workbench"})
	if err != nil {
		t.Fatal(err)
	}
	e.api.Script(slowReply())
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "talk slowly"})
	if err != nil {
		t.Fatal(err)
	}
	tr.lt.mu.Lock()
	pid := tr.lt.cur.(*claudecode.Turn).Pid()
	tr.lt.mu.Unlock()
	waitFor(t, "a streamed delta", func() bool {
		l, _ := e.h.store.EventLog(s.ID)
		recs, _ := l.ReadAfter(0)
		for _, r := range recs {
			if strings.Contains(string(r.Event), "chat:delta") {
				return true
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.h.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	select {
	case <-tr.Done():
	default:
		t.Fatal("Shutdown returned before the turn ended")
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d outlived Shutdown (kill -0: %v)", pid, err)
	}
	if _, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "after shutdown"}); !errors.Is(err, ErrClosed) {
		t.Errorf("StartTurn after Shutdown = %v, want ErrClosed", err)
	}
	// The turn's ending was stored, and a restarted harness still has the
	// session and its history.
	h2 := e.open()
	got, err := h2.Session(s.ID)
	if err != nil || got.ConversationID == "" {
		t.Fatalf("after restart: %+v, %v", got, err)
	}
	evs := e.follow(h2, s.ID, 0)
	checkTurn(t, s.ID, 0, evs)
}

func TestDeleteKillsRunningTurn(t *testing.T) {
	e := newTestEnv(t, nil)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "workbench"})
	if err != nil {
		t.Fatal(err)
	}
	e.api.Script(slowReply())
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "talk slowly"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.h.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
	default:
		t.Fatal("DeleteSession returned while the turn ran")
	}
	if _, err := e.h.Session(s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Session after delete = %v, want ErrNotFound", err)
	}
	for _, p := range []string{session.FilePath(e.root, s.ID), session.EventLogPath(e.root, s.ID)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists", p)
		}
	}
}
