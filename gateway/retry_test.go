package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/event"
)

// TestSSEShowsRetries runs a turn on the real CLI against a model API that
// answers 529 twice: the SSE stream carries a session:retry for each retry
// within 2 s of the failed request, before the turn's answer and end.
func TestSSEShowsRetries(t *testing.T) {
	s := newServer(t, nil)
	id := s.create("", "workbench")
	firstFailure := s.api.FailThenAnswer(2, "Recovered.")
	resp := s.send("POST", "/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"hi"}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("turn = %d", resp.StatusCode)
	}
	var retries []*event.SessionRetry
	evs := events(readSSE(t, resp.Body, func(e sseEvent) bool {
		if e.Event.Type == event.TypeSessionRetry {
			if len(retries) == 0 {
				if lag := time.Since(firstFailure()); firstFailure().IsZero() || lag > 2*time.Second {
					t.Errorf("first session:retry arrived %v after the failed request (want ≤ 2 s)", lag)
				}
			}
			retries = append(retries, e.Event.Retry)
		}
		return false
	}))
	checkTurnEvents(t, id, 0, evs)
	if len(retries) != 2 {
		t.Fatalf("%d session:retry events, want 2", len(retries))
	}
	for i, r := range retries {
		if r.Attempt != i+1 || r.MaxRetries != 10 || r.APIErrorStatus != 529 || r.Error != "overloaded" || r.DelayMS <= 0 {
			t.Errorf("retry %d = %+v", i, *r)
		}
	}
	var text strings.Builder
	for _, e := range evs {
		if e.Event.Type == event.TypeChatDelta {
			text.WriteString(e.Event.Text)
		}
	}
	if text.String() != "Recovered." || evs[len(evs)-2].Event.Type != event.TypeSessionComplete {
		t.Errorf("answer %q, last events %v", text.String(), evs[len(evs)-2].Event.Type)
	}
}
