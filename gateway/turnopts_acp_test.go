package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// On a real ACP agent (claude-agent-acp against the fake Messages API),
// which cannot be told which tools exist: the persona's auto-approval of
// Bash lets the model's `touch` run; in a turn whose
// autoApproveToolsOverride is [] the same call is denied (the core's
// approval path), and in a turn whose toolsOverride leaves only Read it
// is denied too; the appended prompt reaches the model in the turn's
// prompt.
func TestTurnOptionsOnAnACPAgent(t *testing.T) {
	a := acpAgents[1]
	if a.name != "claude-acp" {
		t.Fatalf("acpAgents[1] is %s", a.name)
	}
	bin, err := filepath.Abs("../node_modules/.bin/" + a.bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the pinned %s is missing (make cli): %v", a.bin, err)
	}
	t.Setenv(a.binVar, bin)
	s := newServerWith(t, func(c *harness.Config) { c.ChildEnv = append(c.ChildEnv, a.env("")...) }, nil)
	if err := os.MkdirAll(filepath.Join(s.root, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.root, "agents", "AGENT_BUILDER.md"),
		[]byte("---\ntools: \"Read,Bash\"\nauto_approve_tools: [\"Bash\"]\n---\nYou build. CODEWORD-AGENT.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var prompts []string
	suggestions := 0
	var mu sync.Mutex // the adapter's requests may overlap
	s.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if len(r.Tools) == 0 {
			return claudetest.TextReply("A title")
		}
		if strings.HasPrefix(r.LastUserText(), "[SUGGESTION MODE") {
			suggestions++ // the adapter's predicted next prompt: off (ClaudeACPSessionMeta)
			return claudetest.TextReply("")
		}
		if n := len(r.Messages); n > 0 && len(r.Messages[n-1].Content) > 0 && r.Messages[n-1].Content[0].Type == "tool_result" {
			return claudetest.TextReply("done")
		}
		last := r.LastUserText()
		prompts = append(prompts, last)
		if i := strings.Index(last, "make "); i >= 0 {
			file := strings.Fields(last[i+5:])[0]
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash", map[string]any{"command": "touch " + file, "description": "make a file"})}}
		}
		return claudetest.TextReply("nothing to do")
	})
	_, out := s.createJSON(map[string]any{"engine": a.name, "persona": "BUILDER"})
	id := sessionID(t, out)
	turn := func(msg string, extra map[string]any) {
		t.Helper()
		body := map[string]any{"sessionId": id, "message": msg}
		for k, v := range extra {
			body[k] = v
		}
		b, _ := json.Marshal(body)
		resp := s.send("POST", "/api/harness/turn?events=all", string(b))
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("turn %q: %d", msg, resp.StatusCode)
		}
		evs := events(readSSE(t, resp.Body, func(e sseEvent) bool { return e.Event.Type == event.TypeProcessExit }))
		if evs[len(evs)-1].Event.Type != event.TypeProcessExit {
			t.Fatalf("turn %q did not end", msg)
		}
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(s.root, name))
		return err == nil
	}

	turn("please make one.txt", nil)
	if !exists("one.txt") {
		t.Fatalf("the persona's auto-approved Bash did not run (prompts %q)", prompts)
	}
	turn("please make two.txt", map[string]any{"autoApproveToolsOverride": []string{}, "systemPromptAppend": "CODEWORD-EXTRA."})
	if exists("two.txt") {
		t.Error("autoApproveToolsOverride []: the call ran anyway")
	}
	mu.Lock()
	p := prompts[len(prompts)-1]
	mu.Unlock()
	if !strings.Contains(p, "CODEWORD-EXTRA") {
		t.Errorf("the appended prompt is not in the turn's prompt: %q", p)
	}
	turn("please make three.txt", map[string]any{"toolsOverride": "Read"})
	if exists("three.txt") {
		t.Error("toolsOverride Read: Bash ran anyway")
	}
	turn("please make four.txt", nil)
	if !exists("four.txt") {
		t.Error("the next turn (the persona's again) could not run Bash")
	}
	mu.Lock()
	defer mu.Unlock()
	if suggestions != 0 {
		t.Errorf("the adapter asked the model for %d prompt suggestions; the session _meta turns them off", suggestions)
	}
}
