package native

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
)

// A message steered while the model answers is sent with the loop's next
// call, in the same turn: the model's answer without tools does not end
// the turn while a steer waits.
func TestEngineSteerReachesTheNextCall(t *testing.T) {
	f := newFixture(t)
	asked, steered := make(chan struct{}), make(chan struct{})
	calls := 0
	f.api.SetResponder(func(req *claudetest.Request) claudetest.Reply {
		calls++
		if calls == 1 {
			close(asked)
			<-steered
			return claudetest.TextReply("first answer")
		}
		if last := req.LastUserText(); !strings.Contains(last, "STEER: use tabs") {
			return claudetest.TextReply("no steer in: " + last)
		}
		return claudetest.TextReply("tabs it is")
	})
	e := newEngine(f)
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "format it", Cwd: t.TempDir(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	<-asked
	if err := tr.(engine.Steerer).Steer(context.Background(), "STEER: use tabs"); err != nil {
		t.Fatalf("Steer: %v", err)
	}
	close(steered)
	evs := drain(t, tr)
	var texts []string
	for _, e := range evs {
		if e.Type == "chat:complete" {
			texts = append(texts, e.Text)
		}
	}
	if strings.Join(texts, "|") != "first answer|tabs it is" {
		t.Fatalf("answers %q", texts)
	}
	if err := tr.(engine.Steerer).Steer(context.Background(), "late"); !errors.Is(err, engine.ErrNotRunning) {
		t.Fatalf("Steer after the turn: %v", err)
	}
	if !engine.Steers(e) {
		t.Fatal("the native engine does not say it steers")
	}
}
