package acp_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// userCarries reports whether a user message of req holds s.
func userCarries(req *claudetest.Request, s string) bool {
	for _, m := range req.Messages {
		for _, c := range m.Content {
			if m.Role == "user" && (strings.Contains(c.Text, s) || strings.Contains(c.Content, s)) {
				return true
			}
		}
	}
	return false
}

// Steering on the pinned agents: claude-agent-acp advertises
// _session/steering and answers the steered message in the same turn;
// OpenCode does not advertise it, and a steer is ErrUnsupported.
func TestRealAgentSteer(t *testing.T) {
	for _, spec := range realAgents {
		if spec.name == acp.Copilot {
			continue // the two others cover both answers
		}
		t.Run(spec.name, func(t *testing.T) {
			t.Parallel()
			realSteer(t, spec)
		})
	}
}

func realSteer(t *testing.T, spec agentSpec) {
	cfg, _ := acp.BuiltinConfig(spec.name)
	fake, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	const steer = "STEER-say-banana"
	first, steered := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	calls := 0
	fake.SetResponder(func(req *claudetest.Request) claudetest.Reply {
		if userCarries(req, steer) {
			return claudetest.TextReply("banana, as steered")
		}
		if !userCarries(req, "start the work") {
			return claudetest.TextReply("unrelated")
		}
		once.Do(func() { close(first); <-steered })
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls > 10 {
			return claudetest.TextReply("done without a steer")
		}
		name, input := spec.shell("echo working")
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", name, input)}}
	})
	home, cwd := t.TempDir(), t.TempDir()
	e := realEngine(t, spec, cfg, fake, home)
	defer shutdownReal(t, e)
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "start the work", Cwd: cwd,
		PermissionMode: "default", Approver: &queueApprover{}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	select {
	case <-first:
	case <-ctx.Done():
		t.Fatal("the model was never asked")
	}
	serr := tr.(engine.Steerer).Steer(ctx, steer)
	close(steered)
	evs, err := collect(t, tr, 120*time.Second)
	var text strings.Builder
	for _, e := range evs {
		if e.Type == event.TypeChatDelta {
			text.WriteString(e.Text)
		}
	}
	if spec.name != acp.ClaudeACP {
		if !errors.Is(serr, engine.ErrUnsupported) || engine.Steers(e) {
			t.Fatalf("Steer on %s: %v (Steers %v), want ErrUnsupported", spec.name, serr, engine.Steers(e))
		}
		return
	}
	if serr != nil {
		t.Fatalf("Steer: %v", serr)
	}
	if err != nil {
		t.Fatalf("turn: %v (%v)", err, types(evs))
	}
	if !strings.Contains(text.String(), "banana, as steered") || !engine.Steers(e) {
		t.Fatalf("the turn did not answer the steer: %q", text.String())
	}
	if err := tr.(engine.Steerer).Steer(ctx, "late"); !errors.Is(err, engine.ErrNotRunning) {
		t.Fatalf("Steer after the turn: %v", err)
	}
}
