package main

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
)

// startDemoServe starts `harness serve --demo` on a free loopback port
// (the pinned CLI, a scratch state) and stops it at the end of the test,
// which fails unless it exits 0. It returns the URL and the server's stderr.
func startDemoServe(t *testing.T) (string, *lockedBuilder) {
	t.Helper()
	t.Setenv("HARNESS_CLAUDE_BIN", claudetest.FindCLI(t))
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	url, stop, status, errOut := startServe(t, "--demo", "--addr", "127.0.0.1:0")
	t.Cleanup(func() {
		stop <- os.Interrupt
		if code := <-status; code != 0 {
			t.Errorf("serve exit %d:\n%s", code, errOut.String())
		}
	})
	return url, errOut
}

// demoRoot is the demo server's scratch project.
func demoRoot(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/api/harness/roots")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var roots struct{ Roots []string }
	json.NewDecoder(resp.Body).Decode(&roots)
	if len(roots.Roots) == 0 {
		t.Fatal("no roots")
	}
	return roots.Roots[0]
}

// demoSession makes a session on eng in the demo's project.
func demoSession(t *testing.T, url, eng string) string {
	t.Helper()
	resp, err := http.Post(url+"/api/harness/session/create", "application/json",
		strings.NewReader(`{"projectRoot":"`+demoRoot(t, url)+`","mode":"workbench","engine":"`+eng+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var created struct{ Session struct{ ID string } }
	json.NewDecoder(resp.Body).Decode(&created)
	if resp.StatusCode != 201 || created.Session.ID == "" {
		t.Fatalf("create on %s: %d", eng, resp.StatusCode)
	}
	return created.Session.ID
}

// demoTurn runs one turn and returns its events (up to process:exit).
func demoTurn(t *testing.T, url, id, msg string) []map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"sessionId": id, "message": msg})
	resp, err := http.Post(url+"/api/harness/turn", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var evs []map[string]any
	readEvents(t, resp.Body, func(ev map[string]any) bool {
		evs = append(evs, ev)
		return ev["type"] == "process:exit"
	})
	return evs
}

func countType(evs []map[string]any, typ string) (n int) {
	for _, e := range evs {
		if e["type"] == typ {
			n++
		}
	}
	return n
}

// Issue 34.4: "/demo error" fails that turn only. The failed message stays
// unanswered in the conversation and the Claude Code CLI and the native
// engine send it again with the next message; the demo model read it
// there, so every later turn of the session failed with the same 400.
func TestDemoErrorFailsOneTurnOnly(t *testing.T) {
	url, _ := startDemoServe(t)
	for _, eng := range []string{"claude-code", "anthropic"} {
		id := demoSession(t, url, eng)
		if evs := demoTurn(t, url, id, "/demo error"); countType(evs, "session:error") == 0 {
			t.Errorf("%s: /demo error did not fail its turn: %v", eng, evs)
		}
		for _, msg := range []string{"hello again", "and once more"} {
			evs := demoTurn(t, url, id, msg)
			if countType(evs, "session:error") != 0 || countType(evs, "session:complete") != 1 {
				t.Errorf("%s: the turn %q after /demo error: %v", eng, msg, evs)
			}
		}
	}
}
