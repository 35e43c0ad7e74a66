package claudecode_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
)

// shape is an event stream without what differs between two runs of the
// same scenario (ids, costs, durations).
func shape(evs []event.Event) []string {
	var out []string
	for _, e := range evs {
		s := string(e.Type) + ":" + e.Text
		if e.ToolStart != nil {
			s += e.ToolStart.Name + string(e.ToolStart.Input)
		}
		if e.ToolResult != nil {
			s += e.ToolResult.Content
		}
		out = append(out, s)
	}
	return out
}

func drain(t *testing.T, tr *claudecode.Turn) []event.Event {
	t.Helper()
	defer tr.Close()
	var evs []event.Event
	for tr.Next() {
		evs = append(evs, tr.Event())
	}
	assertWellFormed(t, evs)
	return evs
}

func TestWarmTurnIsAColdTurnStartedEarlier(t *testing.T) {
	r := newRealCLI(t)
	opts := claudecode.TurnOpts{Cwd: r.cwd}
	script := func() {
		r.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Thinking("hmm"), claudetest.Text("warm or cold, the same words")}})
	}
	script()
	cold, err := r.turn("s-cold", "hello", opts)
	if err != nil {
		t.Fatal(err)
	}

	w, err := r.mgr.Prestart(context.Background(), "s-warm", opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.mgr.IsRunning("s-warm") {
		t.Fatal("a warm child is not a running turn")
	}
	// It waits: started, alive, and the API has not been asked anything
	// for it yet.
	before := len(r.api.Requests())
	time.Sleep(300 * time.Millisecond) // give a misbehaving CLI the chance to call the API early
	if !w.Alive() || len(r.api.Requests()) != before {
		t.Fatalf("alive %v, %d API requests before its message", w.Alive(), len(r.api.Requests())-before)
	}
	if !w.MatchesOpts(opts) || w.MatchesOpts(claudecode.TurnOpts{Cwd: r.cwd, Model: "other"}) {
		t.Fatal("Matches does not follow the options")
	}
	pid := w.Pid()
	script()
	tr, err := w.Send("hello", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Pid() != pid {
		t.Fatalf("the turn runs in pid %d, not the warm child %d", tr.Pid(), pid)
	}
	warm := drain(t, tr)
	if got, want := shape(warm), shape(cold); !slices.Equal(got, want) {
		t.Fatalf("warm turn events differ from a cold turn's:\n warm %q\n cold %q", got, want)
	}
	w.Stop() // after Send: nothing to do
}

func TestWarmPromptChangeAndDeath(t *testing.T) {
	r := newRealCLI(t)
	prompt := filepath.Join(t.TempDir(), "system.txt")
	os.WriteFile(prompt, []byte("first persona"), 0o600)
	opts := claudecode.TurnOpts{Cwd: r.cwd, AppendSystemPromptFile: prompt}
	w, err := r.mgr.Prestart(context.Background(), "s1", opts)
	if err != nil {
		t.Fatal(err)
	}
	if !w.MatchesOpts(opts) {
		t.Fatal("unchanged options do not match")
	}
	withMCP := opts
	withMCP.MCP = &mcpconfig.Config{Servers: []mcpconfig.Server{{Name: "a", Type: mcpconfig.Stdio, Command: "x", Env: map[string]string{"K": "1"}}}}
	if w.MatchesOpts(withMCP) {
		t.Fatal("other MCP servers match the warm child")
	}
	os.WriteFile(prompt, []byte("edited persona"), 0o600)
	if w.MatchesOpts(opts) {
		t.Fatal("an edited system prompt still matches the warm child")
	}
	// Killed while waiting: Send says so, and nothing is left.
	pid := w.Pid()
	syscall.Kill(-pid, syscall.SIGKILL)
	waitGone(t, pid)
	// The group is gone once the child is reaped; the Warm learns of it
	// just after, when its waiter closes: wait for that, not a moment.
	deadline := time.Now().Add(10 * time.Second)
	for w.Alive() {
		if time.Now().After(deadline) {
			t.Fatal("the Warm still says alive 10 s after its child was reaped")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := w.Send("hi", nil); !errors.Is(err, claudecode.ErrWarmDied) {
		t.Fatalf("Send to a dead warm child: %v, want ErrWarmDied", err)
	}
	if r.mgr.IsRunning("s1") {
		t.Fatal("a failed Send left the key busy")
	}
}

func TestWarmStoppedByStopAndShutdown(t *testing.T) {
	r := newRealCLI(t)
	w1, err := r.mgr.Prestart(context.Background(), "a", claudecode.TurnOpts{Cwd: r.cwd})
	if err != nil {
		t.Fatal(err)
	}
	w2, err := r.mgr.Prestart(context.Background(), "b", claudecode.TurnOpts{Cwd: r.cwd})
	if err != nil {
		t.Fatal(err)
	}
	w1.Stop()
	waitGone(t, w1.Pid())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.mgr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, w2.Pid())
	if _, err := r.mgr.Prestart(context.Background(), "c", claudecode.TurnOpts{Cwd: r.cwd}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("Prestart after Shutdown: %v", err)
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH) {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still alive", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWarmPrestartAsksTheAPINothing: what Prestart sends the waiting CLI
// (initialize, a local context-usage summary) makes no request to the API
// of any kind — no message, no count_tokens — and the turn that follows
// is answered as usual.
func TestWarmPrestartAsksTheAPINothing(t *testing.T) {
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	var mu sync.Mutex
	var seen []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		seen = append(seen, req.Method+" "+req.URL.Path)
		mu.Unlock()
		api.ServeHTTP(w, req)
	}))
	t.Cleanup(proxy.Close)
	requests := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
	r := newRealCLI(t, "ANTHROPIC_BASE_URL="+proxy.URL)

	answered := make(chan struct{})
	var once sync.Once
	opts := claudecode.TurnOpts{Cwd: r.cwd, OnFrame: func(f claudecode.Frame) {
		if f.Type == "control_response" && bytes.Contains(f.Raw, []byte(`"harness_warm_context"`)) {
			once.Do(func() { close(answered) })
		}
	}}
	w, err := r.mgr.Prestart(context.Background(), "s-quiet", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case <-answered:
	case <-time.After(60 * time.Second):
		t.Fatal("the CLI never answered the prestart's context-usage request")
	}
	if got := requests(); len(got) != 0 {
		t.Fatalf("the waiting CLI asked the API %q before its message", got)
	}
	api.Script(claudetest.TextReply("answered as usual"))
	tr, err := w.Send("hello", nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := drain(t, tr)
	var text string
	for _, e := range evs {
		if e.Type == event.TypeChatDelta {
			text += e.Text
		}
	}
	if text != "answered as usual" {
		t.Fatalf("answer %q, events %q", text, shape(evs))
	}
	if got := requests(); !slices.Contains(got, "POST /v1/messages") {
		t.Fatalf("the turn's requests: %q", got)
	}
}
