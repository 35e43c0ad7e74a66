package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
)

// Issue 34.3: `harness serve --demo` shows the approval walkthrough by
// default: the demo's `touch` is asked of a person (it ran in dontAsk and
// was denied unasked), and the demo model says what the tool's result
// says happened: denied, nothing made; allowed, the file is there. On an
// engine with no shell tool it says it cannot, not that the file exists.
func TestDemoTouchAsksAndTellsTheTruth(t *testing.T) {
	t.Setenv("HARNESS_CLAUDE_BIN", claudetest.FindCLI(t))
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	url, stop, status, errOut := startServe(t, "--demo", "--addr", "127.0.0.1:0")
	defer func() {
		stop <- os.Interrupt
		if code := <-status; code != 0 {
			t.Errorf("serve exit %d:\n%s", code, errOut.String())
		}
	}()
	resp, err := http.Get(url + "/api/harness/roots")
	if err != nil {
		t.Fatal(err)
	}
	var roots struct{ Roots []string }
	json.NewDecoder(resp.Body).Decode(&roots)
	resp.Body.Close()
	marker := filepath.Join(roots.Roots[0], "demo-marker.txt")

	id := demoSession(t, url, "claude-code")
	for _, decision := range []string{"deny", "allow"} {
		body, _ := json.Marshal(map[string]string{"sessionId": id, "message": "touch a file please"})
		resp, err := http.Post(url+"/api/harness/turn", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		asked, text := 0, ""
		readEvents(t, resp.Body, func(ev map[string]any) bool {
			switch ev["type"] {
			case "approval:requested":
				asked++
				if _, err := os.Stat(marker); err == nil {
					t.Errorf("the file exists before the person answered")
				}
				b, _ := json.Marshal(map[string]any{"sessionId": id, "requestId": ev["requestId"], "decision": decision})
				r, err := http.Post(url+"/api/harness/approval", "application/json", strings.NewReader(string(b)))
				if err != nil {
					t.Fatal(err)
				}
				r.Body.Close()
			case "chat:delta":
				s, _ := ev["text"].(string)
				text += s
			}
			return ev["type"] == "process:exit"
		})
		resp.Body.Close()
		if asked != 1 {
			t.Errorf("%s: touch asked %d times, want once (the demo must ask, not deny unasked)", decision, asked)
		}
		_, err = os.Stat(marker)
		switch decision {
		case "deny":
			if err == nil || !strings.Contains(text, "was not created") || strings.Contains(text, "is in the project now") {
				t.Errorf("denied: file made %v; answer %q", err == nil, text)
			}
		case "allow":
			if err != nil || !strings.Contains(text, "is in the project now") {
				t.Errorf("allowed: file made %v; answer %q", err == nil, text)
			}
		}
	}
	os.Remove(marker)

	// the native engine has no shell: it says so and claims nothing
	evs := demoTurn(t, url, demoSession(t, url, "anthropic"), "touch a file please")
	text := ""
	for _, ev := range evs {
		if ev["type"] == "chat:delta" {
			s, _ := ev["text"].(string)
			text += s
		}
	}
	if !strings.Contains(text, "no shell tool") || strings.Contains(text, "is in the project now") {
		t.Errorf("anthropic: %q", text)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("anthropic made the file")
	}
}
