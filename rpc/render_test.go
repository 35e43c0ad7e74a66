package rpc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/session"
)

// An RPC turn is stored once: the thread's events.jsonl is its session's
// one log, and after a restart thread.get renders from it exactly the
// notifications that were sent (methods, params, item ids, times, seqs).
func TestATurnIsStoredOnce(t *testing.T) {
	e := newEnv(t)
	e.api.SetResponder(touchResponder)
	c := e.start(t)
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{"title": "again"}, &created)
	tid := created.Thread.ThreadID
	// A turn with reasoning, text, a tool that asks, is allowed and runs
	// (its log and result), then the answer; a second whose tool is
	// rejected.
	c.result(2, "turn.start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "make a marker"}}}, nil)
	req := c.next("approval.requested", isNote("approval.requested"))
	c.result(3, "approval.respond", map[string]any{"requestId": req.Params["requestId"], "decision": "once"}, nil)
	c.next("turn.completed", isNote("turn.completed"))
	c.result(4, "turn.start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "and now?"}}}, nil)
	req = c.next("approval.requested", isNote("approval.requested"))
	c.result(5, "approval.respond", map[string]any{"requestId": req.Params["requestId"], "decision": "reject"}, nil)
	c.next("turn.completed", isNote("turn.completed"))
	c.mu.Lock()
	var sent []string // every notification of the thread, as sent, without "jsonrpc"
	for _, m := range c.seen {
		if m.Method != "" && m.Params["threadId"] == tid {
			b, _ := json.Marshal(map[string]any{"seq": m.Params["seq"], "method": m.Method, "params": m.Params})
			sent = append(sent, canonical(t, string(b)))
		}
	}
	c.mu.Unlock()
	c.close()

	// Stored once: the thread's events.jsonl is the session's log (the
	// core's events), there is no other, and meta.json holds no turn's
	// notification.
	dir := filepath.Join(e.cwd, ".harness", "threads", tid)
	l, err := session.OpenEventLog(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for rec, err := range l.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		var head struct {
			Type, Method string
		}
		json.Unmarshal(rec.Event, &head)
		if head.Type == "" || head.Method != "" {
			t.Fatalf("events.jsonl line %d is no event of the session: %s", rec.Seq, rec.Event)
		}
		lines++
	}
	l.Close()
	if lines < 20 {
		t.Fatalf("events.jsonl holds %d events", lines)
	}
	if _, err := os.Stat(session.EventLogPath(e.cwd, tid)); !os.IsNotExist(err) {
		t.Fatalf("a second log of the session: %v", err)
	}
	m, _ := os.ReadFile(filepath.Join(dir, "meta.json"))
	if strings.Contains(string(m), "item.") || strings.Contains(string(m), "turn.completed") {
		t.Fatalf("meta.json holds a turn's notifications:\n%s", m)
	}

	// After a restart: a new harness and server over the same files;
	// thread.get renders the turns again from the one log.
	c = e.start(t)
	defer c.close()
	var got struct {
		Events []json.RawMessage `json:"events"`
	}
	c.result(1, "thread.get", map[string]any{"threadId": tid}, &got)
	if len(got.Events) != len(sent) || len(sent) < 20 {
		t.Fatalf("thread.get: %d events, %d were sent", len(got.Events), len(sent))
	}
	for i := range sent {
		if g := canonical(t, string(got.Events[i])); g != sent[i] {
			t.Fatalf("event %d:\n got %s\nwant %s", i, g, sent[i])
		}
	}
}

// A thread stored before (meta.json without "store", events.jsonl a log
// of its notifications) is read as it is: thread.get answers its log.
func TestAThreadStoredBeforeIsReadAsItIs(t *testing.T) {
	e := newEnv(t)
	tid := "7d0c1f6e-5b1a-4c2e-9a57-0a1b2c3d4e5f"
	dir := filepath.Join(e.cwd, ".harness", "threads", tid)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	meta := `{"threadId":"` + tid + `","title":"old","directory":"` + e.cwd + `","time":{"created":1,"updated":2}}`
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := session.OpenEventLog(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	notes := []string{
		`{"method":"thread.created","params":{"seq":1,"threadId":"` + tid + `","thread":` + meta + `}}`,
		`{"method":"turn.started","params":{"seq":2,"threadId":"` + tid + `","turnId":"turn_1","turn":{"turnId":"turn_1","threadId":"` + tid + `","status":"running","time":{"started":2}}}}`,
	}
	for _, n := range notes {
		if _, err := l.Append([]byte(n)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	c := e.start(t)
	defer c.close()
	var got struct {
		Events []map[string]any `json:"events"`
	}
	c.result(1, "thread.get", map[string]any{"threadId": tid}, &got)
	if len(got.Events) != 2 || got.Events[0]["method"] != "thread.created" || got.Events[1]["method"] != "turn.started" || got.Events[1]["seq"] != 2.0 {
		t.Fatalf("thread.get of a thread stored before: %v", got.Events)
	}
}
