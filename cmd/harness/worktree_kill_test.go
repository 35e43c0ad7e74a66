package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/internal/gittest"
)

// Issue 31: `harness serve` killed with SIGKILL while a worktree session's
// turn runs; started again on the same root and state directory, its
// worktree sessions are all there and continue, a deleted one's worktree
// and branch are gone, and git knows no worktree but the sessions'.
func TestServeWorktreesSurviveSIGKILL(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "README.md"), []byte("# p\n"), 0o644)
	gittest.Init(t, root)
	state := t.TempDir()
	api, seen, free := holdingAPI(t)
	saw := func(m string) bool { return slices.Contains(seen(), m) }
	start := func() string {
		t.Helper()
		url, _, _, errOut := startServeProcess(t, append(claudetest.ScratchEnv(t), api.Env()...),
			"--addr", "127.0.0.1:0", "--root", root, "--state-dir", state, "--engine", "anthropic", "--warm", "0", "--no-checkpoints")
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("server stderr:\n%s", errOut.String())
			}
		})
		return url
	}
	do := func(method, url, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	type sess struct {
		ID, Workdir, Branch, Isolation string
	}

	url, cmd, exited, _ := startServeProcess(t, append(claudetest.ScratchEnv(t), api.Env()...),
		"--addr", "127.0.0.1:0", "--root", root, "--state-dir", state, "--engine", "anthropic", "--warm", "0", "--no-checkpoints")
	var ss []sess
	for range 3 {
		code, b := do("POST", url+"/api/harness/session/create", `{"projectRoot":"`+root+`","mode":"direct","engine":"anthropic","isolation":"worktree"}`)
		var c struct{ Session sess }
		json.Unmarshal(b, &c)
		if code != 201 || c.Session.Workdir == "" {
			t.Fatalf("create = %d %s", code, b)
		}
		ss = append(ss, c.Session)
	}
	turn, err := http.Post(url+"/api/harness/turn", "application/json", strings.NewReader(`{"sessionId":"`+ss[0].ID+`","message":"hold"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Body.Close()
	go io.Copy(io.Discard, turn.Body)
	deadline := time.Now().Add(60 * time.Second)
	for !saw("hold") {
		if time.Now().After(deadline) {
			t.Fatal("the turn never reached the model")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown of any kind
		t.Fatal(err)
	}
	<-exited
	free()

	url = start()
	code, b := do("GET", url+"/api/harness/session/list?projectRoot="+root, "")
	var list []sess
	if code != 200 || json.Unmarshal(b, &list) != nil || len(list) != 3 {
		t.Fatalf("after the restart: list = %d %s", code, b)
	}
	for _, s := range list {
		if s.Isolation != "worktree" || !strings.HasPrefix(s.Branch, "harness/") {
			t.Errorf("after the restart: %+v", s)
		}
	}
	for _, s := range ss {
		if _, err := os.Stat(s.Workdir); err != nil {
			t.Errorf("session %s's worktree is gone after the restart: %v", s.ID, err)
		}
	}
	// The cut session continues in its worktree.
	resp, err := http.Post(url+"/api/harness/turn", "application/json", strings.NewReader(`{"sessionId":"`+ss[0].ID+`","message":"again"}`))
	if err != nil {
		t.Fatal(err)
	}
	last := ""
	readEvents(t, resp.Body, func(e map[string]any) bool {
		last, _ = e["type"].(string)
		return false
	})
	resp.Body.Close()
	if resp.StatusCode != 200 || last != "process:exit" || !saw("again") {
		t.Fatalf("the cut session's next turn: %d, ended with %q", resp.StatusCode, last)
	}
	// A deleted one leaves nothing behind.
	if code, b := do("DELETE", url+"/api/harness/session/"+ss[1].ID+"?force=1", ""); code != 204 {
		t.Fatalf("delete = %d %s", code, b)
	}
	if _, err := os.Stat(ss[1].Workdir); !os.IsNotExist(err) {
		t.Errorf("the deleted session's worktree is still there: %v", err)
	}
	if out := gittest.Git(t, root, "branch", "--list", ss[1].Branch); out != "" {
		t.Errorf("the deleted session's branch is still there: %q", out)
	}
	var trees []string
	for _, l := range strings.Split(gittest.Git(t, root, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok && p != root {
			trees = append(trees, p)
		}
	}
	if len(trees) != 2 || !strings.Contains(strings.Join(trees, "\n"), ss[0].Workdir) || !strings.Contains(strings.Join(trees, "\n"), ss[2].Workdir) {
		t.Errorf("git's worktrees %q, want the two sessions' (%s, %s) only", trees, ss[0].Workdir, ss[2].Workdir)
	}
}
