package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engines"
)

// Issue 20: every engine of `harness serve --demo` works offline. The
// test runs itself again inside a network namespace that has only
// loopback (unshare --net, lo brought up), where the demo server and its
// clients both live: a turn whose agent tries to reach anything beyond
// loopback fails there at once (no route), so it fails the test instead
// of hanging. One serve process (dontAsk) runs a turn on each of the six
// engines in parallel; a second one (default) runs claude-acp, which as
// root without IS_SANDBOX must work in both modes.
func TestDemoEveryEngineOffline(t *testing.T) {
	if os.Getenv("HARNESS_DEMO_OFFLINE_INNER") == "1" {
		demoOfflineInner(t)
		return
	}
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (Debian: util-linux, iproute2; .ci/run installs them): %v", tool, err)
		}
	}
	flags := []string{"--net"}
	if os.Getuid() != 0 {
		flags = []string{"-rn"} // a user namespace maps us to root
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append(flags, "sh", "-c", `ip link set lo up && exec "$0" -test.run '^TestDemoEveryEngineOffline$' -test.v -test.count=1`, os.Args[0])
	cmd := exec.CommandContext(ctx, "unshare", args...)
	cmd.Env = append(os.Environ(), "HARNESS_DEMO_OFFLINE_INNER=1", "PATH="+agentBinDir(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestDemoEveryEngineOffline") {
		t.Fatalf("inside the namespace: %v\n%s", err, out)
	}
	t.Logf("inside the namespace:\n%s", out)
}

// agentBinDir is the node_modules/.bin of the pinned agents (`make cli`)
// in the working directory or a parent.
func agentBinDir(t *testing.T) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		p := filepath.Join(dir, "node_modules", ".bin")
		if _, err := os.Stat(filepath.Join(p, "codex")); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("node_modules/.bin with the agents not found; run `make cli`")
		}
		dir = parent
	}
}

func demoOfflineInner(t *testing.T) {
	// The namespace has loopback only, and leaving it fails at once.
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 && i.Flags&net.FlagUp != 0 {
			t.Fatalf("interface %s is up: not a loopback-only namespace", i.Name)
		}
	}
	start := time.Now()
	if c, err := (&net.Dialer{Timeout: 5 * time.Second}).Dial("tcp", "1.1.1.1:443"); err == nil {
		c.Close()
		t.Fatal("a connection beyond loopback succeeded")
	} else if time.Since(start) > 2*time.Second {
		t.Fatalf("a connection beyond loopback took %v to fail", time.Since(start))
	}

	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one.txt", "two.txt"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Unsetenv("IS_SANDBOX") // claude-acp as root without it
	cli := claudetest.FindCLI(t)
	url, stop, status, errOut := startServe(t, "--demo", "--addr", "127.0.0.1:0", "--root", root, "--claude-bin", cli, "--permission-mode", "dontAsk")
	url2, stop2, status2, errOut2 := startServe(t, "--demo", "--addr", "127.0.0.1:0", "--root", root, "--claude-bin", cli, "--permission-mode", "default")
	client := &http.Client{Timeout: 2 * time.Minute} // every wait bounded
	t.Cleanup(func() {
		for _, s := range []struct {
			stop   chan os.Signal
			status chan int
			log    *lockedBuilder
		}{{stop, status, errOut}, {stop2, status2, errOut2}} {
			s.stop <- syscall.SIGTERM
			select {
			case code := <-s.status:
				if code != 0 {
					t.Errorf("serve exited %d", code)
				}
			case <-time.After(30 * time.Second):
				t.Error("serve did not stop")
			}
			if t.Failed() {
				t.Logf("serve log:\n%s", s.log.String())
			}
		}
	})

	// Every built-in engine is offered, and available.
	resp, err := client.Get(url + "/api/harness/engines")
	if err != nil {
		t.Fatal(err)
	}
	var st []struct {
		Name      string
		Available bool
		Reason    string
	}
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	avail := map[string]bool{}
	for _, e := range st {
		avail[e.Name] = e.Available
		if !e.Available {
			t.Errorf("engine %s unavailable in the demo: %s", e.Name, e.Reason)
		}
	}
	for _, n := range engines.Names {
		if _, ok := avail[n]; !ok {
			t.Errorf("engine %s not offered (%v)", n, st)
		}
	}

	type run struct{ name, engine, url string }
	runs := []run{}
	for _, n := range engines.Names {
		runs = append(runs, run{n + "/dontAsk", n, url})
	}
	runs = append(runs, run{engines.ClaudeACP + "/default", engines.ClaudeACP, url2})
	t.Run("turns", func(t *testing.T) {
		for _, r := range runs {
			t.Run(r.name, func(t *testing.T) {
				t.Parallel()
				demoTurnOffline(t, client, r.url, root, r.engine)
			})
		}
	})
}

// demoTurnOffline runs one demo turn on eng: create, turn, the stored
// events, the cost.
func demoTurnOffline(t *testing.T, client *http.Client, url, root, eng string) {
	post := func(path, body string) *http.Response {
		resp, err := client.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post("/api/harness/session/create", `{"projectRoot":"`+root+`","mode":"workbench","engine":"`+eng+`"}`)
	var created struct {
		Session struct{ ID, Engine string }
	}
	json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != 201 || created.Session.ID == "" || created.Session.Engine != eng {
		t.Fatalf("create = %d %+v", resp.StatusCode, created.Session)
	}
	id := created.Session.ID

	resp = post("/api/harness/turn", `{"sessionId":"`+id+`","message":"hello demo"}`)
	types, text := map[string]int{}, ""
	var complete, failure map[string]any
	readEvents(t, resp.Body, func(ev map[string]any) bool {
		typ, _ := ev["type"].(string)
		types[typ]++
		switch typ {
		case "chat:delta":
			s, _ := ev["text"].(string)
			text += s
		case "session:complete":
			complete = ev
		case "session:error":
			failure = ev
		}
		return typ == "process:exit"
	})
	resp.Body.Close()
	if failure != nil {
		t.Fatalf("the turn failed: %v", failure)
	}
	for _, typ := range []string{"session:init", "chat:delta", "tool:start", "tool:result", "session:complete"} {
		if types[typ] == 0 {
			t.Errorf("no %s in the demo turn (%v)", typ, types)
		}
	}
	if !strings.Contains(text, "Demo answer") || !strings.Contains(text, "I saw **") {
		t.Errorf("the demo model's answer is missing: %q", text)
	}
	if complete != nil {
		if _, ok := complete["costUsd"]; !ok {
			t.Errorf("session:complete without costUsd: %v", complete)
		}
	}

	// The session's stored events hold the turn.
	resp, err := client.Get(url + "/api/harness/session/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { <-ctx.Done(); resp.Body.Close() }()
	readEvents(t, resp.Body, func(ev map[string]any) bool {
		stored++
		return ev["type"] == "session:complete"
	})
	if stored == 0 {
		t.Error("no stored events")
	}
}
