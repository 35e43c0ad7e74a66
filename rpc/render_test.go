package rpc

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/chirality/harness/session"
)

// A turn's notifications can be rendered again from the core's event log
// alone (meta.json saying where the turn's records are and when it
// started): the same methods, params, item ids, times and seqs as the
// ones sent and stored. This is what lets thread.get be answered from the
// one log (the package doc's decision) instead of a second one.
func TestTurnsRenderAgainFromTheCoreLog(t *testing.T) {
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
	c.close()

	// After a restart: a new harness and server over the same files.
	h, err := e.harness()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	s, err := NewServer(h, &nopWriter{}, Options{Cwd: e.cwd})
	if err != nil {
		t.Fatal(err)
	}
	th := s.threads[tid]
	if th == nil || len(th.meta.Turns) != 2 {
		t.Fatalf("thread %s: %+v", tid, th)
	}
	stored := map[int64]string{} // seq → the stored notification
	l, err := session.OpenEventLog(filepath.Join(e.cwd, ".harness", "threads", tid, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for rec, err := range l.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		stored[rec.Seq] = canonical(t, string(rec.Event))
	}
	rendered := 0
	for i, ref := range th.meta.Turns {
		if ref.From == 0 && i > 0 || ref.To <= ref.Core || ref.Started == 0 {
			t.Fatalf("turn %d: meta.json does not say where it is: %+v", i, ref)
		}
		seq := ref.Seq
		f := &follower{s: s, t: th, turn: Turn{TurnID: ref.TurnID, ThreadID: tid, Status: "running", Time: turnTime{Started: ref.Started}},
			tools: map[string]toolItem{}, approvals: map[string]string{}}
		f.emit = func(method string, p map[string]any) int64 {
			p["seq"] = seq
			b, _ := json.Marshal(map[string]any{"seq": seq, "method": method, "params": p})
			if got, want := canonical(t, string(b)), stored[seq]; got != want {
				t.Errorf("turn %d, seq %d rendered again:\n got %s\nwant %s", i, seq, got, want)
			}
			rendered++
			seq++
			return seq - 1
		}
		f.notify("turn.started", map[string]any{"turn": f.turn})
		records, err := h.Follow(context.Background(), th.meta.SessionID, ref.From)
		if err != nil {
			t.Fatal(err)
		}
		for rec, err := range records {
			if err != nil {
				t.Fatal(err)
			}
			if rec.Seq > ref.To {
				break
			}
			ev, err := rec.Decode()
			if err != nil {
				t.Fatal(err)
			}
			f.record(rec.Seq, &ev)
		}
		if !f.ended {
			t.Fatalf("turn %d: its records did not end it", i)
		}
	}
	// Every stored notification but thread.created was rendered again.
	if rendered != len(stored)-1 || rendered < 20 {
		t.Fatalf("rendered %d of %d stored notifications", rendered, len(stored))
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
