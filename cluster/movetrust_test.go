package cluster_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// What a person granted a session (its "always" rules, the permission
// mode, persona and engine chosen for it) is in its owner's trust record,
// not in the session file, which is in the project where an agent's
// shell (on any machine that sees the shared root) can write it. A move
// carries the owner's grants to the target: the file's own word counts
// there for no more than on the owner. So does a move from an owner that
// is down, with the grants the owner last published.
func TestMoveKeepsTrust(t *testing.T) {
	f := newFixture(t)
	shared, _ := filepath.EvalSymlinks(t.TempDir())
	f.shared = shared
	nodes := f.startAll()
	a, b := nodes[0], nodes[1]

	create := func(nd *node) string {
		t.Helper()
		id := createSession(t, nd, shared)
		for _, other := range []*node{a, b} {
			waitListed(t, other, shared, id, func(listedSession) bool { return true })
		}
		if err := nd.h.Trust().AddRule(shared, id, "Read"); err != nil { // a person's "always"
			t.Fatal(err)
		}
		return id
	}
	// an agent's shell widens the session file
	widen := func(id string) {
		t.Helper()
		path := filepath.Join(shared, ".chirality", "sessions", id+".json")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var file map[string]any
		if err := json.Unmarshal(raw, &file); err != nil {
			t.Fatal(err)
		}
		file["permissionMode"], file["rules"] = "acceptEdits", []string{"Read", "Bash"}
		raw, _ = json.Marshal(file)
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(who string, nd *node, id string) {
		t.Helper()
		s, err := nd.h.SessionIn(shared, id)
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		p, err := nd.h.ReplayPlan(s)
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		if p.Request.PermissionMode != "default" || !slices.Equal(p.Rules, []string{"Read"}) {
			t.Errorf("%s runs the session in mode %q with rules %q; want what a person chose: default, [Read]", who, p.Request.PermissionMode, p.Rules)
		}
	}

	id := create(a)
	widen(id)
	check("A", a, id)
	code, body, _ := do(t, "POST", b.srv.URL+"/api/harness/session/"+id+"/move", map[string]any{"node": "b"})
	if code != 200 {
		t.Fatalf("move to b: %d %s", code, body)
	}
	check("B after the move", b, id)

	// B's own session, its rule published; B dies, A takes it
	id2 := create(b)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if rules, _ := a.n.Rules(context.Background(), id2); slices.Equal(rules, []string{"Read"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("B's rule never reached the sessions bucket")
		}
	}
	widen(id2)
	b.stop()
	nodes[1] = nil
	waitListed(t, a, shared, id2, func(ls listedSession) bool { return ls.NodeState == "down" })
	code, body, _ = do(t, "POST", a.srv.URL+"/api/harness/session/"+id2+"/move", map[string]any{"node": "a"})
	if code != 200 {
		t.Fatalf("move to a while b is down: %d %s", code, body)
	}
	check("A after taking the session of B, down", a, id2)
}
