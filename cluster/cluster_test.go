package cluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/cluster"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/gateway"
	"github.com/chirality/harness/internal/eventsel"
)

type node struct {
	name, root string
	n          *cluster.Node
	h          *harness.Harness
	srv        *httptest.Server
}

// freePorts picks n loopback ports for the nodes' routes.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

type fixture struct {
	t     *testing.T
	demo  *engines.Demo
	cli   string
	ports []int
	names []string
	dirs  []string // per node: its root and state live under it
	log   zerolog.Logger
	// shared, if set, is a root of nodes a and b besides their own (a
	// directory on storage both see at the same path)
	shared string
}

func newFixture(t *testing.T) *fixture {
	d, err := engines.StartDemo(engines.DemoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	f := &fixture{t: t, log: zerolog.New(zerolog.NewTestWriter(t)), demo: d, cli: claudetest.FindCLI(t), ports: freePorts(t, 3), names: []string{"a", "b", "c"}}
	for range 3 {
		dir, _ := filepath.EvalSymlinks(t.TempDir())
		f.dirs = append(f.dirs, dir)
	}
	return f
}

// testLease is the nodes' lease here: short, so a killed node is seen
// down soon, yet twice what a loaded CI machine was seen to need (a
// 3-second lease lapsed once in 66 runs of TestMoveSharedRoot while
// JetStream answered a renewal slowly; the default is 10 s).
const testLease = 5 * time.Second

// start starts node i (again, after a stop: same port, same store).
func (f *fixture) start(ctx context.Context, i int) (*node, error) {
	var peers []string
	for j, p := range f.ports {
		if j != i {
			peers = append(peers, "127.0.0.1:"+strconv.Itoa(p))
		}
	}
	root := filepath.Join(f.dirs[i], "project")
	os.MkdirAll(root, 0o755)
	c, err := cluster.Start(ctx, cluster.Config{Node: f.names[i], Cluster: "test", Listen: "127.0.0.1:" + strconv.Itoa(f.ports[i]),
		Peers: peers, Dir: filepath.Join(f.dirs[i], "node"), Secret: "s3cret-for-routes", LeaseTTL: testLease, Logger: &f.log})
	if err != nil {
		return nil, err
	}
	roots := []string{root}
	if f.shared != "" && i < 2 {
		roots = append(roots, f.shared)
	}
	h, err := harness.New(harness.Config{Roots: roots, StateDir: filepath.Join(f.dirs[i], "state"), NoProjectLogs: true,
		ChildEnv: f.demo.Env, DefaultPermissionMode: "default", Approvals: true,
		Aliases: engines.Aliases, DefaultEngine: "claude-code",
		Engines: engines.Builtin(engines.Config{ClaudeBinary: f.cli, ChildEnv: f.demo.Env, InterruptGrace: time.Second, KillGrace: 2 * time.Second})})
	if err != nil {
		c.Close()
		return nil, err
	}
	gw, err := gateway.New(gateway.Config{Harness: h, Addr: "127.0.0.1:0", AllowHosts: []string{"127.0.0.1"},
		Wrap: func(api http.Handler) (http.Handler, error) { return c.Attach(h, api) }})
	if err != nil {
		c.Close()
		return nil, err
	}
	return &node{name: f.names[i], root: root, n: c, h: h, srv: httptest.NewServer(gw)}, nil
}

func (nd *node) stop() {
	nd.srv.CloseClientConnections()
	nd.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nd.h.Shutdown(ctx)
	nd.n.Close()
}

func (f *fixture) startAll() []*node {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nodes := make([]*node, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { nodes[i], errs[i] = f.start(ctx, i) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			f.t.Fatalf("node %s: %v", f.names[i], err)
		}
	}
	f.t.Cleanup(func() {
		for _, nd := range nodes {
			if nd != nil {
				nd.stop()
			}
		}
	})
	return nodes
}

func do(t *testing.T, method, url string, body any) (int, []byte, http.Header) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, url, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b, res.Header
}

type sseEvent struct {
	seq  int64
	data string
	typ  string
}

// readSSE reads an SSE answer to its end, calling each(e) as events come.
func readSSE(t *testing.T, res *http.Response, each func(sseEvent)) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.seq, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
			var v struct {
				Type string `json:"type"`
			}
			json.Unmarshal([]byte(cur.data), &v)
			cur.typ = v.Type
		case line == "" && cur.data != "":
			out = append(out, cur)
			if each != nil {
				each(cur)
			}
			cur = sseEvent{}
		}
	}
	return out
}

func stream(t *testing.T, method, url string, body any, each func(sseEvent)) (int, []sseEvent) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, url, r)
	req.Header.Set("Content-Type", "application/json")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("%s %s: %d %s", method, url, res.StatusCode, b)
	}
	return res.StatusCode, readSSE(t, res, each)
}

type listedSession struct {
	ID        string `json:"id"`
	Node      string `json:"node"`
	NodeState string `json:"nodeState"`
	Running   bool   `json:"running"`
}

// waitListed waits until nd lists session id as want says.
func waitListed(t *testing.T, nd *node, root, id string, want func(listedSession) bool) listedSession {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, b, _ := do(t, "GET", nd.srv.URL+"/api/harness/session/list?projectRoot="+root, nil)
		var list []listedSession
		if code == 200 && json.Unmarshal(b, &list) == nil {
			for _, s := range list {
				if s.ID == id && want(s) {
					return s
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s never listed %s as wanted: %d %s", nd.name, id, code, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// specOnly is evs without the extension types (eventsel.Spec).
func specOnly(evs []sseEvent) []sseEvent {
	return slices.DeleteFunc(slices.Clone(evs), func(e sseEvent) bool { return !slices.Contains(eventsel.Spec, event.Type(e.typ)) })
}

func ids(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%d %s", e.seq, e.data))
	}
	return out
}

// Three nodes on loopback: a session made on A runs a turn posted to B
// and streamed from B; C lists it and replays the same events as A's
// log; an approval answered on C reaches the turn on A. Then A dies: B
// and C show its sessions down and answer 503 for what needs A; A comes
// back and every node serves the same events as A's log, none lost or
// repeated.
func TestThreeNodes(t *testing.T) {
	f := newFixture(t)
	nodes := f.startAll()
	a, b, c := nodes[0], nodes[1], nodes[2]

	code, body, _ := do(t, "POST", a.srv.URL+"/api/harness/session/create", map[string]any{"projectRoot": a.root, "mode": "direct"})
	if code != 200 && code != 201 {
		t.Fatalf("create on A: %d %s", code, body)
	}
	var created struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	json.Unmarshal(body, &created)
	s := created.Session
	if s.ID == "" {
		t.Fatalf("create: %s", body)
	}
	if got := waitListed(t, b, a.root, s.ID, func(ls listedSession) bool { return true }); got.Node != "a" || got.NodeState != "up" {
		t.Fatalf("B lists the session as %+v, want node a, up", got)
	}

	// A turn posted to B, which asks for approval; answered on C.
	var once sync.Once
	_, turn := stream(t, "POST", b.srv.URL+"/api/harness/turn?events=all", map[string]any{"sessionId": s.ID, "message": "please touch a file"}, func(e sseEvent) {
		if e.typ != "approval:requested" {
			return
		}
		once.Do(func() {
			var ev struct {
				RequestID string `json:"requestId"`
			}
			json.Unmarshal([]byte(e.data), &ev)
			go func() {
				code, body, _ := do(t, "POST", c.srv.URL+"/api/harness/approval", map[string]any{"sessionId": s.ID, "requestId": ev.RequestID, "decision": "allow"})
				if code != 200 {
					t.Errorf("approval on C: %d %s", code, body)
				}
			}()
		})
	})
	if len(turn) == 0 || turn[len(turn)-1].typ != "process:exit" {
		t.Fatalf("B's turn stream did not end with process:exit: %q", ids(turn))
	}
	if !slices.ContainsFunc(turn, func(e sseEvent) bool { return e.typ == "approval:resolved" }) {
		t.Errorf("no approval:resolved in the turn: %q", ids(turn))
	}
	if _, err := os.Stat(filepath.Join(a.root, "demo-marker.txt")); err != nil {
		t.Errorf("the approved command did not run on A: %v", err)
	}

	_, fromA := stream(t, "GET", a.srv.URL+"/api/harness/session/"+s.ID+"/events?events=all", nil, nil)
	// B streamed the turn's events: exactly A's, from the turn's start.
	if want := fromA[len(fromA)-len(turn):]; !slices.Equal(ids(turn), ids(want)) {
		t.Errorf("B's turn stream differs from A's log:\nB %q\nA %q", ids(turn), ids(want))
	}
	waitListed(t, c, a.root, s.ID, func(ls listedSession) bool { return !ls.Running })
	_, fromC := stream(t, "GET", c.srv.URL+"/api/harness/session/"+s.ID+"/events?after=0&events=all", nil, nil)
	if !slices.Equal(ids(fromC), ids(fromA)) {
		t.Errorf("C replays other events than A's log:\nC %q\nA %q", ids(fromC), ids(fromA))
	}
	// Without ?events= a node streams another node's session as the
	// gateway streams its own: 004's UIEvent types only, each with its
	// seq; a name it does not know is 400 there too.
	_, specC := stream(t, "GET", c.srv.URL+"/api/harness/session/"+s.ID+"/events", nil, nil)
	if want := specOnly(fromA); len(want) == len(fromA) || !slices.Equal(ids(specC), ids(want)) {
		t.Errorf("C's default stream is not A's log without its extension events:\nC %q\nA %q", ids(specC), ids(want))
	}
	if code, body, _ := do(t, "GET", c.srv.URL+"/api/harness/session/"+s.ID+"/events?events=nope", nil); code != 400 {
		t.Errorf("?events=nope on a remote session: %d %s", code, body)
	}

	// A dies. B and C see it down (testLease) and answer 503 for it.
	a.stop()
	nodes[0] = nil
	for _, nd := range []*node{b, c} {
		got := waitListed(t, nd, a.root, s.ID, func(ls listedSession) bool { return ls.NodeState == "down" })
		if got.Node != "a" {
			t.Errorf("%s: %+v", nd.name, got)
		}
		code, body, hdr := do(t, "POST", nd.srv.URL+"/api/harness/turn?events=all", map[string]any{"sessionId": s.ID, "message": "hi"})
		if code != 503 || hdr.Get("Retry-After") == "" {
			t.Errorf("%s: a turn for A's session while A is down: %d %s (Retry-After %q)", nd.name, code, body, hdr.Get("Retry-After"))
		}
	}
	// Its events are still served (they are replicated).
	_, whileDown := stream(t, "GET", b.srv.URL+"/api/harness/session/"+s.ID+"/events?events=all", nil, nil)
	if !slices.Equal(ids(whileDown), ids(fromA)) {
		t.Errorf("B's replay while A is down differs:\nB %q\nA %q", ids(whileDown), ids(fromA))
	}

	// A comes back; a turn on C runs on A; every node has A's log.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a2, err := f.start(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	nodes[0] = a2
	waitListed(t, c, a2.root, s.ID, func(ls listedSession) bool { return ls.NodeState == "up" })
	// (without ?events=: the forwarded turn's stream is 004's types only)
	_, turn2 := stream(t, "POST", c.srv.URL+"/api/harness/turn", map[string]any{"sessionId": s.ID, "message": "hello again"}, nil)
	if len(turn2) == 0 || turn2[len(turn2)-1].typ != "process:exit" {
		t.Fatalf("C's turn after A's return: %q", ids(turn2))
	}
	_, logA := stream(t, "GET", a2.srv.URL+"/api/harness/session/"+s.ID+"/events?events=all", nil, nil)
	for i, e := range logA {
		if e.seq != int64(i+1) {
			t.Fatalf("A's log has a gap or repeat at %d: seq %d", i, e.seq)
		}
	}
	if want := specOnly(slices.DeleteFunc(slices.Clone(logA), func(e sseEvent) bool { return e.seq < turn2[0].seq })); !slices.Equal(ids(turn2), ids(want)) {
		t.Errorf("C's turn stream is not the turn's 004 events in A's log:\nC %q\nA %q", ids(turn2), ids(want))
	}
	for _, nd := range []*node{b, c} {
		waitListed(t, nd, a2.root, s.ID, func(ls listedSession) bool { return !ls.Running })
		_, got := stream(t, "GET", nd.srv.URL+"/api/harness/session/"+s.ID+"/events?events=all", nil, nil)
		if !slices.Equal(ids(got), ids(logA)) {
			t.Errorf("%s after A's return differs from A's log:\n%s %q\nA %q", nd.name, nd.name, ids(got), ids(logA))
		}
	}

	code, body, _ = do(t, "GET", b.srv.URL+"/api/harness/nodes", nil)
	var list []cluster.NodeInfo
	if code != 200 || json.Unmarshal(body, &list) != nil || len(list) != 3 {
		t.Fatalf("GET /nodes: %d %s", code, body)
	}
	for _, ni := range list {
		if ni.State != "up" {
			t.Errorf("node %+v not up", ni)
		}
		if ni.Node == "a" && ni.Sessions != 1 {
			t.Errorf("node a owns %d sessions, want 1", ni.Sessions)
		}
	}
}
