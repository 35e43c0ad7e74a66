package agentserver

import (
	"testing"

	"github.com/chirality/harness/event"
)

// A retry of the model API is a status event: state thinking (the seed's
// states stay as they are) and the message saying what is retried.
func TestRetryIsAThinkingStatus(t *testing.T) {
	m := &mapper{}
	var out []Event
	out = m.record(&event.Event{Type: event.TypeUserMessage, Text: "hi"}, out)
	out = m.record(&event.Event{Type: event.TypeSessionRetry, Retry: &event.SessionRetry{Attempt: 3, MaxRetries: 10, DelayMS: 4045, Error: "API unreachable"}}, out)
	last := out[len(out)-1]
	if last.Type != "status" || last.State != "thinking" || last.Message != "Retrying 3/10 in 4 s — API unreachable" {
		t.Fatalf("retry mapped to %+v", last)
	}
	if len(out) != 3 {
		t.Errorf("%d events, want user, status thinking, status retry: %+v", len(out), out)
	}
}
