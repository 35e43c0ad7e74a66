package codex_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
)

// Request.Effort is Codex's reasoning effort: sent as turn/start's
// effort, it reaches the model request as reasoning.effort; without it
// the request carries Codex's own default. A level outside
// engine.EffortLevels is refused before anything starts.
func TestRealCodexEffort(t *testing.T) {
	g := newRig(t)
	effortOf := func() string {
		t.Helper()
		reqs := g.fake.Requests()
		if len(reqs) == 0 {
			t.Fatal("no model request")
		}
		var body struct {
			Reasoning *struct {
				Effort string `json:"effort"`
			} `json:"reasoning"`
		}
		if err := json.Unmarshal(reqs[len(reqs)-1].Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Reasoning == nil {
			return ""
		}
		return body.Reasoning.Effort
	}
	g.fake.Script(codextest.Reply{Text: "thought hard"})
	if r := g.turn(t, engine.Request{SessionKey: "hard", Message: "think", Effort: "high"}, nil); r.err != nil {
		t.Fatalf("err %v %v", r.err, r.types())
	}
	if got := effortOf(); got != "high" {
		t.Errorf("reasoning.effort = %q, want high", got)
	}
	g.fake.Script(codextest.Reply{Text: "thought little"})
	if r := g.turn(t, engine.Request{SessionKey: "light", Message: "think", Effort: "low"}, nil); r.err != nil {
		t.Fatalf("err %v %v", r.err, r.types())
	}
	if got := effortOf(); got != "low" {
		t.Errorf("reasoning.effort = %q, want low", got)
	}
	if _, err := g.eng.StartTurn(context.Background(), engine.Request{SessionKey: "bad", Message: "x", Cwd: t.TempDir(), Effort: "extreme"}); !errors.Is(err, engine.ErrInvalidEffort) {
		t.Errorf("effort extreme: %v", err)
	}
}
