package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/sandbox"

	"github.com/chirality/harness/claudecode/claudetest"
)

// The test binary is also the sandbox entry sandboxed MCP servers start
// through.
func TestMain(m *testing.M) {
	sandbox.Main()
	if os.Getenv(dialServerEnv) == "1" {
		os.Exit(dialServer())
	}
	goleak.VerifyTestMain(m)
}

// fakeTool records its calls and answers out, or fails with err.
type fakeTool struct {
	name string
	out  string
	err  error
	mu   *sync.Mutex
	log  *[]string
}

func (f fakeTool) Name() string        { return f.name }
func (f fakeTool) Description() string { return "the " + f.name + " tool" }
func (f fakeTool) InputSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`)
}
func (f fakeTool) Execute(_ context.Context, input json.RawMessage) (string, error) {
	f.mu.Lock()
	*f.log = append(*f.log, f.name+string(input))
	f.mu.Unlock()
	return f.out, f.err
}

// recorder is an EventHandler (with every optional interface) that keeps
// the events as strings.
type recorder struct {
	mu  sync.Mutex
	evs []string
}

func (r *recorder) add(s string)    { r.mu.Lock(); r.evs = append(r.evs, s); r.mu.Unlock() }
func (r *recorder) OnText(t string) { r.add("text:" + t) }
func (r *recorder) OnToolCall(id, name string, in json.RawMessage) {
	r.add("call:" + name + string(in))
}
func (r *recorder) OnToolResult(id, res string, isErr bool) {
	r.add(fmt.Sprintf("result:%s:%v", res, isErr))
}
func (r *recorder) OnUser(c string)      { r.add("user:" + c) }
func (r *recorder) OnReasoning(t string) { r.add("reasoning:" + t) }
func (r *recorder) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.evs...)
}

type fixture struct {
	api   *claudetest.FakeAPI
	mu    sync.Mutex
	calls []string
}

func newFixture(t *testing.T) *fixture {
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	return &fixture{api: api}
}

func (f *fixture) tool(name, out string, err error) Tool {
	return fakeTool{name: name, out: out, err: err, mu: &f.mu, log: &f.calls}
}

func (f *fixture) harness(cfg Config, tools []Tool, h EventHandler) *Harness {
	if cfg.APIKey == "" {
		cfg.APIKey = "test-key"
	}
	cfg.BaseURL = f.api.URL
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = -1
	}
	return NewHarness(cfg, tools, h)
}

func use(id, name string) claudetest.Block {
	return claudetest.ToolUse(id, name, map[string]any{"x": id})
}

func TestTextOnlyIsOneCall(t *testing.T) {
	f := newFixture(t)
	f.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Thinking("hmm"), claudetest.Text("hello there")}})
	rec := &recorder{}
	h := f.harness(Config{SystemPrompt: "be brief"}, []Tool{f.tool("a", "A", nil)}, rec)
	if err := h.Prompt(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	want := []string{"user:hi", "reasoning:hmm", "text:hello there"}
	if got := rec.events(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events %q, want %q", got, want)
	}
	reqs := f.api.Requests()
	if len(reqs) != 1 || reqs[0].Model != DefaultModel || reqs[0].SystemText() != "be brief" || reqs[0].MaxTokens != 4096 {
		t.Fatalf("requests %+v", reqs)
	}
}

func TestToolsInOrderAndRegisteredEveryTime(t *testing.T) {
	f := newFixture(t)
	f.api.Script(
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("let me look"), use("t1", "a"), use("t2", "b"), use("t3", "a")}},
		claudetest.TextReply("done"),
	)
	rec := &recorder{}
	h := f.harness(Config{}, []Tool{f.tool("a", "A-out", nil), f.tool("b", "B-out", nil)}, rec)
	if err := h.Prompt(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.calls, ","); got != `a{"x":"t1"},b{"x":"t2"},a{"x":"t3"}` {
		t.Fatalf("tools ran %s, want in order", got)
	}
	want := []string{"user:go", "text:let me look", `call:a{"x":"t1"}`, `call:b{"x":"t2"}`, `call:a{"x":"t3"}`,
		"result:A-out:false", "result:B-out:false", "result:A-out:false", "text:done"}
	if got := rec.events(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events\n %q\nwant\n %q", got, want)
	}
	reqs := f.api.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		var body struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"input_schema"`
				Description string          `json:"description"`
			} `json:"tools"`
			ToolChoice struct {
				Type string `json:"type"`
			} `json:"tool_choice"`
		}
		json.Unmarshal(r.Body, &body)
		if len(body.Tools) != 2 || body.Tools[0].Name != "a" || !strings.Contains(string(body.Tools[0].InputSchema), `"required":["x"]`) ||
			body.Tools[1].Description != "the b tool" || body.ToolChoice.Type != "auto" {
			t.Fatalf("request %d: tools %+v choice %q", i, body.Tools, body.ToolChoice.Type)
		}
	}
	if res := reqs[1].ToolResults(); len(res) != 3 || res[0].ToolUseID != "t1" || res[2].ToolUseID != "t3" {
		t.Fatalf("results sent back %+v", res)
	}
}

func TestFirstFailureSkipsTheRest(t *testing.T) {
	f := newFixture(t)
	f.api.Script(
		claudetest.Reply{Blocks: []claudetest.Block{use("t1", "ok"), use("t2", "bad"), use("t3", "ok"), use("t4", "ok")}},
		claudetest.TextReply("I see the failure"),
	)
	rec := &recorder{}
	h := f.harness(Config{}, []Tool{f.tool("ok", "fine", nil), f.tool("bad", "", errors.New("disk on fire"))}, rec)
	if err := h.Prompt(context.Background(), "go"); err != nil {
		t.Fatalf("a tool error is not a Go error of the loop: %v", err)
	}
	if got := strings.Join(f.calls, ","); got != `ok{"x":"t1"},bad{"x":"t2"}` {
		t.Fatalf("ran %s: the tools after the failure must not run", got)
	}
	res := f.api.Requests()[1].ToolResults()
	if len(res) != 4 || res[0].IsError || !res[1].IsError || res[1].Content != "disk on fire" ||
		!res[2].IsError || res[2].Content != SkippedResult || !res[3].IsError {
		t.Fatalf("results sent back %+v", res)
	}
	ev := rec.events()
	if ev[len(ev)-2] != "result:"+SkippedResult+":true" || ev[len(ev)-1] != "text:I see the failure" {
		t.Fatalf("events %q", ev)
	}
}

// The fake rejects, as the real API does, a tool_use without its result:
// the history a failed/skipped round leaves is accepted by the next call.
func TestFakeRejectsMissingToolResult(t *testing.T) {
	f := newFixture(t)
	body := `{"model":"m","max_tokens":10,"stream":false,"messages":[{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"a","input":{}}]},{"role":"user","content":"again"}]}`
	resp, err := httpPost(f.api.URL+"/v1/messages", body)
	if err != nil || resp != 400 {
		t.Fatalf("status %d (%v), want 400", resp, err)
	}
}

func TestMaxTurns(t *testing.T) {
	f := newFixture(t)
	f.api.SetResponder(func(*claudetest.Request) claudetest.Reply {
		return claudetest.Reply{Blocks: []claudetest.Block{use("", "a")}}
	})
	h := f.harness(Config{MaxTurns: 3}, []Tool{f.tool("a", "again", nil)}, nil) // nil handler: silent
	err := h.Prompt(context.Background(), "loop")
	if !errors.Is(err, ErrMaxTurns) || len(f.api.Requests()) != 3 {
		t.Fatalf("err %v after %d calls, want ErrMaxTurns after 3", err, len(f.api.Requests()))
	}
}

func TestCancelMidStreamAndBusy(t *testing.T) {
	f := newFixture(t)
	f.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("slow ", 500))}, ChunkSize: 5, ChunkDelay: 20 * time.Millisecond})
	h := f.harness(Config{}, nil, nil)
	done := make(chan error, 1)
	go func() { done <- h.Prompt(context.Background(), "talk") }()
	deadline := time.Now().Add(10 * time.Second)
	for len(f.api.Requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := h.Prompt(context.Background(), "again"); !errors.Is(err, engine.ErrBusy) {
		t.Fatalf("concurrent Prompt: %v, want ErrBusy", err)
	}
	h.Cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Prompt: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Cancel did not stop the stream")
	}
	h.Cancel() // idle: a no-op
	// The history stays usable: the next prompt merges into the pending
	// user message, and the model gets both.
	f.api.Script(claudetest.TextReply("ok"))
	if err := h.Prompt(context.Background(), "second"); err != nil {
		t.Fatal(err)
	}
	last := f.api.Requests()[len(f.api.Requests())-1]
	if len(last.Messages) != 1 || len(last.Messages[0].Content) != 2 {
		t.Fatalf("messages after a cancel %+v", last.Messages)
	}
}

func TestHistoryAcrossPromptsAndPersistence(t *testing.T) {
	f := newFixture(t)
	f.api.Script(claudetest.TextReply("first answer"), claudetest.TextReply("second answer"))
	h := f.harness(Config{}, nil, nil)
	if err := h.Prompt(context.Background(), "remember MANGO"); err != nil {
		t.Fatal(err)
	}
	if err := h.Prompt(context.Background(), "what did I say?"); err != nil {
		t.Fatal(err)
	}
	msgs := f.api.Requests()[1].Messages
	if len(msgs) != 3 || msgs[0].Content[0].Text != "remember MANGO" || msgs[1].Content[0].Text != "first answer" {
		t.Fatalf("second request's history %+v", msgs)
	}
	data, err := h.MarshalHistory()
	if err != nil {
		t.Fatal(err)
	}
	h2 := f.harness(Config{}, nil, nil)
	if err := h2.LoadHistory(data); err != nil || len(h2.History()) != 4 {
		t.Fatalf("reloaded history: %d messages, %v", len(h2.History()), err)
	}
}

func TestConfigDefaultsAndKey(t *testing.T) {
	h := NewHarness(Config{}, nil, nil)
	if err := h.Validate(); !errors.Is(err, ErrNoAPIKey) {
		t.Fatalf("Validate: %v", err)
	}
	if err := h.Prompt(context.Background(), "x"); !errors.Is(err, ErrNoAPIKey) {
		t.Fatalf("Prompt without a key: %v", err)
	}
	for name, want := range map[string]string{
		"": DefaultModel, "haiku": "claude-haiku-5-5", "Sonnet": "claude-sonnet-5-5", "opus": "claude-opus-5-5",
		"claude-3-haiku-20240307": "claude-3-haiku-20240307", "claude-sonnet-4-5": "claude-sonnet-4-5",
	} {
		if got := ResolveModel(name); got != want {
			t.Errorf("ResolveModel(%q) = %q, want %q", name, got, want)
		}
	}
	if c := Cost("claude-haiku-5-5", Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}); c != 6 {
		t.Errorf("cost %v", c)
	}
}

// The model ID given is the one sent, a retired one included (the
// endpoint may still serve it): it is mapped to its family's current
// model only with UpgradeRetired; an alias is mapped always.
func TestModelIDIsSentAsGiven(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Model: "claude-3-5-sonnet-20241022"}, "claude-3-5-sonnet-20241022"},
		{Config{Model: "claude-3-haiku-20240307"}, "claude-3-haiku-20240307"},
		{Config{Model: "claude-3-5-sonnet-20241022", UpgradeRetired: true}, "claude-sonnet-5-5"},
		{Config{Model: "claude-sonnet-4-5", UpgradeRetired: true}, "claude-sonnet-4-5"},
		{Config{Model: "sonnet"}, "claude-sonnet-5-5"},
	} {
		f.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("ok")}})
		if err := f.harness(c.cfg, nil, nil).Prompt(context.Background(), "x"); err != nil {
			t.Fatal(err)
		}
		reqs := f.api.Requests()
		if got := reqs[len(reqs)-1].Model; got != c.want {
			t.Errorf("%+v: the request's model %q, want %q", c.cfg, got, c.want)
		}
	}
}

func TestAPIErrorIsReturned(t *testing.T) {
	f := newFixture(t)
	f.api.Script(claudetest.ErrorReply(529, "overloaded"))
	err := f.harness(Config{}, nil, nil).Prompt(context.Background(), "x")
	if err == nil || !strings.Contains(err.Error(), "529") {
		t.Fatalf("err %v", err)
	}
}

func httpPost(url, body string) (int, error) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
