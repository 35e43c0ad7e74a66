package agentserver

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/acp/acptest"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
)

// POST /steer on the native engine: 409 with no turn running; 400 for a
// blank content; 200 {"ok":true} into a running turn, whose next model
// call carries the message and whose event stream shows it as a user
// event of that turn (no second turn starts).
func TestSteerOverHTTP(t *testing.T) {
	e := newEnv(t, engine.Anthropic, "")
	asked, held := make(chan struct{}), make(chan struct{})
	var askOnce, holdOnce sync.Once
	release := func() { holdOnce.Do(func() { close(held) }) }
	t.Cleanup(func() { askOnce.Do(func() { close(asked) }); release() })
	var mu sync.Mutex
	var calls []string
	e.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		mu.Lock()
		calls = append(calls, r.LastUserText())
		mu.Unlock()
		if r.LastUserText() == "hold" {
			askOnce.Do(func() { close(asked) })
			<-held
			return claudetest.TextReply("held answer")
		}
		return claudetest.TextReply("answer to " + r.LastUserText())
	})
	s := e.openStream("", "")
	if code, body := e.post("/steer", `{"content":"nothing runs"}`); code != 409 {
		t.Fatalf("steer with no turn: %d %s, want 409", code, body)
	}
	e.prompt("hold")
	<-asked
	if code, body := e.post("/steer", `{"content":"  "}`); code != 400 {
		t.Fatalf("blank steer: %d %s, want 400", code, body)
	}
	if code, body := e.post("/steer", `{"content":"use tabs","extra":1}`); code != 400 {
		t.Fatalf("steer with an unknown field: %d %s, want 400", code, body)
	}
	if code, body := e.post("/steer", `{"content":"use tabs"}`); code != 200 || strings.TrimSpace(body) != `{"ok":true}` {
		t.Fatalf("steer: %d %s, want 200 {\"ok\":true}", code, body)
	}
	release()
	evs := s.until(t, isEnd)
	var users, texts []string
	for _, ev := range evs {
		switch ev.Type {
		case "user":
			users = append(users, ev.Content)
		case "text":
			texts = append(texts, ev.Content)
		}
	}
	if strings.Join(users, "|") != "hold|use tabs" || strings.Join(texts, "|") != "held answer|answer to use tabs" {
		t.Fatalf("the turn's events: users %q, texts %q", users, texts)
	}
	if ev := evs[len(evs)-1]; ev.State != "idle" {
		t.Fatalf("the turn ended %+v", ev.Event)
	}
	mu.Lock()
	got := strings.Join(calls, "|")
	mu.Unlock()
	if got != "hold|use tabs" {
		t.Fatalf("model calls %q: the steer must be the next call's", got)
	}
}

// POST /steer on an ACP agent that does not advertise steering, while
// its turn runs: 422 naming the engines that can.
func TestSteerUnsupportedOverHTTP(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, "fakeacp", "", func() []engine.Engine {
		fake, err := acp.NewEngine(acp.Config{Name: "fakeacp", Command: []string{"fakeagent"}, Binary: bin,
			Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, ExtraEnv: []string{acptest.AgentEnv, "ACPTEST_STATE=" + t.TempDir()},
			StopGrace: 500 * time.Millisecond, InterruptGrace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return []engine.Engine{fake}
	})
	s := e.openStream("?deltas=1", "")
	e.prompt("slow")
	s.until(t, func(ev Event) bool { return ev.Type == "text_delta" }) // the agent's turn runs
	code, body := e.post("/steer", `{"content":"turn left"}`)
	if code != 422 || !strings.Contains(body, "fakeacp") || !strings.Contains(body, "claude-code") || !strings.Contains(body, "codex") {
		t.Errorf("steer on an engine that cannot: %d %s, want 422 naming the engines that can", code, body)
	}
	if code, body := e.post("/cancel", ""); code != 200 || !strings.Contains(body, "true") {
		t.Fatalf("cancel: %d %s", code, body)
	}
	s.until(t, isEnd)
}

// A steer while a tool waits on a person (Claude Code, which steers
// through its streamed input): a client that reconnects with the steer's
// event id gets exactly what the live stream had after it (the tool's
// result with its call's id, the answer), though the server notes the
// steer's user:message as it notes a turn's start.
func TestSteerReplay(t *testing.T) {
	e := newEnv(t, engine.ClaudeCode, "")
	live := e.openStream("", "")
	e.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash", map[string]any{"command": "touch x", "description": "make x"})}},
		claudetest.TextReply("made it"))
	e.prompt("make x")
	evs := live.until(t, func(ev Event) bool { return ev.Type == "approval" })
	ap := evs[len(evs)-1]
	if code, body := e.post("/steer", `{"content":"and then stop"}`); code != 200 {
		t.Fatalf("steer: %d %s", code, body)
	}
	steer := live.until(t, func(ev Event) bool { return ev.Type == "user" })
	if code, body := e.post("/approval", `{"requestId":"`+ap.RequestID+`","decision":"allow"}`); code != 200 {
		t.Fatalf("approval: %d %s", code, body)
	}
	after := live.until(t, isEnd)
	again := e.openStream("", steer[len(steer)-1].id)
	replayed := again.until(t, isEnd)
	show := func(evs []sseEvent) string {
		var b strings.Builder
		for _, ev := range evs {
			b.WriteString(ev.id + " " + ev.Type + " " + ev.ID + " " + ev.State + " " + ev.Content + "\n")
		}
		return b.String()
	}
	if got, want := show(replayed), show(after); got != want {
		t.Fatalf("replayed after the steer:\n%s\nwant what the live stream had:\n%s", got, want)
	}
	if !strings.Contains(show(after), "tool_result toolu") || !strings.Contains(show(after), "text   made it") {
		t.Fatalf("no tool result after the steer:\n%s", show(after))
	}
}
