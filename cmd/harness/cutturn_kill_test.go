package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
)

// Two servers over one project and state (a person's server and a
// second one, or a restart that overlaps): a turn that waits for a
// person on the first is the first's alone — the second answers 409 for
// the session and leaves its log as it is. The first is killed with
// SIGKILL: its turn is cut, and the approval it left waiting would wait
// forever. The second's next touch of the session ends that turn in the
// log (the approval denied by "shutdown", session:error, process:exit),
// and its own turn then runs.
func TestAKilledServersTurnIsEndedAndItsApprovalDenied(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	env := append(claudetest.ScratchEnv(t), "HARNESS_CLAUDE_BIN="+claudetest.FindCLI(t))
	start := func() (string, func()) {
		t.Helper()
		url, cmd, exited, errOut := startServeProcess(t, env, "--demo",
			"--addr", "127.0.0.1:0", "--root", root, "--state-dir", state, "--warm", "0", "--no-checkpoints")
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("server stderr:\n%s", errOut.String())
			}
		})
		return url, func() { cmd.Process.Kill(); <-exited }
	}
	post := func(url, body string) *http.Response { t.Helper(); return postJSON(t, url, body) }
	events := func(url, id string) []map[string]any {
		t.Helper()
		resp, err := http.Get(url + "/api/harness/session/" + id + "/events?after=0&events=all")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out []map[string]any
		readEvents(t, resp.Body, func(e map[string]any) bool { out = append(out, e); return false })
		return out
	}

	first, kill := start()
	id := createSession(t, first, `{"projectRoot":"`+root+`","mode":"direct"}`)
	turn := post(first+"/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"touch a file"}`)
	defer turn.Body.Close()
	if turn.StatusCode != 200 {
		b, _ := io.ReadAll(turn.Body)
		t.Fatalf("turn = %d %s", turn.StatusCode, b)
	}
	asked := ""
	readEvents(t, turn.Body, func(e map[string]any) bool {
		if e["type"] == "approval:requested" {
			asked, _ = e["requestId"].(string)
			return true
		}
		if e["type"] == "process:exit" {
			t.Fatalf("the turn ended without asking: %v", e)
		}
		return false
	})

	second, _ := start()
	r := post(second+"/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"hello"}`)
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusConflict {
		t.Fatalf("a turn on the second server while the first runs one = %d %s, want 409", r.StatusCode, b)
	}
	for _, e := range events(second, id) {
		if e["type"] == "process:exit" || e["type"] == "approval:resolved" {
			t.Fatalf("the second server ended the first's running turn: %v", e)
		}
	}

	kill() // SIGKILL: the approval's answer will never come from it
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := post(second+"/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"hello"}`)
		if r.StatusCode == 200 {
			readEvents(t, r.Body, func(e map[string]any) bool { return e["type"] == "process:exit" })
			r.Body.Close()
			break
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusConflict || time.Now().After(deadline) {
			t.Fatalf("a turn after the first server died = %d %s", r.StatusCode, b)
		}
		time.Sleep(50 * time.Millisecond) // the kernel lets the dead process's lock go at its exit
	}
	var types []string
	var denied map[string]any
	for _, e := range events(second, id) {
		types = append(types, e["type"].(string))
		if e["type"] == "approval:resolved" {
			denied = e
		}
	}
	if denied == nil || denied["requestId"] != asked || denied["decision"] != "deny" || denied["by"] != "shutdown" {
		t.Errorf("the waiting approval was resolved as %v, want %s denied by shutdown", denied, asked)
	}
	want := []string{"approval:resolved", "session:error", "process:exit", "user:message"}
	at := -1
	for i := range types {
		if types[i] == "approval:resolved" {
			at = i
		}
	}
	if at < 0 || len(types) < at+len(want) || strings.Join(types[at:at+len(want)], " ") != strings.Join(want, " ") {
		t.Errorf("events %v: want the cut turn ended (%v) before the next turn", types, want)
	}
	if types[len(types)-1] != "process:exit" {
		t.Errorf("the second server's turn did not end: %v", types)
	}
}
