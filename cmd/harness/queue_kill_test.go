package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
)

// Issue 32: `harness serve` killed with SIGKILL mid-turn with two prompts
// queued; started again on the same root and state directory, it reports
// the cut turn and runs both queued prompts, in order, once each (the
// model, a fake Messages API outside the server, sees every request).
func TestServeQueueSurvivesSIGKILL(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	api, seen, free := holdingAPI(t)
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; the model saw %q", what, seen())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	start := func() (string, *exec.Cmd, chan error) {
		t.Helper()
		url, cmd, exited, errOut := startServeProcess(t, append(claudetest.ScratchEnv(t), api.Env()...),
			"--addr", "127.0.0.1:0", "--root", root, "--state-dir", state, "--engine", "anthropic", "--warm", "0", "--no-checkpoints")
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("server stderr:\n%s", errOut.String())
			}
		})
		return url, cmd, exited
	}
	post := func(url, body string) *http.Response { t.Helper(); return postJSON(t, url, body) }

	url, cmd, exited := start()
	id := createSession(t, url, `{"projectRoot":"`+root+`","mode":"direct","engine":"anthropic"}`)
	turn := post(url+"/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"hold","queue":true}`)
	defer turn.Body.Close()
	if turn.StatusCode != 200 {
		t.Fatalf("turn = %d", turn.StatusCode)
	}
	go io.Copy(io.Discard, turn.Body)
	wait("the held turn to reach the model", func() bool { return len(seen()) == 1 })
	for _, m := range []string{"after one", "after two"} {
		r := post(url+"/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"`+m+`","queue":true}`)
		r.Body.Close()
		if r.StatusCode != 202 {
			t.Fatalf("queue %q = %d, want 202", m, r.StatusCode)
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown of any kind
		t.Fatal(err)
	}
	<-exited
	free() // the fake API calls its responder under its lock: the dead server's request must return before the next is answered

	url, _, _ = start()
	wait("the queued prompts to run after the restart", func() bool {
		if len(seen()) < 3 {
			return false
		}
		q, err := http.Get(url + "/api/harness/session/" + id + "/queue")
		if err != nil {
			return false
		}
		defer q.Body.Close()
		var list struct{ Prompts []any }
		_ = json.NewDecoder(q.Body).Decode(&list)
		return len(list.Prompts) == 0
	})
	if got := seen(); !slices.Equal(got, []string{"hold", "after one", "after two"}) {
		t.Fatalf("the model saw %q, want the held turn once and each queued prompt once, in order", got)
	}
	// The stored events, then the last turn's until its process:exit.
	ev, err := http.Get(url + "/api/harness/session/" + id + "/events?after=0&events=all")
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Body.Close()
	var types []string
	cut := false
	readEvents(t, ev.Body, func(e map[string]any) bool {
		types = append(types, e["type"].(string))
		if e["type"] == "session:error" && strings.Contains(e["error"].(string), "cut") {
			cut = true
		}
		return false
	})
	if !cut {
		t.Errorf("no session:error reports the cut turn: %v", types)
	}
	count := func(typ string) (n int) {
		for _, x := range types {
			if x == typ {
				n++
			}
		}
		return n
	}
	if count("user:message") != 3 || count("process:exit") != 3 {
		t.Errorf("events %v: want 3 turns, each ended once", types)
	}
}

// startServeProcess runs `harness serve ARGS…` as a real process (this
// test binary as the command) with env, and returns its URL once it is
// ready, the process, what Wait returned, and its stderr. The process is
// killed at the end of the test if it still runs.
func startServeProcess(t *testing.T, env []string, args ...string) (string, *exec.Cmd, chan error, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve"}, args...)...)
	cmd.Env = append(slices.Clone(env), "HARNESS_TEST_MAIN=1") // a copy: several servers start at once from one env
	errOut := &syncBuffer{}
	cmd.Stderr = errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v\n%s", err, errOut.String())
	}
	go io.Copy(io.Discard, stdout)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "harness: listening on ")
	if !ok {
		t.Fatalf("ready line %q", line)
	}
	return url, cmd, exited, errOut
}

// holdingAPI is a fake Messages API that answers "ok", except that a
// request whose last user text is "hold" waits until free is called (a
// server is killed while its turn waits there). seen lists every request's
// last user text, in order; free is safe to call more than once.
func holdingAPI(t *testing.T) (api *claudetest.FakeAPI, seen func() []string, free func()) {
	t.Helper()
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var asked []string
	release := make(chan struct{})
	api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		m := r.LastUserText()
		mu.Lock()
		asked = append(asked, m)
		mu.Unlock()
		if m == "hold" {
			<-release
		}
		return claudetest.TextReply("ok")
	})
	var once sync.Once
	free = func() { once.Do(func() { close(release) }) }
	t.Cleanup(func() { free(); api.Close() })
	seen = func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(asked)
	}
	return api, seen, free
}
