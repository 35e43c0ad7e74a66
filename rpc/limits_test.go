package rpc

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every string a client sends has a bound: over it is -32602 (-32601 for
// a method), and the error never echoes the value whole.
func TestStringLimits(t *testing.T) {
	e := newEnv(t)
	c := e.start(t)
	defer c.close()
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{"title": strings.Repeat("t", MaxTitleBytes)}, &created)
	if len(created.Thread.Title) != MaxTitleBytes {
		t.Fatalf("a title at the limit came back %d bytes", len(created.Thread.Title))
	}
	tid := created.Thread.ThreadID
	long := func(n int) string { return strings.Repeat("Z", n) }
	text := func(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }
	for i, tc := range []struct {
		method string
		params map[string]any
		code   int
	}{
		{"thread.create", map[string]any{"title": long(MaxTitleBytes + 1)}, CodeInvalidParams},
		{"thread.create", map[string]any{"title": long(5 << 20)}, CodeInvalidParams},
		{"thread.create", map[string]any{"directory": long(MaxPathBytes + 1)}, CodeInvalidParams},
		{"thread.get", map[string]any{"threadId": long(MaxNameBytes + 1)}, CodeInvalidParams},
		{"thread.get", map[string]any{"threadId": long(100 << 10)}, CodeInvalidParams},
		{"turn.cancel", map[string]any{"threadId": long(MaxNameBytes + 1)}, CodeInvalidParams},
		{"turn.start", map[string]any{"threadId": tid, "input": text(long(MaxInputBytes + 1))}, CodeInvalidParams},
		{"turn.start", map[string]any{"threadId": tid, "input": append(text(long(MaxInputBytes/2)), text(long(MaxInputBytes/2))...)}, CodeInvalidParams},
		{"turn.start", map[string]any{"threadId": tid, "input": text("hi"), "agent": long(MaxNameBytes + 1)}, CodeInvalidParams},
		{"turn.start", map[string]any{"threadId": tid, "input": text("hi"), "model": map[string]any{"providerID": "anthropic", "modelID": long(MaxNameBytes + 1)}}, CodeInvalidParams},
		{"turn.start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": long(5000), "text": "x"}}}, CodeInvalidParams},
		{"approval.respond", map[string]any{"requestId": long(MaxNameBytes + 1), "decision": "once"}, CodeInvalidParams},
		{"approval.respond", map[string]any{"requestId": "apr_x", "decision": long(MaxNameBytes + 1)}, CodeInvalidParams},
		{"initialize", map[string]any{"clientInfo": map[string]any{"name": long(MaxNameBytes + 1)}}, CodeInvalidParams},
		{long(100 << 10), map[string]any{}, CodeMethodNotFound},
	} {
		m := c.call(10+i, tc.method, tc.params)
		if m.Error == nil || m.Error.Code != tc.code {
			t.Errorf("%s %d: %.200s, want error %d", clip(tc.method), i, m.raw, tc.code)
			continue
		}
		if len(m.raw) > 400 || strings.Contains(m.raw, long(70)) {
			t.Errorf("%s %d: the error echoes the value: %d bytes", clip(tc.method), i, len(m.raw))
		}
	}
	var list struct{ Threads []Thread }
	c.result(40, "thread.list", nil, &list)
	if len(list.Threads) != 1 {
		t.Errorf("%d threads, want only the one at the limit", len(list.Threads))
	}
}

// A batch holds at most MaxBatch requests: a longer one is one -32600
// answer (id null, not an array) and none of it runs.
func TestBatchBound(t *testing.T) {
	e := newEnv(t)
	c := e.start(t)
	defer c.close()
	batch := func(n, from int, method string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, from+i, method)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	for _, n := range []int{MaxBatch + 1, 1000} {
		c.send(batch(n, 1000, "thread.create"))
		m := c.next("the batch's error", func(m msg) bool { return m.Error != nil || strings.HasPrefix(m.raw, "[") })
		if strings.HasPrefix(m.raw, "[") || m.Error.Code != CodeInvalidRequest || string(m.ID) != "null" ||
			!strings.Contains(m.Error.Message, fmt.Sprint(MaxBatch)) {
			t.Fatalf("batch of %d: %.300s", n, m.raw)
		}
	}
	var list struct{ Threads []Thread }
	c.result(1, "thread.list", nil, &list)
	if len(list.Threads) != 0 {
		t.Fatalf("a refused batch created %d threads", len(list.Threads))
	}
	// MaxBatch exactly: all answered, in order, in one array.
	c.send(batch(MaxBatch, 2000, "thread.list"))
	m := c.next("the batch", func(m msg) bool { return strings.HasPrefix(m.raw, "[") })
	var answers []msg
	if err := json.Unmarshal([]byte(m.raw), &answers); err != nil || len(answers) != MaxBatch {
		t.Fatalf("%d answers (%v)", len(answers), err)
	}
	for i, a := range answers {
		if string(a.ID) != fmt.Sprint(2000+i) || a.Error != nil || !strings.Contains(string(a.Result), `"threads":[]`) {
			t.Fatalf("answer %d: %s", i, a.raw)
		}
	}
}

// A batch's answers are written piece by piece (thread.get and
// thread.list straight from the log and the thread table); the line is
// still one valid array, with the answers in order, none for
// notifications, invalid elements answered in place.
func TestBatchStreamedAnswers(t *testing.T) {
	e := newEnv(t)
	c := e.start(t)
	defer c.close()
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{"title": "a \"quoted\"\n title"}, &created)
	c.next("thread.created", isNote("thread.created"))
	tid := created.Thread.ThreadID
	c.send(`[{"jsonrpc":"2.0","id":"g","method":"thread.get","params":{"threadId":"` + tid + `"}},` +
		`{"jsonrpc":"2.0","method":"thread.get","params":{"threadId":"` + tid + `"}},` +
		`{"jsonrpc":"2.0","id":"l","method":"thread.list"},7,` +
		`{"jsonrpc":"2.0","id":"x","method":"thread.get","params":{"threadId":"nope"}}]`)
	m := c.next("the batch", func(m msg) bool { return strings.HasPrefix(m.raw, "[") })
	var answers []msg
	if err := json.Unmarshal([]byte(m.raw), &answers); err != nil || len(answers) != 4 {
		t.Fatalf("batch %s (%v)", m.raw, err)
	}
	var got struct {
		Thread Thread
		Events []map[string]any
	}
	if err := json.Unmarshal(answers[0].Result, &got); err != nil || got.Thread.Title != created.Thread.Title ||
		len(got.Events) != 1 || got.Events[0]["method"] != "thread.created" {
		t.Errorf("thread.get in a batch: %s", answers[0].raw)
	}
	var list struct{ Threads []Thread }
	if err := json.Unmarshal(answers[1].Result, &list); err != nil || len(list.Threads) != 1 || list.Threads[0].Title != created.Thread.Title {
		t.Errorf("thread.list in a batch: %s", answers[1].Result)
	}
	if answers[2].Error == nil || answers[2].Error.Code != CodeInvalidRequest || answers[3].Error == nil || answers[3].Error.Code != CodeThreadNotFound {
		t.Errorf("errors in place: %s", m.raw)
	}
}

// A title over the bound stored by an older server is cut when the
// thread is loaded: thread.list never carries it whole.
func TestOversizedStoredTitleIsCut(t *testing.T) {
	e := newEnv(t)
	id := "0b5c0f5e-7a52-4d0e-9f0a-3a1f6d2f7c11"
	dir := filepath.Join(e.cwd, ".harness", "threads", id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	title := strings.Repeat("é", 3<<20) // 6 MB; the cut falls inside a rune
	b, _ := json.Marshal(meta{Thread: Thread{ThreadID: id, Title: title, Directory: e.cwd}})
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	c := e.start(t)
	defer c.close()
	var list struct{ Threads []Thread }
	c.result(1, "thread.list", nil, &list)
	if len(list.Threads) != 1 || len(list.Threads[0].Title) > MaxTitleBytes || len(list.Threads[0].Title) < MaxTitleBytes-1 ||
		!strings.HasPrefix(title, list.Threads[0].Title) {
		t.Fatalf("title of %d bytes", len(list.Threads[0].Title))
	}
}
