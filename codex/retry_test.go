package codex

import (
	"io"
	"strings"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/stderrtail"
)

// Codex's error notifications with willRetry are session:retry events:
// the line recorded from the real app-server against a closed port (no
// attempt, no delay: counted per turn), one with "N/M" in its message and
// an HTTP status, and one without willRetry (no event). Secrets of the
// child's environment are scrubbed.
func TestRetryNotifications(t *testing.T) {
	lines := `{"method":"error","params":{"error":{"message":"Reconnecting... waiting for network","codexErrorInfo":{"responseStreamDisconnected":{"httpStatusCode":null}},"additionalDetails":"Connection failed: error sending request","misalignment":null},"willRetry":true,"threadId":"th","turnId":"tu"},"emittedAtMs":1795478704892}
{"method":"error","params":{"error":{"message":"Reconnecting... 2/5 (stream error sk-test-secret-123)","codexErrorInfo":{"responseStreamDisconnected":{"httpStatusCode":500}},"additionalDetails":null},"willRetry":true,"threadId":"th","turnId":"tu"}}
{"method":"error","params":{"error":{"message":"final","codexErrorInfo":null},"willRetry":false,"threadId":"th","turnId":"tu"}}
`
	tr := newTurn(NewEngine(Config{}), engine.Request{SessionKey: "k"})
	tr.scrub = stderrtail.New([]string{"sk-test-secret-123"}).Scrub
	tr.peer = newPeer(strings.NewReader(lines), io.Discard, nil, nil)
	m := newMapper(tr)
	got := make(chan []event.Event)
	go func() {
		var evs []event.Event
		for tr.Next() {
			evs = append(evs, tr.Event())
		}
		got <- evs
	}()
	for msg := range tr.peer.in {
		m.handle(msg)
	}
	tr.s.End(nil)
	evs := <-got
	want := []event.SessionRetry{
		{Attempt: 1, Error: "Connection failed: error sending request"},
		{Attempt: 2, MaxRetries: 5, Error: "Reconnecting... 2/5 (stream error [REDACTED])", APIErrorStatus: 500},
	}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	for i, ev := range evs {
		if ev.Type != event.TypeSessionRetry || *ev.Retry != want[i] {
			t.Errorf("event %d = %s %+v, want %+v", i, ev.Type, ev.Retry, want[i])
		}
	}
}
