package cluster_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chirality/harness"
)

// checkSeqs fails unless evs are seqs 1..len(evs), none lost or repeated.
func checkSeqs(t *testing.T, who string, evs []sseEvent) {
	t.Helper()
	for i, e := range evs {
		if e.seq != int64(i+1) {
			t.Fatalf("%s: a gap or repeat at %d: seq %d in %q", who, i, e.seq, ids(evs))
		}
	}
}

// createSession makes a session in root through node nd's gateway and
// returns its id.
func createSession(t *testing.T, nd *node, root string) string {
	t.Helper()
	code, body, _ := do(t, "POST", nd.srv.URL+"/api/harness/session/create", map[string]any{"projectRoot": root, "mode": "direct"})
	if code != 200 && code != 201 {
		t.Fatalf("create on %s: %d %s", nd.name, code, body)
	}
	var created struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	json.Unmarshal(body, &created)
	return created.Session.ID
}

// A session in a root that nodes a and b both see at the same path (c
// does not) runs a turn on A, moves to B, and runs a turn on B: same
// session, its seqs going on, every node listing it on b and serving
// the same events. Moving it while a turn runs is refused (409), to c
// too (422: c cannot see the root). Then B, its owner, dies, and a
// person moves it back to A, where a turn goes on from B's last event.
func TestMoveSharedRoot(t *testing.T) {
	f := newFixture(t)
	shared, _ := filepath.EvalSymlinks(t.TempDir())
	f.shared = shared
	nodes := f.startAll()
	a, b, c := nodes[0], nodes[1], nodes[2]

	id := createSession(t, a, shared)
	for _, nd := range nodes {
		if got := waitListed(t, nd, shared, id, func(listedSession) bool { return true }); got.Node != "a" {
			t.Fatalf("%s lists the session on %q, want a (B sees the root too but did not make it)", nd.name, got.Node)
		}
	}

	// A turn on A that waits for an approval: a move meanwhile is refused.
	var once sync.Once
	_, turn1 := stream(t, "POST", a.srv.URL+"/api/harness/turn?events=all", map[string]any{"sessionId": id, "message": "please touch a file"}, func(e sseEvent) {
		if e.typ != "approval:requested" {
			return
		}
		once.Do(func() {
			var ev struct {
				RequestID string `json:"requestId"`
			}
			json.Unmarshal([]byte(e.data), &ev)
			go func() {
				code, body, _ := do(t, "POST", c.srv.URL+"/api/harness/session/"+id+"/move", map[string]any{"node": "b"})
				if code != 409 {
					t.Errorf("a move while a turn runs: %d %s, want 409", code, body)
				}
				code, body, _ = do(t, "POST", a.srv.URL+"/api/harness/approval", map[string]any{"sessionId": id, "requestId": ev.RequestID, "decision": "allow"})
				if code != 200 {
					t.Errorf("approval: %d %s", code, body)
				}
			}()
		})
	})
	if len(turn1) == 0 || turn1[len(turn1)-1].typ != "process:exit" {
		t.Fatalf("A's turn: %q", ids(turn1))
	}
	waitListed(t, c, shared, id, func(ls listedSession) bool { return !ls.Running })

	// c does not see the root: 422. An unknown node: 503.
	if code, body, _ := do(t, "POST", b.srv.URL+"/api/harness/session/"+id+"/move", map[string]any{"node": "c"}); code != 422 {
		t.Errorf("a move to c, which does not see the root: %d %s, want 422", code, body)
	}
	if code, body, hdr := do(t, "POST", b.srv.URL+"/api/harness/session/"+id+"/move", map[string]any{"node": "zz"}); code != 503 || hdr.Get("Retry-After") == "" {
		t.Errorf("a move to a node that is not up: %d %s, want 503 with Retry-After", code, body)
	}

	// Moved to B, asked on C.
	code, body, _ := do(t, "POST", c.srv.URL+"/api/harness/session/"+id+"/move", map[string]any{"node": "b"})
	var moved struct {
		From, Node string
		LastSeq    int64
	}
	if json.Unmarshal(body, &moved); code != 200 || moved.From != "a" || moved.Node != "b" || moved.LastSeq != turn1[len(turn1)-1].seq {
		t.Fatalf("move to b: %d %s (A's turn ended at seq %d)", code, body, turn1[len(turn1)-1].seq)
	}
	for _, nd := range nodes {
		waitListed(t, nd, shared, id, func(ls listedSession) bool { return ls.Node == "b" && ls.NodeState == "up" })
	}
	// A turn posted to A runs on B: the same session, its seqs going on.
	_, turn2 := stream(t, "POST", a.srv.URL+"/api/harness/turn?events=all", map[string]any{"sessionId": id, "message": "hello again"}, nil)
	if len(turn2) == 0 || turn2[0].seq != moved.LastSeq+1 || turn2[len(turn2)-1].typ != "process:exit" {
		t.Fatalf("the turn after the move (want seqs from %d): %q", moved.LastSeq+1, ids(turn2))
	}
	_, logB := stream(t, "GET", b.srv.URL+"/api/harness/session/"+id+"/events?events=all", nil, nil)
	checkSeqs(t, "B's log", logB)
	if !strings.Contains(strings.Join(ids(logB), "\n"), `"type":"approval:resolved"`) {
		t.Errorf("B's log lacks A's turn: %q", ids(logB))
	}
	for _, nd := range []*node{a, c} {
		waitListed(t, nd, shared, id, func(ls listedSession) bool { return !ls.Running })
		_, got := stream(t, "GET", nd.srv.URL+"/api/harness/session/"+id+"/events?events=all", nil, nil)
		if strings.Join(ids(got), "\n") != strings.Join(ids(logB), "\n") {
			t.Errorf("%s serves other events than B's log:\n%q\n%q", nd.name, ids(got), ids(logB))
		}
	}

	// B dies; a person moves its session to A, which sees the root.
	b.stop()
	nodes[1] = nil
	waitListed(t, a, shared, id, func(ls listedSession) bool { return ls.NodeState == "down" })
	code, body, _ = do(t, "POST", a.srv.URL+"/api/harness/session/"+id+"/move", map[string]any{"node": "a"})
	if code != 200 {
		t.Fatalf("move to a while b is down: %d %s", code, body)
	}
	waitListed(t, c, shared, id, func(ls listedSession) bool { return ls.Node == "a" && ls.NodeState == "up" })
	_, turn3 := stream(t, "POST", c.srv.URL+"/api/harness/turn?events=all", map[string]any{"sessionId": id, "message": "and again"}, nil)
	if len(turn3) == 0 || turn3[0].seq != logB[len(logB)-1].seq+1 || turn3[len(turn3)-1].typ != "process:exit" {
		t.Fatalf("the turn after the owner-down move (want seqs from %d): %q", logB[len(logB)-1].seq+1, ids(turn3))
	}
	_, logA := stream(t, "GET", a.srv.URL+"/api/harness/session/"+id+"/events?events=all", nil, nil)
	checkSeqs(t, "A's log", logA)
	waitListed(t, c, shared, id, func(ls listedSession) bool { return !ls.Running })
	_, fromC := stream(t, "GET", c.srv.URL+"/api/harness/session/"+id+"/events?events=all", nil, nil)
	if strings.Join(ids(fromC), "\n") != strings.Join(ids(logA), "\n") {
		t.Errorf("C serves other events than A's log:\n%q\n%q", ids(fromC), ids(logA))
	}
	if _, err := os.Stat(filepath.Join(shared, ".chirality", "sessions", id+".json")); err != nil {
		t.Error(err)
	}

	// B comes back: the session stays A's (B sees it on its disk, the
	// bucket says A's), and a turn posted to B runs on A.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b2, err := f.start(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	nodes[1] = b2
	waitListed(t, b2, shared, id, func(ls listedSession) bool { return ls.Node == "a" && ls.NodeState == "up" })
	_, turn4 := stream(t, "POST", b2.srv.URL+"/api/harness/turn?events=all", map[string]any{"sessionId": id, "message": "from b again"}, nil)
	if len(turn4) == 0 || turn4[0].seq != logA[len(logA)-1].seq+1 || turn4[len(turn4)-1].typ != "process:exit" {
		t.Fatalf("the turn posted to B after its return (want seqs from %d): %q", logA[len(logA)-1].seq+1, ids(turn4))
	}
	_, logA2 := stream(t, "GET", a.srv.URL+"/api/harness/session/"+id+"/events?events=all", nil, nil)
	checkSeqs(t, "A's log after B's return", logA2)
	if got := logA2[len(logA2)-1]; got.seq != turn4[len(turn4)-1].seq {
		t.Errorf("A's log ends at %d, the turn posted to B at %d: it did not run on A", got.seq, turn4[len(turn4)-1].seq)
	}
	for _, nd := range []*node{b2, c} {
		if got := waitListed(t, nd, shared, id, func(listedSession) bool { return true }); got.Node != "a" {
			t.Errorf("%s lists the session on %s after B's return, want a", nd.name, got.Node)
		}
	}
}

// The owner's sync lists a session (held for a move: running), the
// session moves, and only then does the sync write what it listed: the
// bucket keeps the new owner, and every node lists the session there.
// (Issue 36: that write took the session back to the old owner, running
// and for good, as load stretched the sync across the move.)
func TestMoveWhileOwnerSyncs(t *testing.T) {
	f := newFixture(t)
	shared, _ := filepath.EvalSymlinks(t.TempDir())
	f.shared = shared
	nodes := f.startAll()
	a, c := nodes[0], nodes[2]
	code, body, _ := do(t, "POST", a.srv.URL+"/api/harness/session/create", map[string]any{"projectRoot": shared, "mode": "direct"})
	var created struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	if json.Unmarshal(body, &created); code != 200 && code != 201 || created.Session.ID == "" {
		t.Fatalf("create on A: %d %s", code, body)
	}
	id := created.Session.ID
	for _, nd := range nodes {
		waitListed(t, nd, shared, id, func(ls listedSession) bool { return ls.Node == "a" && !ls.Running })
	}

	// A's sync stops as it is about to write the session held, running.
	reached, proceed, passed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var stopped, ended atomic.Bool
	a.n.HookSync(func(s harness.SessionSummary) {
		if s.ID == id && s.Running && stopped.CompareAndSwap(false, true) {
			close(reached)
			<-proceed
		}
	}, func() {
		if stopped.Load() && ended.CompareAndSwap(false, true) {
			close(passed)
		}
	})
	release, err := a.h.Hold(id)
	if err != nil {
		t.Fatal(err)
	}
	<-reached
	release()

	code, body, _ = do(t, "POST", c.srv.URL+"/api/harness/session/"+id+"/move", map[string]any{"node": "b"})
	if code != 200 {
		t.Fatalf("move to b: %d %s", code, body)
	}
	close(proceed)
	<-passed // A's sync wrote, or tried to, what it listed before the move
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if owner, err := a.n.Owner(ctx, id); err != nil || owner != "b" {
		t.Fatalf("after A's sync the bucket says %q owns the session (%v), want b", owner, err)
	}
	for _, nd := range nodes {
		waitListed(t, nd, shared, id, func(ls listedSession) bool { return ls.Node == "b" && !ls.Running })
	}
}
