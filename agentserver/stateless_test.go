package agentserver

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
)

// another is a second agent server of e's session on e's Harness, as a
// copy of e that talks to it.
func (e *env) another() *env {
	e.t.Helper()
	srv, err := New(Config{Harness: e.h, SessionID: e.id, Token: e.token, Heartbeat: time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	e.t.Cleanup(func() { srv.Close(); hs.Close() })
	b := *e
	b.srv, b.url = srv, hs.URL
	return &b
}

// replay is the session's events from the start, as a new client gets
// them, through its first turn's end: each as its SSE id and data.
func (e *env) replay() []string {
	e.t.Helper()
	s := e.openStream("?usage=1", "")
	defer s.close()
	var out []string
	for _, ev := range s.until(e.t, isEnd) {
		data, _ := json.Marshal(ev.Event)
		out = append(out, ev.id+" "+string(data))
	}
	return out
}

// agent serve keeps no state of its own: a turn prompted through one
// server is the other's too (its stream, its turns, its session), and
// both, and a server restarted on a new Harness over the same store,
// replay the session's events alike, ids and times included.
func TestTwoServersAndARestartServeTheSameSession(t *testing.T) {
	e := newEnv(t, engine.Anthropic, "")
	e.api.Script(
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(first), listing("list_dir")}, ChunkSize: 4},
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(second)}, ChunkSize: 4},
	)
	b := e.another()
	live := b.openStream("", "")
	e.prompt("what is here?")
	got := kinds(live.until(t, isEnd))
	want := []string{"user", "status:thinking", "text", "tool_call", "status:running_tool", "tool_result", "status:thinking", "text", "status:idle"}
	if len(got) != len(want) {
		t.Fatalf("the other server's stream: %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("the other server's stream: %v, want %v", got, want)
		}
	}
	for _, path := range []string{"/session", "/turns", "/queue"} {
		codeA, bodyA := e.do("GET", path, "")
		codeB, bodyB := b.do("GET", path, "")
		if codeA != 200 || codeA != codeB || bodyA != bodyB {
			t.Fatalf("GET %s: one server answers %d %s, the other %d %s", path, codeA, bodyA, codeB, bodyB)
		}
	}
	ref := e.replay()
	if len(ref) != len(want)+2 { // and ?usage=1's usage of the two model calls
		t.Fatalf("replay: %d events, want %d: %v", len(ref), len(want)+2, ref)
	}
	same := func(who string, other []string) {
		t.Helper()
		if len(other) != len(ref) {
			t.Fatalf("%s replays %d events, the first server %d:\n%v\n%v", who, len(other), len(ref), other, ref)
		}
		for i := range ref {
			if other[i] != ref[i] {
				t.Fatalf("%s replays event %d as\n%s\nthe first server as\n%s", who, i, other[i], ref[i])
			}
		}
	}
	same("the other server", b.replay())
	e.stop() // the Harness and both servers' streams end
	e.open()
	e.serve()
	same("a server restarted on a new Harness", e.replay())
}
