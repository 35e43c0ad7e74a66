package cluster_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// The cluster's trust boundary, attacked from outside: the nodes trust
// each other (a forwarded request runs on its owner without the owner's
// HTTP guard, which the asking node's passed), so nobody else may speak
// NATS to them, and what a forward carries cannot do more than a request
// to the owner itself.
func TestClusterTrustBoundary(t *testing.T) {
	f := newFixture(t)
	nodes := f.startAll()
	a, b := nodes[0], nodes[1]

	t.Run("a NATS client without the node's token is refused", func(t *testing.T) {
		for _, opt := range []nats.Option{nil, nats.Token("guess"), nats.UserInfo("harness", "s3cret-for-routes")} {
			opts := []nats.Option{nats.MaxReconnects(0), nats.Timeout(5 * time.Second)}
			if opt != nil {
				opts = append(opts, opt)
			}
			nc, err := nats.Connect(a.n.ClientURL(), opts...)
			if err == nil {
				nc.Close()
				t.Fatalf("a client connected to %s without the token", a.n.ClientURL())
			}
			if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
				t.Errorf("connect: %v, want an authorization violation", err)
			}
		}
		if !strings.HasPrefix(strings.TrimPrefix(a.n.ClientURL(), "nats://"), "127.0.0.1:") {
			t.Errorf("the client port is not on loopback: %s", a.n.ClientURL())
		}
	})

	t.Run("a server without the route secret does not join", func(t *testing.T) {
		routes := a.n.NumRoutes() // its peers' (pooled: several each)
		for _, pass := range []string{"", "wrong"} {
			u := &url.URL{Scheme: "nats-route", Host: a.n.ClusterAddr()}
			if pass != "" {
				u.User = url.UserPassword("harness", pass)
			}
			rogue, err := server.NewServer(&server.Options{ServerName: "rogue", Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
				Cluster: server.ClusterOpts{Name: "test", Host: "127.0.0.1", Port: server.RANDOM_PORT}, Routes: []*url.URL{u}})
			if err != nil {
				t.Fatal(err)
			}
			go rogue.Start()
			if !rogue.ReadyForConnections(10 * time.Second) {
				t.Fatal("rogue server did not start")
			}
			// Subscribed to every session's events through the rogue
			// server: a route would carry them here.
			nc, err := nats.Connect(rogue.ClientURL())
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan *nats.Msg, 16)
			if _, err := nc.ChanSubscribe("harness.>", got); err != nil {
				t.Fatal(err)
			}
			nc.Flush()
			// Events flow on the cluster meanwhile: a session made on A.
			code, body, _ := do(t, "POST", a.srv.URL+"/api/harness/session/create", map[string]any{"projectRoot": a.root, "mode": "direct"})
			if code != 201 {
				t.Fatalf("create: %d %s", code, body)
			}
			waitCreatedSeen(t, b, a.root, body)
			select {
			case m := <-got:
				t.Errorf("a server without the secret (password %q) received %s", pass, m.Subject)
			default:
			}
			if n := rogue.NumRoutes(); n != 0 {
				t.Errorf("the rogue server (password %q) has %d routes", pass, n)
			}
			if n := a.n.NumRoutes(); n != routes {
				t.Errorf("node a has %d routes, want its peers' %d", n, routes)
			}
			nc.Close()
			rogue.Shutdown()
		}
	})

	t.Run("a forward meets the owner's core and the asker's guard", func(t *testing.T) {
		code, body, _ := do(t, "POST", a.srv.URL+"/api/harness/session/create", map[string]any{"projectRoot": a.root, "mode": "direct"})
		if code != 201 {
			t.Fatalf("create: %d %s", code, body)
		}
		id := waitCreatedSeen(t, b, a.root, body)
		// A body a route with the session in its path carries reaches A
		// (it was dropped before this test).
		code, body, _ = do(t, "PATCH", b.srv.URL+"/api/harness/session/"+id, map[string]any{"title": "renamed through B"})
		if s, err := a.h.Session(id); code != 200 || err != nil || s.Title != "renamed through B" {
			t.Fatalf("PATCH through B: %d %s; A's session %+v, %v", code, body, s, err)
		}
		// bypassPermissions is refused by A's core (A does not allow it),
		// also when the request came through B.
		code, body, _ = do(t, "PATCH", b.srv.URL+"/api/harness/session/"+id, map[string]any{"permissionMode": "bypassPermissions"})
		if code != http.StatusForbidden {
			t.Errorf("bypassPermissions through B: %d %s, want 403 from A's core", code, body)
		}
		// B's guard refuses a hostile page before anything is forwarded.
		req, _ := http.NewRequest("PATCH", b.srv.URL+"/api/harness/session/"+id, strings.NewReader(`{"title":"pwned"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "https://evil.example")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("a hostile Origin through B: %d, want 403", res.StatusCode)
		}
		s, err := a.h.Session(id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Title != "renamed through B" || s.PermissionMode == "bypassPermissions" {
			t.Errorf("A's session changed through B: %+v", s)
		}
	})
}

// waitCreatedSeen waits until nd lists the session a create answered
// with, and returns its id.
func waitCreatedSeen(t *testing.T, nd *node, root string, created []byte) string {
	t.Helper()
	i := strings.Index(string(created), `"id":"`)
	if i < 0 {
		t.Fatalf("no id in %s", created)
	}
	id := string(created[i+6 : i+6+36])
	waitListed(t, nd, root, id, func(listedSession) bool { return true })
	return id
}
