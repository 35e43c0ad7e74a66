package codex_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/codex"
	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// codexBin is the pinned codex from the repository's node_modules.
func codexBin(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs("../node_modules/.bin/codex")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("codex is not installed (run `make cli`): %v", err)
	}
	return p
}

// rig is a fake API, a temp HOME/CODEX_HOME pointing at it and an engine.
type rig struct {
	fake *codextest.FakeAPI
	eng  *codex.Engine
	home string
	logs *syncBuf
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newRig(t testing.TB, extraEnv ...string) *rig {
	t.Helper()
	fake, err := codextest.NewFakeAPI(codextest.Reply{Text: "default answer", Deltas: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	home := t.TempDir()
	if _, err := fake.WriteConfig(filepath.Join(home, "codex")); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuf{}
	log := zerolog.New(logs).Level(zerolog.DebugLevel)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + filepath.Join(home, "codex"), "GITHUB_TOKEN=must-not-leak", "OPENAI_API_KEY=sk-must-not-be-logged"}
	env = append(env, extraEnv...)
	eng := codex.NewEngine(codex.Config{Binary: codexBin(t), Env: env, Logger: &log})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	return &rig{fake: fake, eng: eng, home: home, logs: logs}
}

type run struct {
	events []event.Event
	err    error
	pid    int
}

func (r *run) types() []string {
	var out []string
	for _, e := range r.events {
		out = append(out, string(e.Type))
	}
	return out
}

func (r *run) text() string {
	var b strings.Builder
	for _, e := range r.events {
		if e.Type == event.TypeChatDelta {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

func (r *run) find(typ event.Type) []event.Event {
	var out []event.Event
	for _, e := range r.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// turn runs one turn to its end; each event may act on the turn.
func (g *rig) turn(t *testing.T, req engine.Request, on func(engine.Turn, event.Event)) *run {
	t.Helper()
	if req.SessionKey == "" {
		req.SessionKey = "s-" + t.Name()
	}
	if req.Cwd == "" {
		req.Cwd = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tr, err := g.eng.StartTurn(ctx, req)
	if err != nil {
		t.Fatalf("StartTurn: %v", err)
	}
	defer tr.Close()
	r := &run{pid: tr.(*codex.Turn).Pid()}
	for tr.Next() {
		ev := tr.Event()
		if ev.SessionID != req.SessionKey {
			t.Errorf("event %s has session %q", ev.Type, ev.SessionID)
		}
		r.events = append(r.events, ev)
		if on != nil {
			on(tr, ev)
		}
	}
	r.err = tr.Err()
	checkOrder(t, r)
	waitGone(t, r.pid)
	return r
}

// checkOrder asserts the stream contract.
func checkOrder(t *testing.T, r *run) {
	t.Helper()
	if n := len(r.events); n > 0 && r.events[n-1].Exit != nil { // engine.TurnExit: 0 exactly when the turn completed
		completed := false
		for _, e := range r.events {
			completed = completed || e.Type == event.TypeSessionComplete
		}
		if (r.events[n-1].Exit.Code == 0) != completed {
			t.Errorf("process:exit code %d, completed %v: the code must be 0 exactly when the turn completed", r.events[n-1].Exit.Code, completed)
		}
	}
	ts := r.types()
	if len(ts) < 2 || ts[len(ts)-1] != string(event.TypeProcessExit) {
		t.Fatalf("stream does not end with process:exit: %v", ts)
	}
	ends := 0
	for _, e := range r.events {
		if e.Type == event.TypeSessionComplete || e.Type == event.TypeSessionError {
			ends++
		}
	}
	if ends != 1 {
		t.Errorf("%d end events in %v", ends, ts)
	}
	if ts[len(ts)-2] != string(event.TypeSessionComplete) && ts[len(ts)-2] != string(event.TypeSessionError) {
		t.Errorf("end event not right before process:exit: %v", ts)
	}
	starts := map[string]int{}
	for _, e := range r.events {
		switch e.Type {
		case event.TypeToolStart:
			starts[e.ToolStart.ToolUseID]++
		case event.TypeToolResult:
			if starts[e.ToolResult.ToolUseID] != 1 {
				t.Errorf("tool:result %s without exactly one tool:start before it", e.ToolResult.ToolUseID)
			}
		}
	}
}

// waitGone polls until the child's process group is gone.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Kill(-pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still exists", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type approver struct {
	mu      sync.Mutex
	answers []engine.ApprovalDecision
	asked   []engine.ApprovalRequest
}

func (a *approver) Ask(ctx context.Context, req engine.ApprovalRequest) engine.ApprovalDecision {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req)
	if len(a.answers) == 0 {
		return engine.ApprovalDecision{}
	}
	d := a.answers[0]
	a.answers = a.answers[1:]
	return d
}

// TestRealCodex runs the pinned codex against the fake: one rig, the
// scenarios in sequence (each starts its own child).
func TestRealCodex(t *testing.T) {
	g := newRig(t, "RUST_LOG=debug")
	var mu sync.Mutex
	methods := map[string]bool{}
	codex.SetOnMessage(g.eng, func(m codex.Message) {
		if m.Method != "" {
			mu.Lock()
			methods[m.Method] = true
			for _, k := range shapeKeys(m.Params) {
				methods[m.Method+" "+k] = true
			}
			mu.Unlock()
		}
	})

	var threadID string
	t.Run("text", func(t *testing.T) {
		g.fake.Script(codextest.Reply{Text: "Hello from the fake model.", Deltas: 4})
		r := g.turn(t, engine.Request{SessionKey: "s1", Message: "remember the word banana", SystemPrompt: "You are a persona."}, nil)
		if r.err != nil {
			t.Fatalf("err %v, events %v", r.err, r.types())
		}
		if r.events[0].Type != event.TypeSessionInit || r.events[0].Init.Engine != "codex" || r.events[0].Init.ConversationID == "" {
			t.Fatalf("first event %+v", r.events[0])
		}
		threadID = r.events[0].Init.ConversationID
		if len(r.find(event.TypeChatDelta)) != 4 || r.text() != "Hello from the fake model." {
			t.Errorf("deltas %q (%d)", r.text(), len(r.find(event.TypeChatDelta)))
		}
		if c := r.find(event.TypeChatComplete); len(c) != 1 || c[0].Text != "Hello from the fake model." {
			t.Errorf("chat:complete %+v", c)
		}
		sc := r.find(event.TypeSessionComplete)[0].Complete
		var u struct{ InputTokens, OutputTokens int64 }
		_ = json.Unmarshal(sc.Usage, &struct {
			I *int64 `json:"input_tokens"`
			O *int64 `json:"output_tokens"`
		}{&u.InputTokens, &u.OutputTokens})
		if u.InputTokens != 10 || u.OutputTokens != 5 {
			t.Errorf("usage %s", sc.Usage)
		}
		reqs := g.fake.Requests()
		if texts := reqs[len(reqs)-1].Texts(); len(texts) == 0 || texts[0] != "You are a persona." {
			t.Errorf("base instructions are not the first input: %.200q", texts)
		}
		if exit := r.events[len(r.events)-1].Exit; exit.Code != 0 && exit.Signal == "" {
			t.Errorf("exit %+v", exit)
		}
	})

	t.Run("resume remembers", func(t *testing.T) {
		if threadID == "" {
			t.Fatal("no thread from the text turn")
		}
		g.fake.Script(codextest.Reply{Text: "banana it was"})
		r := g.turn(t, engine.Request{SessionKey: "s1", Message: "what was the word?", Resume: threadID}, nil)
		if r.err != nil {
			t.Fatalf("err %v", r.err)
		}
		if r.events[0].Init.ConversationID != threadID {
			t.Errorf("resumed thread %q, want %q", r.events[0].Init.ConversationID, threadID)
		}
		reqs := g.fake.Requests()
		texts := strings.Join(reqs[len(reqs)-1].Texts(), "\n")
		for _, want := range []string{"remember the word banana", "Hello from the fake model.", "what was the word?"} {
			if !strings.Contains(texts, want) {
				t.Errorf("second request lacks %q; has %q", want, texts)
			}
		}
	})

	t.Run("shell tool", func(t *testing.T) {
		g.fake.Script(codextest.Reply{Call: &codextest.Call{Command: "echo tool-out-42"}, Reasoning: "let me think"}, codextest.Reply{Text: "ran it"})
		r := g.turn(t, engine.Request{SessionKey: "s2", Message: "run echo"}, nil)
		if r.err != nil {
			t.Fatalf("err %v %v", r.err, r.types())
		}
		if th := r.find(event.TypeThinkingDelta); len(th) != 1 || th[0].Text != "let me think" {
			t.Errorf("thinking:delta %+v", th)
		}
		st, res := r.find(event.TypeToolStart), r.find(event.TypeToolResult)
		if len(st) != 1 || st[0].ToolStart.Name != codex.ToolShell || !strings.Contains(string(st[0].ToolStart.Input), "echo tool-out-42") {
			t.Fatalf("tool:start %+v", st)
		}
		if len(res) != 1 || !strings.Contains(res[0].ToolResult.Content, "tool-out-42") || res[0].ToolResult.IsError {
			t.Fatalf("tool:result %+v", res)
		}
		reqs := g.fake.Requests()
		outs := strings.Join(reqs[len(reqs)-1].FunctionOutputs(), "\n")
		if !strings.Contains(outs, "tool-out-42") {
			t.Errorf("function_call_output not sent back: %q", outs)
		}
	})

	t.Run("approval denied then allowed", func(t *testing.T) {
		dir := t.TempDir()
		a := &approver{answers: []engine.ApprovalDecision{{Allow: false, Message: "no"}, {Allow: true}}}
		g.fake.Script(codextest.Reply{Call: &codextest.Call{Command: "touch denied.txt"}}, codextest.Reply{Text: "ok, not done"})
		r := g.turn(t, engine.Request{SessionKey: "s3", Message: "touch", Cwd: dir, PermissionMode: "default", Approver: a}, nil)
		if r.err != nil {
			t.Fatalf("err %v", r.err)
		}
		if _, err := os.Stat(filepath.Join(dir, "denied.txt")); err == nil {
			t.Error("denied command ran")
		}
		if res := r.find(event.TypeToolResult); len(res) != 1 || !res[0].ToolResult.IsError {
			t.Errorf("denied tool:result %+v", res)
		}
		g.fake.Script(codextest.Reply{Call: &codextest.Call{Command: "touch allowed.txt"}}, codextest.Reply{Text: "done"})
		r = g.turn(t, engine.Request{SessionKey: "s3", Message: "touch", Cwd: dir, PermissionMode: "default", Approver: a}, nil)
		if r.err != nil {
			t.Fatalf("err %v", r.err)
		}
		if _, err := os.Stat(filepath.Join(dir, "allowed.txt")); err != nil {
			t.Errorf("allowed command did not run: %v", err)
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.asked) != 2 || a.asked[0].ToolName != codex.ToolShell || !strings.Contains(string(a.asked[0].Input), "touch denied.txt") || a.asked[0].ToolUseID == "" {
			t.Errorf("asked %+v", a.asked)
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		g.fake.Script(codextest.Reply{Text: strings.Repeat("word ", 400), Deltas: 400, ChunkDelay: 25 * time.Millisecond})
		once := sync.Once{}
		r := g.turn(t, engine.Request{SessionKey: "s4", Message: "talk"}, func(tr engine.Turn, ev event.Event) {
			if ev.Type == event.TypeChatDelta {
				once.Do(func() { _ = tr.Interrupt() })
			}
		})
		var te *engine.TurnError
		if !errors.As(r.err, &te) || te.Kind != event.ErrorInterrupted {
			t.Fatalf("err %v, want interrupted; %v", r.err, r.types())
		}
		if e := r.find(event.TypeSessionError); len(e) != 1 || e[0].Error.Kind != event.ErrorInterrupted {
			t.Errorf("session:error %+v", e)
		}
		if n := len(r.find(event.TypeChatDelta)); n >= 400 {
			t.Errorf("all %d deltas arrived: not interrupted", n)
		}
	})

	t.Run("api error", func(t *testing.T) {
		g.fake.Script(codextest.Reply{Status: 400, ErrorMessage: "fake bad request"})
		r := g.turn(t, engine.Request{SessionKey: "s5", Message: "fail"}, nil)
		var te *engine.TurnError
		if !errors.As(r.err, &te) || te.Kind != event.ErrorAPI {
			t.Fatalf("err %v; %v", r.err, r.types())
		}
	})

	t.Run("dontAsk runs without asking", func(t *testing.T) {
		dir := t.TempDir()
		a := &approver{}
		g.fake.Script(codextest.Reply{Call: &codextest.Call{Command: "touch free.txt"}}, codextest.Reply{Text: "done"})
		r := g.turn(t, engine.Request{SessionKey: "s6", Message: "touch", Cwd: dir, PermissionMode: "dontAsk", Approver: a}, nil)
		if r.err != nil {
			t.Fatalf("err %v", r.err)
		}
		if _, err := os.Stat(filepath.Join(dir, "free.txt")); err != nil {
			t.Errorf("command did not run: %v", err)
		}
		if len(a.asked) != 0 {
			t.Errorf("asked %+v", a.asked)
		}
	})

	t.Run("kill, busy and Close", func(t *testing.T) {
		g.fake.Script(codextest.Reply{Text: strings.Repeat("w ", 200), Deltas: 200, ChunkDelay: 50 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tr, err := g.eng.StartTurn(ctx, engine.Request{SessionKey: "s7", Message: "talk", Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.eng.StartTurn(ctx, engine.Request{SessionKey: "s7", Message: "again", Cwd: t.TempDir()}); !errors.Is(err, engine.ErrBusy) {
			t.Errorf("second turn: %v, want ErrBusy", err)
		}
		r := &run{pid: tr.(*codex.Turn).Pid()}
		for tr.Next() {
			r.events = append(r.events, tr.Event())
			if tr.Event().Type == event.TypeChatDelta && len(r.find(event.TypeChatDelta)) == 1 {
				_ = tr.Kill()
			}
		}
		r.err = tr.Err()
		checkOrder(t, r)
		var te *engine.TurnError
		if !errors.As(r.err, &te) || te.Kind != event.ErrorKilled {
			t.Errorf("err %v, want killed", r.err)
		}
		if ex := r.events[len(r.events)-1].Exit; ex.Signal != "SIGKILL" {
			t.Errorf("exit %+v", ex)
		}
		_ = tr.Close()
		waitGone(t, r.pid)

		// Close(key) ends a running turn; the key is free again after.
		g.fake.Script(codextest.Reply{Text: "slow", Delay: 30 * time.Second})
		tr, err = g.eng.StartTurn(context.Background(), engine.Request{SessionKey: "s7", Message: "wait", Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		pid := tr.(*codex.Turn).Pid()
		go func() {
			for tr.Next() {
			}
		}()
		g.eng.Close("s7")
		_ = tr.Close()
		waitGone(t, pid)
	})

	t.Run("stderr never on stdout", func(t *testing.T) {
		logs := g.logs.String()
		if !strings.Contains(logs, `"stderr"`) {
			t.Errorf("no stderr line reached the logger (RUST_LOG=debug): %.300s", logs)
		}
		if strings.Contains(logs, "undecodable line") {
			t.Errorf("stdout carried non-protocol lines: %.500s", logs)
		}
		if strings.Contains(logs, "must-not-leak") || strings.Contains(logs, "sk-must-not-be-logged") {
			t.Error("a withheld secret reached the logs")
		}
	})

	t.Run("contract", func(t *testing.T) {
		mu.Lock()
		defer mu.Unlock()
		checkContract(t, methods)
	})
}

// checkContract compares the methods 0.169.0 sent with the recorded set
// the mapper relies on: a renamed or vanished method fails loudly.
func checkContract(t *testing.T, seen map[string]bool) {
	relied := map[string]bool{"item/agentMessage/delta": true, "item/started": true, "item/completed": true,
		"item/commandExecution/requestApproval": true, "thread/tokenUsage/updated": true, "turn/completed": true, "turn/started": true}
	var got []string
	for m := range seen {
		method, _, _ := strings.Cut(m, " ")
		if relied[method] {
			got = append(got, m)
		}
	}
	sort.Strings(got)
	path := filepath.Join("testdata", "methods.golden")
	if *update {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		if !seen[m] {
			t.Errorf("codex no longer sends %q (recorded in %s; rerun with -update after checking the mapper)", m, path)
		}
	}
}

// shapeKeys lists params' member paths two levels deep ("turn.status"),
// and for an item its type ("item.type=commandExecution").
func shapeKeys(params json.RawMessage) []string {
	var top map[string]json.RawMessage
	if json.Unmarshal(params, &top) != nil {
		return nil
	}
	var out []string
	for k, v := range top {
		out = append(out, k)
		var sub map[string]json.RawMessage
		if json.Unmarshal(v, &sub) == nil {
			for k2 := range sub {
				out = append(out, k+"."+k2)
			}
			var typ string
			if k == "item" && json.Unmarshal(sub["type"], &typ) == nil {
				for k2 := range sub {
					out = append(out, "item("+typ+")."+k2)
				}
			}
		}
	}
	return out
}

// TestShutdown: Shutdown interrupts a running turn, waits for its child,
// and refuses new turns.
func TestShutdown(t *testing.T) {
	g := newRig(t)
	g.fake.Script(codextest.Reply{Text: strings.Repeat("w ", 400), Deltas: 400, ChunkDelay: 50 * time.Millisecond})
	tr, err := g.eng.StartTurn(context.Background(), engine.Request{SessionKey: "k", Message: "talk", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	pid := tr.(*codex.Turn).Pid()
	first := make(chan struct{})
	ended := make(chan []event.Event)
	go func() {
		var evs []event.Event
		for tr.Next() {
			evs = append(evs, tr.Event())
			if tr.Event().Type == event.TypeChatDelta && len(evs) > 0 && evs[len(evs)-2].Type == event.TypeSessionInit {
				close(first)
			}
		}
		ended <- evs
	}()
	select {
	case <-first:
	case <-time.After(60 * time.Second):
		t.Fatal("no delta")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.eng.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	evs := <-ended
	r := &run{events: evs, err: tr.Err()}
	checkOrder(t, r)
	if e := r.find(event.TypeSessionError); len(e) != 1 || e[0].Error.Kind != event.ErrorInterrupted {
		t.Errorf("session:error %+v", e)
	}
	waitGone(t, pid)
	if _, err := g.eng.StartTurn(context.Background(), engine.Request{SessionKey: "k2", Message: "m"}); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("after Shutdown: %v", err)
	}
}
