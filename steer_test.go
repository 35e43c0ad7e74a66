package harness

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// A message steered into a Claude Code turn (the real CLI on the fake
// API) reaches the model before the turn ends, is a user:message of that
// turn in the log, and the turn ends once; with no turn running a steer
// is ErrNoTurnToSteer.
func TestSteerClaudeCode(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.AllowedTools = []string{"Bash"} })
	const steer = "STEER-also-say-banana"
	first, steered := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	calls := 0
	e.api.SetResponder(func(req *claudetest.Request) claudetest.Reply {
		all := string(req.Body)
		if strings.Contains(all, steer) {
			return claudetest.TextReply("banana, as steered")
		}
		if !strings.Contains(all, "start the work") {
			return claudetest.TextReply("unrelated")
		}
		once.Do(func() { close(first); <-steered })
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls > 20 {
			return claudetest.TextReply("the steer never came")
		}
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash", map[string]any{"command": "echo working"})}}
	})
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.h.Steer(ctx, s.ID, "nothing runs"); !errors.Is(err, ErrNoTurnToSteer) {
		t.Fatalf("Steer on an idle session = %v, want ErrNoTurnToSteer", err)
	}
	tr, err := e.h.StartTurn(ctx, TurnRequest{SessionID: s.ID, Message: "start the work"})
	if err != nil {
		t.Fatal(err)
	}
	<-first
	serr := e.h.Steer(ctx, s.ID, steer)
	close(steered)
	if serr != nil {
		t.Fatalf("Steer: %v", serr)
	}
	<-tr.Done()
	if err := tr.Err(); err != nil {
		t.Fatalf("turn: %v", err)
	}
	evs := logEvents(t, e, e.h, s.ID)
	var users []string
	ends, exits, text := 0, 0, ""
	for _, ev := range evs {
		switch ev.Type {
		case event.TypeUserMessage:
			if exits > 0 {
				t.Errorf("user:message %q after the turn's process:exit", ev.Text)
			}
			users = append(users, ev.Text)
		case event.TypeSessionComplete, event.TypeSessionError:
			ends++
		case event.TypeProcessExit:
			exits++
		case event.TypeChatComplete:
			text += ev.Text
		}
	}
	if len(users) != 2 || users[0] != "start the work" || users[1] != steer {
		t.Errorf("user:message events %q, want the turn's and the steer", users)
	}
	if ends != 1 || exits != 1 || !strings.Contains(text, "banana, as steered") {
		t.Errorf("%d ends, %d exits, text %q: want one turn that answered the steer", ends, exits, text)
	}
	if err := e.h.Steer(ctx, s.ID, "too late"); !errors.Is(err, ErrNoTurnToSteer) {
		t.Fatalf("Steer after the turn = %v, want ErrNoTurnToSteer", err)
	}
}

// An engine without steering refuses with ErrSteerUnsupported (an
// ErrUnsupported), naming the engines that can; the turn goes on.
func TestSteerUnsupportedNamesEnginesThatCan(t *testing.T) {
	e, qe, id := queueEnv(t)
	ctx := context.Background()
	tr, err := e.h.StartTurn(ctx, TurnRequest{SessionID: id, Message: "hold it"})
	if err != nil {
		t.Fatal(err)
	}
	err = e.h.Steer(ctx, id, "change course")
	if !errors.Is(err, ErrSteerUnsupported) || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Steer on the queue engine = %v, want ErrSteerUnsupported", err)
	}
	for _, name := range []string{"claude-code", "anthropic", "codex"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the refusal does not name %s: %v", name, err)
		}
	}
	if strings.Contains(err.Error(), "opencode") {
		t.Errorf("the refusal names opencode, which cannot steer: %v", err)
	}
	if err := e.h.Steer(ctx, id, "  "); !errors.Is(err, ErrEmptyMessage) {
		t.Errorf("a blank steer = %v, want ErrEmptyMessage", err)
	}
	if err := e.h.Steer(ctx, id, strings.Repeat("x", MaxQueuedMessage+1)); !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("a steer over the bound = %v, want ErrMessageTooLarge", err)
	}
	qe.free()
	<-tr.Done()
	for _, ev := range logEvents(t, e, e.h, id) {
		if ev.Type == event.TypeUserMessage && ev.Text != "hold it" {
			t.Errorf("a refused steer is in the log: %q", ev.Text)
		}
	}
}
