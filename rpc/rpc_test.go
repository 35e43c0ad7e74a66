package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chirality/harness"
	"github.com/chirality/harness/acp/acptest"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/event"
)

// The test binary also serves as the fake ACP agent (acptest) for the
// tests of an engine that cannot fork.
func TestMain(m *testing.M) {
	if acptest.IsAgent() {
		acptest.Main()
	}
	goleak.VerifyTestMain(m)
}

// msg is one line the server wrote.
type msg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params map[string]any  `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
	raw    string
}

// client drives Serve over pipes.
type client struct {
	t    *testing.T
	in   *io.PipeWriter
	out  chan msg
	done chan error
	mu   sync.Mutex
	seen []msg
}

type env struct {
	api *claudetest.FakeAPI
	cwd string
	cfg harness.Config
	// engines configures the built-in engines each harness() gets.
	engines engines.Config
	home    string
	// extra makes more engines for each harness() (nil = none).
	extra func() []engine.Engine
}

func newEnv(t *testing.T) *env {
	t.Helper()
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	e := &env{api: api, cwd: cwd, home: t.TempDir()}
	e.cfg = harness.Config{Roots: []string{cwd}, StateDir: t.TempDir(),
		ChildEnv: api.Env(), DefaultPermissionMode: "default", Approvals: true, NoProjectLogs: true, Aliases: engines.Aliases}
	e.engines = engines.Config{ClaudeBinary: claudetest.FindCLI(t), Env: claudetest.BaseEnv(e.home), ChildEnv: api.Env(),
		InterruptGrace: time.Second, KillGrace: 2 * time.Second}
	return e
}

// harness returns a Harness of e.cfg on new built-in engines.
func (e *env) harness() (*harness.Harness, error) {
	cfg := e.cfg
	cfg.Engines = engines.Builtin(e.engines)
	if e.extra != nil {
		cfg.Engines = append(cfg.Engines, e.extra()...)
	}
	return harness.New(cfg)
}

// start runs a server over pipes; stop it with close().
func (e *env) start(t *testing.T) *client {
	t.Helper()
	h, err := e.harness()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, in: inW, out: make(chan msg, 10000), done: make(chan error, 1)}
	go func() {
		err := Serve(context.Background(), h, inR, outW, Options{Cwd: e.cwd})
		h.Shutdown(context.Background())
		outW.Close()
		c.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m msg
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil && !strings.HasPrefix(sc.Text(), "[") {
				t.Errorf("not JSON on stdout: %q", sc.Text())
				continue
			}
			m.raw = sc.Text()
			c.out <- m
		}
		close(c.out)
	}()
	return c
}

func (c *client) close() {
	c.t.Helper()
	c.in.Close()
	select {
	case err := <-c.done:
		if err != nil {
			c.t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		c.t.Fatal("Serve did not end at the end of input")
	}
	for range c.out {
	}
}

func (c *client) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// next returns the next line matching pred (others are kept in seen).
func (c *client) next(what string, pred func(msg) bool) msg {
	c.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-c.out:
			if !ok {
				c.t.Fatalf("output ended waiting for %s", what)
			}
			c.mu.Lock()
			c.seen = append(c.seen, m)
			c.mu.Unlock()
			if pred(m) {
				return m
			}
		case <-timeout:
			c.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// call sends a request and returns its response.
func (c *client) call(id int, method string, params any) msg {
	c.t.Helper()
	p, _ := json.Marshal(params)
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, p))
	return c.next(fmt.Sprintf("response %d", id), func(m msg) bool { return string(m.ID) == fmt.Sprint(id) })
}

func (c *client) result(id int, method string, params any, v any) {
	c.t.Helper()
	m := c.call(id, method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
	}
	if v != nil {
		if err := json.Unmarshal(m.Result, v); err != nil {
			c.t.Fatalf("%s: result %s: %v", method, m.Result, err)
		}
	}
}

func isNote(method string) func(msg) bool { return func(m msg) bool { return m.Method == method } }

func TestConformance(t *testing.T) {
	e := newEnv(t)
	c := e.start(t)
	defer c.close()
	var init struct {
		Version      string          `json:"version"`
		Capabilities map[string]bool `json:"capabilities"`
	}
	c.result(1, "initialize", map[string]any{"clientInfo": map[string]any{"name": "test", "version": "1"}, "futureField": 1}, &init)
	if init.Version != "1.0.0" || len(init.Capabilities) != 5 || !init.Capabilities["approvals"] {
		t.Fatalf("initialize %+v", init)
	}
	for _, tc := range []struct {
		line string
		code int
		id   string
	}{
		{`{not json`, CodeParseError, "null"},
		{`{"jsonrpc":"1.0","id":7,"method":"thread.list"}`, CodeInvalidRequest, "7"},
		{`{"jsonrpc":"2.0","id":8}`, CodeInvalidRequest, "8"},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"thread.list"}`, CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":9,"method":"thread.list","params":3}`, CodeInvalidRequest, "9"},
		{`[]`, CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":10,"method":"no.such"}`, CodeMethodNotFound, "10"},
		{`{"jsonrpc":"2.0","id":11,"method":"thread.get","params":{"threadId":5}}`, CodeInvalidParams, "11"},
		{`{"jsonrpc":"2.0","id":12,"method":"thread.get","params":{"threadId":"nope"}}`, CodeThreadNotFound, "12"},
		{`{"jsonrpc":"2.0","id":13,"method":"turn.cancel","params":{"threadId":"nope"}}`, CodeThreadNotFound, "13"},
		{`{"jsonrpc":"2.0","id":14,"method":"approval.respond","params":{"requestId":"apr_x","decision":"once"}}`, CodeApprovalMissing, "14"},
		{`{"jsonrpc":"2.0","id":15,"method":"approval.respond","params":{"requestId":"apr_x","decision":"maybe"}}`, CodeInvalidParams, "15"},
		{`{"jsonrpc":"2.0","id":"s","method":"turn.start","params":{"threadId":"nope","input":[{"type":"text","text":"x"}]}}`, CodeThreadNotFound, `"s"`},
	} {
		c.send(tc.line)
		m := c.next("error for "+tc.line, func(m msg) bool { return m.Error != nil })
		if m.Error.Code != tc.code || string(m.ID) != tc.id {
			t.Errorf("%s: %d id %s, want %d id %s (%s)", tc.line, m.Error.Code, m.ID, tc.code, tc.id, m.Error.Message)
		}
	}
	// A notification (no id) is not answered, even a bad one; the next
	// request's answer comes next.
	c.send(`{"jsonrpc":"2.0","method":"thread.list"}`)
	c.send(`{"jsonrpc":"2.0","method":"no.such"}`)
	if m := c.call(20, "thread.list", map[string]any{}); string(m.ID) != "20" {
		t.Fatalf("answered a notification: %s", m.raw)
	}
	// A batch: an array of the answers, none for its notification.
	c.send(`[{"jsonrpc":"2.0","id":21,"method":"thread.list"},{"jsonrpc":"2.0","method":"thread.list"},{"jsonrpc":"2.0","id":22,"method":"no.such"},5]`)
	b := c.next("batch", func(m msg) bool { return strings.HasPrefix(m.raw, "[") })
	var answers []msg
	json.Unmarshal([]byte(b.raw), &answers)
	if len(answers) != 3 || string(answers[0].ID) != "21" || answers[1].Error.Code != CodeMethodNotFound || answers[2].Error.Code != CodeInvalidRequest {
		t.Fatalf("batch answers %s", b.raw)
	}
	// A line over the bound is an error, not the end.
	c.send(`{"jsonrpc":"2.0","id":30,"method":"thread.create","params":{"title":"` + strings.Repeat("x", 100) + `"}}`)
	var created struct{ Thread Thread }
	json.Unmarshal(c.next("create", func(m msg) bool { return string(m.ID) == "30" }).Result, &created)
	if created.Thread.ThreadID == "" || created.Thread.Directory != e.cwd || created.Thread.Time.Created == 0 {
		t.Fatalf("thread %+v", created.Thread)
	}
	c.next("thread.created", isNote("thread.created"))
	if m := c.call(31, "turn.cancel", map[string]any{"threadId": created.Thread.ThreadID}); m.Error == nil || m.Error.Code != CodeTurnNotFound {
		t.Fatalf("cancel of nothing: %s", m.raw)
	}
	if m := c.call(32, "turn.start", map[string]any{"threadId": created.Thread.ThreadID, "input": []any{}}); m.Error == nil || m.Error.Code != CodeInvalidParams {
		t.Fatalf("empty input: %s", m.raw)
	}
	if m := c.call(33, "turn.start", map[string]any{"threadId": created.Thread.ThreadID, "input": []any{map[string]any{"type": "text", "text": "x"}},
		"model": map[string]any{"providerID": "mystery"}}); m.Error == nil || m.Error.Code != CodeInvalidParams {
		t.Fatalf("unknown provider: %s", m.raw)
	}
}

func TestOversizedLine(t *testing.T) {
	e := newEnv(t)
	h, _ := e.harness()
	defer h.Shutdown(context.Background())
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"thread.list","params":{"x":"` + strings.Repeat("y", 5000) + `"}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"thread.list"}` + "\n")
	var out strings.Builder
	if err := Serve(context.Background(), h, in, &out, Options{Cwd: e.cwd, MaxLineBytes: 1000}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"code":-32600`) || !strings.Contains(lines[1], `"id":2,"result"`) {
		t.Fatalf("output %q", out.String())
	}
}

// touchResponder: the model runs `touch marker` once, then answers.
func touchResponder(r *claudetest.Request) claudetest.Reply {
	last := r.Messages[len(r.Messages)-1]
	answered := false
	for _, c := range last.Content {
		answered = answered || c.Type == "tool_result"
	}
	if !answered {
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Thinking("I should touch it"), claudetest.Text("Touching."),
			claudetest.ToolUse("", "Bash", map[string]any{"command": "touch marker"})}}
	}
	return claudetest.TextReply("done")
}

func TestTurnsWithTheRealCLI(t *testing.T) {
	e := newEnv(t)
	c := e.start(t)
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{"title": "work"}, &created)
	tid := created.Thread.ThreadID
	e.api.SetResponder(touchResponder)

	// An approval rejected: the tool does not run, the turn completes.
	var started struct{ TurnID string }
	c.result(2, "turn.start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "make a marker"}},
		"model": map[string]any{"providerID": "claude-code"}}, &started)
	if m := c.call(3, "turn.start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "again"}}}); m.Error == nil || m.Error.Code != CodeTurnBusy {
		t.Fatalf("second turn: %s", m.raw)
	}
	req := c.next("approval.requested", isNote("approval.requested"))
	if req.Params["tool"] != "Bash" || req.Params["turnId"] != started.TurnID || req.Params["threadId"] != tid || req.Params["itemId"] == nil {
		t.Fatalf("approval.requested %v", req.Params)
	}
	c.result(4, "approval.respond", map[string]any{"requestId": req.Params["requestId"], "decision": "reject"}, nil)
	end := c.next("turn end", func(m msg) bool { return m.Method == "turn.completed" || m.Method == "turn.error" })
	if end.Method != "turn.completed" || end.Params["turn"].(map[string]any)["status"] != "completed" {
		t.Fatalf("turn ended %s", end.raw)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "marker")); err == nil {
		t.Fatal("the rejected tool ran")
	}
	if m := c.call(5, "approval.respond", map[string]any{"requestId": req.Params["requestId"], "decision": "once"}); m.Error == nil || m.Error.Code != CodeApprovalMissing {
		t.Fatalf("answer after the turn: %s", m.raw)
	}
	// The same, allowed once: the tool runs, its output is logged.
	c.result(6, "turn.start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "make it now"}}}, &started)
	req = c.next("approval.requested", isNote("approval.requested"))
	c.result(7, "approval.respond", map[string]any{"requestId": req.Params["requestId"], "decision": "once"}, nil)
	c.next("turn.completed", isNote("turn.completed"))
	if _, err := os.Stat(filepath.Join(e.cwd, "marker")); err != nil {
		t.Fatal("the approved tool did not run")
	}

	// Every notification has threadId, turnId and a per-thread seq in
	// order; items start before their deltas and complete.
	c.mu.Lock()
	seen := append([]msg(nil), c.seen...)
	c.mu.Unlock()
	var seqs []float64
	types := map[string]bool{}
	for _, m := range seen {
		if m.Method == "" {
			continue
		}
		seqs = append(seqs, m.Params["seq"].(float64))
		if m.Method != "thread.created" && (m.Params["threadId"] != tid || m.Params["turnId"] == nil) {
			t.Fatalf("%s lacks threadId/turnId: %v", m.Method, m.Params)
		}
		if it, ok := m.Params["item"].(map[string]any); ok {
			types[it["type"].(string)] = true
		}
		if m.Method == "item.delta" && m.Params["kind"] == nil {
			t.Fatalf("delta without kind %v", m.Params)
		}
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("seqs not consecutive: %v", seqs)
		}
	}
	for _, typ := range []string{"user_message", "assistant_message", "tool_exec", "tool_log", "approval"} {
		if !types[typ] {
			t.Errorf("no %s item", typ)
		}
	}

	// Cancel mid-turn: turn.completed with status cancelled.
	e.api.SetResponder(func(*claudetest.Request) claudetest.Reply {
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("slow ", 300))}, ChunkSize: 4, ChunkDelay: 20 * time.Millisecond}
	})
	c.result(8, "turn.start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "talk"}}}, nil)
	c.next("a delta", isNote("item.delta"))
	c.result(9, "turn.cancel", map[string]any{"threadId": tid}, nil)
	end = c.next("turn.completed", isNote("turn.completed"))
	if end.Params["turn"].(map[string]any)["status"] != "cancelled" {
		t.Fatalf("cancelled turn ended %s", end.raw)
	}
	var before struct {
		Thread Thread
		Events []json.RawMessage
	}
	c.result(10, "thread.get", map[string]any{"threadId": tid}, &before)
	c.close()

	// Files on disk as specified; after a restart the history is identical.
	for _, f := range []string{"meta.json", "events.jsonl"} {
		if _, err := os.Stat(filepath.Join(e.cwd, ".harness", "threads", tid, f)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	c2 := e.start(t)
	defer c2.close()
	var after struct {
		Thread Thread
		Events []json.RawMessage
	}
	c2.result(1, "thread.get", map[string]any{"threadId": tid}, &after)
	if len(after.Events) == 0 || len(after.Events) != len(before.Events) || string(after.Events[len(after.Events)-1]) != string(before.Events[len(before.Events)-1]) {
		t.Fatalf("history after a restart: %d events, before %d", len(after.Events), len(before.Events))
	}
	var list struct{ Threads []Thread }
	c2.result(2, "thread.list", map[string]any{}, &list)
	if len(list.Threads) != 1 || list.Threads[0].Title != "work" {
		t.Fatalf("threads %+v", list.Threads)
	}
}

func TestTurnOnTheNativeEngine(t *testing.T) {
	e := newEnv(t)
	os.WriteFile(filepath.Join(e.cwd, "notes.txt"), []byte("APRICOT\n"), 0o644)
	e.api.Script(
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("t1", "read", map[string]any{"path": "notes.txt"})}},
		claudetest.TextReply("It says APRICOT."),
	)
	c := e.start(t)
	defer c.close()
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{}, &created)
	c.result(2, "turn.start", map[string]any{"threadId": created.Thread.ThreadID, "input": []any{map[string]any{"type": "text", "text": "read my notes"}},
		"model": map[string]any{"providerID": "anthropic", "modelID": "haiku"}}, nil)
	end := c.next("turn end", func(m msg) bool { return m.Method == "turn.completed" || m.Method == "turn.error" })
	if end.Method != "turn.completed" {
		t.Fatalf("native turn: %s", end.raw)
	}
	tool := c.seenItem("tool_exec", "item.completed")
	if tool == nil || !strings.Contains(fmt.Sprint(tool["data"]), "APRICOT") {
		t.Fatalf("tool item %v", tool)
	}
	if m := c.call(3, "turn.start", map[string]any{"threadId": created.Thread.ThreadID, "input": []any{map[string]any{"type": "text", "text": "x"}},
		"model": map[string]any{"providerID": "claude-code"}}); m.Error == nil || m.Error.Code != CodeInvalidParams {
		t.Fatalf("switching engines: %s", m.raw)
	}
}

func (c *client) seenItem(typ, method string) map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.seen {
		if it, ok := m.Params["item"].(map[string]any); ok && m.Method == method && it["type"] == typ {
			return it
		}
	}
	return nil
}

// keysOf lists the keys of a JSON object, recursively for params, result
// and item ("params.turn.status"…), skipping data and usage contents.
func keysOf(prefix string, v any, out map[string]bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, x := range m {
		out[prefix+k] = true
		if k != "data" && k != "usage" && k != "input" && k != "capabilities" {
			keysOf(prefix+k+".", x, out)
		}
	}
}

// TestProtocolExample replays PROTOCOL.md's example session against a
// real server and compares every line's method and keys.
func TestProtocolExample(t *testing.T) {
	for _, file := range []string{"PROTOCOL.md", "../README.md"} {
		t.Run(filepath.Base(file), func(t *testing.T) { replayExample(t, file) })
	}
}

func replayExample(t *testing.T, file string) {
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block := strings.SplitN(strings.SplitN(string(doc), "<!-- rpc-example -->\n```\n", 2)[1], "```", 2)[0]
	e := newEnv(t)
	e.api.Script(claudetest.TextReply("Hello from the model."))
	c := e.start(t)
	defer c.close()
	ids := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		dir, text, _ := strings.Cut(line, " ")
		switch dir {
		case "→":
			for k, v := range ids { // the example's T, U stand for the real ids
				text = strings.ReplaceAll(text, `"`+k+`"`, `"`+v+`"`)
			}
			c.send(text)
		case "←":
			var want map[string]any
			if err := json.Unmarshal([]byte(text), &want); err != nil {
				t.Fatalf("example line %q: %v", text, err)
			}
			got := c.next("the example's next line", func(msg) bool { return true })
			var gotM map[string]any
			json.Unmarshal([]byte(got.raw), &gotM)
			wk, gk := map[string]bool{}, map[string]bool{}
			keysOf("", want, wk)
			keysOf("", gotM, gk)
			if fmt.Sprint(want["method"]) != fmt.Sprint(gotM["method"]) || fmt.Sprint(wk) != fmt.Sprint(gk) {
				t.Fatalf("line differs from the example:\n want %s\n  got %s", text, got.raw)
			}
			if r, ok := gotM["result"].(map[string]any); ok {
				if th, ok := r["thread"].(map[string]any); ok {
					ids["T"] = th["threadId"].(string)
				}
				if u, ok := r["turnId"].(string); ok {
					ids["U"] = u
				}
			}
		default:
			t.Fatalf("example line %q", line)
		}
	}
}

// A file a Write or Edit tool changed becomes an artifact item.
func TestArtifactItems(t *testing.T) {
	f, out := newTestFollower(t)
	for _, ev := range []string{
		`{"type":"tool:start","toolUseId":"t1","name":"Write","input":{"file_path":"/p/new.go","content":"x"}}`,
		`{"type":"tool:result","toolUseId":"t1","content":"written","isError":false}`,
		`{"type":"tool:start","toolUseId":"t2","name":"Edit","input":{"file_path":"/p/bad.go"}}`,
		`{"type":"tool:result","toolUseId":"t2","content":"no match","isError":true}`,
	} {
		var e event.Event
		json.Unmarshal([]byte(ev), &e)
		f.apply(e)
	}
	got := out.String()
	if strings.Count(got, `"type":"artifact"`) != 2 || !strings.Contains(got, `"path":"/p/new.go"`) || strings.Contains(got, "bad.go\",\"tool\"") {
		t.Fatalf("artifacts:\n%s", got)
	}
}

// BenchmarkNotify: one core event to its notification on the wire
// (mapped and written; a thread stored in its session's log stores no
// notification of a turn).
func BenchmarkNotify(b *testing.B) {
	cwd, _ := filepath.EvalSymlinks(b.TempDir())
	h, _ := harness.New(harness.Config{Roots: []string{cwd}, StateDir: b.TempDir(), NoProjectLogs: true, Engines: engines.Builtin(engines.Config{})})
	defer h.Shutdown(context.Background())
	s, _ := NewServer(h, io.Discard, Options{Cwd: cwd})
	res, _ := s.threadCreate(json.RawMessage(`{}`))
	tid := res.(deferred).result.(map[string]any)["thread"].(Thread).ThreadID
	f := &follower{s: s, t: s.threads[tid], turn: Turn{TurnID: "turn_1", ThreadID: tid}, tools: map[string]toolItem{}, approvals: map[string]string{}}
	ev := event.Event{Type: event.TypeChatDelta, Text: "a token "}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		f.apply(ev)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
