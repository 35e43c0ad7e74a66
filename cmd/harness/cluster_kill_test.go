package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
)

// The issue's "kill A mid-turn", with real processes: three `serve
// --node` on loopback; a session of A runs a turn posted to B that waits
// for a person; A is killed with SIGKILL. B shows A's session down and
// answers 503 (with Retry-After) for the approval; A restarts: the turn it
// lost is ended in its log (the approval denied by shutdown, then its
// process:exit), and B and C serve exactly A's log (no gap, no repeat).
func TestClusterNodeKilledMidTurn(t *testing.T) {
	env := append(claudetest.ScratchEnv(t), "HARNESS_CLAUDE_BIN="+claudetest.FindCLI(t))
	names := []string{"a", "b", "c"}
	ports := []int{freePort(t), freePort(t), freePort(t)}
	roots, states := make([]string, 3), make([]string, 3)
	for i := range 3 {
		d, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		roots[i], states[i] = filepath.Join(d, "project"), filepath.Join(d, "state")
		os.MkdirAll(roots[i], 0o755)
	}
	type proc struct {
		url  string
		kill func()
	}
	start := func(i int) proc {
		args := []string{"--demo", "--addr", "127.0.0.1:0", "--root", roots[i], "--state-dir", states[i], "--warm", "0", "--no-checkpoints",
			"--node", names[i], "--cluster-listen", "127.0.0.1:" + strconv.Itoa(ports[i])}
		for j, p := range ports {
			if j != i {
				args = append(args, "--cluster-peer", "127.0.0.1:"+strconv.Itoa(p))
			}
		}
		url, cmd, exited, errOut := startServeProcess(t, env, args...)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("node %s stderr:\n%s", names[i], errOut.String())
			}
		})
		return proc{url, func() { cmd.Process.Kill(); <-exited }}
	}
	nodes := make([]proc, 3)
	var wg sync.WaitGroup
	for i := range 3 { // together: JetStream waits for a majority
		wg.Go(func() { nodes[i] = start(i) })
	}
	wg.Wait()
	a, b, c := nodes[0], nodes[1], nodes[2]

	req := func(method, url, body string) (int, []byte, http.Header) {
		t.Helper()
		r, _ := http.NewRequest(method, url, strings.NewReader(body))
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b, res.Header
	}
	waitState := func(url, id, state string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			_, body, _ := req("GET", url+"/api/harness/session/list?projectRoot="+roots[0], "")
			var list []struct{ ID, Node, NodeState string }
			json.Unmarshal(body, &list)
			if slices.ContainsFunc(list, func(s struct{ ID, Node, NodeState string }) bool {
				return s.ID == id && s.Node == "a" && s.NodeState == state
			}) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never listed %s as %s: %s", url, id, state, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	events := func(url, id string) []string {
		t.Helper()
		res, err := http.Get(url + "/api/harness/session/" + id + "/events?after=0&events=all")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out []string
		readEvents(t, res.Body, func(e map[string]any) bool {
			b, _ := json.Marshal(e)
			out = append(out, string(b))
			return false
		})
		return out
	}

	code, body, _ := req("POST", a.url+"/api/harness/session/create", `{"projectRoot":"`+roots[0]+`","mode":"direct"}`)
	var created struct{ Session struct{ ID string } }
	json.Unmarshal(body, &created)
	id := created.Session.ID
	if code != 201 || id == "" {
		t.Fatalf("create on A: %d %s", code, body)
	}
	waitState(b.url, id, "up")
	res, err := http.Post(b.url+"/api/harness/turn?events=all", "application/json", strings.NewReader(`{"sessionId":"`+id+`","message":"touch a file"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	asked := ""
	readEvents(t, res.Body, func(e map[string]any) bool {
		if e["type"] == "process:exit" {
			t.Fatal("the turn ended without asking")
		}
		asked, _ = e["requestId"].(string)
		return e["type"] == "approval:requested"
	})

	a.kill() // SIGKILL mid-turn, its approval waiting
	waitState(b.url, id, "down")
	waitState(c.url, id, "down")
	code, body, hdr := req("POST", b.url+"/api/harness/approval", `{"sessionId":"`+id+`","requestId":"`+asked+`","decision":"allow"}`)
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Errorf("an approval for the dead node's turn: %d %s (Retry-After %q), want 503 with Retry-After", code, body, hdr.Get("Retry-After"))
	}

	a = start(0)
	waitState(c.url, id, "up")
	logA := events(a.url, id)
	for i, line := range logA {
		if !strings.Contains(line, fmt.Sprintf(`"seq":%d,`, i+1)) {
			t.Fatalf("A's log has a gap or repeat at %d: %s", i, line)
		}
	}
	var tail []string
	for _, line := range logA[max(0, len(logA)-3):] {
		var e struct{ Type, RequestID, Decision, By string }
		json.Unmarshal([]byte(line), &e)
		tail = append(tail, e.Type)
		if e.Type == "approval:resolved" && (e.RequestID != asked || e.Decision != "deny" || e.By != "shutdown") {
			t.Errorf("the waiting approval ended as %s", line)
		}
	}
	if strings.Join(tail, " ") != "approval:resolved session:error process:exit" {
		t.Errorf("A's log ends %v, want the cut turn ended: approval denied, session:error, process:exit", tail)
	}
	for _, nd := range []proc{b, c} {
		deadline := time.Now().Add(60 * time.Second)
		for got := events(nd.url, id); !slices.Equal(got, logA); got = events(nd.url, id) {
			if time.Now().After(deadline) {
				t.Fatalf("%s serves other events than A's log:\n%q\nA %q", nd.url, got, logA)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
