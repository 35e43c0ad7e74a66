package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 34.3: `harness serve --demo` shows the approval walkthrough by
// default: the demo's `touch` is asked of a person (it ran in dontAsk and
// was denied unasked), and the demo model says what the tool's result
// says happened: denied, nothing made; allowed, the file is there. On an
// engine with no shell tool it says it cannot, not that the file exists.
func TestDemoTouchAsksAndTellsTheTruth(t *testing.T) {
	url, errOut := startDemoServe(t)
	// Issue 34.5: the demo says what to open and what to type.
	if want := "try it: open " + url + " in a browser and send \"hello\""; !strings.Contains(errOut.String(), want) {
		t.Errorf("no %q in:\n%s", want, errOut.String())
	}
	marker := filepath.Join(demoRoot(t, url), "demo-marker.txt")

	id := demoSession(t, url, "claude-code")
	for _, decision := range []string{"deny", "allow"} {
		body, _ := json.Marshal(map[string]string{"sessionId": id, "message": "touch a file please"})
		resp, err := http.Post(url+"/api/harness/turn?events=all", "application/json", strings.NewReader(string(body)))
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

// Issue 34.5: `make demo` says what it does before each long step (a cold
// build was minutes of silence) and its build names the packages as it
// compiles them.
func TestMakeDemoSaysWhatItDoes(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is needed: %v", err)
	}
	cmd := exec.Command("make", "-n", "demo")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n demo: %v\n%s", err, out)
	}
	s := string(out)
	build := strings.Index(s, "go build -v -o bin/harness ./cmd/harness")
	say := strings.Index(s, `echo "make demo: 1/3 building bin/harness`)
	serve := strings.Index(s, "./bin/harness serve --demo")
	if say < 0 || build < 0 || say > build || serve < build {
		t.Errorf("make demo must announce the build, build with -v, then serve:\n%s", s)
	}
}
