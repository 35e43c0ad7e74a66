package claudecode_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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

// blockingApprover allows every tool, once release is closed; asked is
// closed at the first question.
type blockingApprover struct {
	asked, release chan struct{}
	once           sync.Once
}

func (a *blockingApprover) Ask(ctx context.Context, _ engine.ApprovalRequest) engine.ApprovalDecision {
	a.once.Do(func() { close(a.asked) })
	select {
	case <-a.release:
	case <-ctx.Done():
	}
	return engine.ApprovalDecision{Allow: true}
}

// A steer while an approval question is open waits for the answer (the
// tool is not cut under the person): the tool runs, and the steer is
// still answered in the same turn, which ends once.
func TestRealCLISteerDuringApproval(t *testing.T) {
	r := newRealCLI(t)
	const steer = "STEER-while-asking"
	r.api.SetResponder(func(req *claudetest.Request) claudetest.Reply {
		switch {
		case carries(req, steer):
			return claudetest.TextReply("answered the steer")
		case len(req.ToolResults()) > 0:
			return claudetest.TextReply("the tool ran")
		case carries(req, "touch it"):
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash", map[string]any{"command": "touch steered.txt"})}}
		}
		return claudetest.TextReply("unrelated")
	})
	a := &blockingApprover{asked: make(chan struct{}), release: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, err := r.mgr.StartTurn(ctx, "s-steer-ask", "touch it", claudecode.TurnOpts{Cwd: r.cwd, PermissionMode: "default", Approver: a})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var evsMu sync.Mutex
	var evs []event.Event
	drained := make(chan struct{})
	go func() {
		for tr.Next() { // the question is asked once its tool:start was read
			evsMu.Lock()
			evs = append(evs, tr.Event())
			evsMu.Unlock()
		}
		close(drained)
	}()
	select {
	case <-a.asked:
	case <-ctx.Done():
		t.Fatal("no approval was asked")
	}
	if err := tr.Steer(ctx, steer); err != nil {
		t.Fatalf("Steer: %v", err)
	}
	close(a.release)
	<-drained
	evsMu.Lock()
	defer evsMu.Unlock()
	assertWellFormed(t, evs)
	var text strings.Builder
	for _, e := range evs {
		if e.Type == event.TypeChatDelta {
			text.WriteString(e.Text)
		}
	}
	if _, err := os.Stat(filepath.Join(r.cwd, "steered.txt")); err != nil {
		t.Errorf("the approved tool did not run: %v", err)
	}
	if !strings.Contains(text.String(), "answered the steer") {
		t.Fatalf("the steer was not answered in the turn: %q", text.String())
	}
}
