package codex_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// turn/steer on the pinned codex: a message steered while the model
// answers reaches the model in the same turn, before it ends.
func TestRealCodexSteer(t *testing.T) {
	g := newRig(t)
	const steer = "STEER-say-banana"
	first, steered := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	calls := 0
	g.fake.SetResponder(func(req *codextest.Request) codextest.Reply {
		texts := strings.Join(req.Texts(), "\n")
		if strings.Contains(texts, steer) {
			return codextest.Reply{Text: "banana, as steered"}
		}
		once.Do(func() { close(first); <-steered })
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls > 10 {
			return codextest.Reply{Text: "the steer never came"}
		}
		return codextest.Reply{Call: &codextest.Call{Command: "echo working"}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tr, err := g.eng.StartTurn(ctx, engine.Request{SessionKey: "s-steer", Message: "start the work", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	select {
	case <-first:
	case <-ctx.Done():
		t.Fatal("the model was never asked")
	}
	if err := tr.(engine.Steerer).Steer(ctx, steer); err != nil {
		t.Fatalf("Steer: %v", err)
	}
	close(steered)
	var text strings.Builder
	ends := 0
	for tr.Next() {
		switch e := tr.Event(); e.Type {
		case event.TypeChatDelta:
			text.WriteString(e.Text)
		case event.TypeSessionComplete, event.TypeSessionError:
			ends++
		}
	}
	if err := tr.Err(); err != nil || ends != 1 {
		t.Fatalf("turn: %v, %d ends", err, ends)
	}
	if !strings.Contains(text.String(), "banana, as steered") {
		t.Fatalf("the turn did not answer the steer: %q", text.String())
	}
	if err := tr.(engine.Steerer).Steer(ctx, "late"); !errors.Is(err, engine.ErrNotRunning) {
		t.Fatalf("Steer after the turn: %v", err)
	}
}
