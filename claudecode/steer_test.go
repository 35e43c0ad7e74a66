package claudecode_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// carries reports whether any user text of req holds s.
func carries(req *claudetest.Request, s string) bool {
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		for _, c := range m.Content {
			if strings.Contains(c.Text, s) || strings.Contains(c.Content, s) {
				return true
			}
		}
	}
	return false
}

// A message steered into a running turn reaches the model in that turn:
// a request after the steer carries it, and the turn ends once, with the
// answer to it.
func TestRealCLISteer(t *testing.T) {
	r := newRealCLI(t)
	const steer = "STEER-please-also-say-banana"
	first, steered := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	tools := 0
	r.api.SetResponder(func(req *claudetest.Request) claudetest.Reply {
		if carries(req, steer) {
			return claudetest.TextReply("banana, as you steered")
		}
		if !carries(req, "start the work") {
			return claudetest.TextReply("unrelated")
		}
		once.Do(func() { close(first); <-steered })
		mu.Lock()
		defer mu.Unlock()
		if tools++; tools > 30 {
			return claudetest.TextReply("the steer never came")
		}
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash", map[string]any{"command": "echo working"})}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, err := r.mgr.StartTurn(ctx, "s-steer", "start the work", claudecode.TurnOpts{Cwd: r.cwd, AllowedTools: []string{"Bash"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	select {
	case <-first:
	case <-ctx.Done():
		t.Fatal("the model was never asked")
	}
	if err := tr.Steer(ctx, steer); err != nil {
		t.Fatalf("Steer: %v", err)
	}
	close(steered)
	var evs []event.Event
	for tr.Next() {
		evs = append(evs, tr.Event())
	}
	assertWellFormed(t, evs)
	if err := tr.Err(); err != nil {
		t.Fatalf("turn: %v", err)
	}
	var text strings.Builder
	completes := 0
	for _, e := range evs {
		if e.Type == event.TypeChatDelta {
			text.WriteString(e.Text)
		}
		if e.Type == event.TypeSessionComplete {
			completes++
		}
	}
	if !strings.Contains(text.String(), "banana, as you steered") || completes != 1 {
		t.Fatalf("the turn did not answer the steer (completes %d): %q", completes, text.String())
	}
	if err := tr.Steer(ctx, "too late"); !errors.Is(err, engine.ErrNotRunning) {
		t.Fatalf("Steer after the turn: %v, want ErrNotRunning", err)
	}
}
