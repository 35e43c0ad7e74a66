package native

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// The SDK's retries of a failed request are session:retry events, one per
// retry before its back-off, and the turn then goes on: here two 529
// answers, then the reply.
func TestRetriesAreEvents(t *testing.T) {
	f := newFixture(t)
	f.api.FailThenAnswer(2, "Recovered.")
	e := NewEngine(EngineConfig{APIKey: "sk-test-key", BaseURL: f.api.URL, MaxRetries: 3})
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "hi", Cwd: t.TempDir(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	evs := drain(t, tr)
	var retries []*event.SessionRetry
	for _, ev := range evs {
		if ev.Type == event.TypeSessionRetry {
			retries = append(retries, ev.Retry)
		}
	}
	if len(retries) != 2 {
		t.Fatalf("%d retries, want 2: %+v", len(retries), evs)
	}
	for i, r := range retries {
		want := event.SessionRetry{Attempt: i + 1, MaxRetries: 3, DelayMS: int64(500 << i), Error: "overloaded", APIErrorStatus: 529}
		if *r != want {
			t.Errorf("retry %d = %+v, want %+v", i, *r, want)
		}
	}
	if last := evs[len(evs)-2]; last.Type != event.TypeSessionComplete {
		t.Errorf("the turn ended with %s", last.Type)
	}
}

// A model API that cannot be reached is retried too; the event says why
// without the URL, and no retry is announced past the limit.
func TestRetryWithoutAnAnswer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // a closed port: connection refused
	e := NewEngine(EngineConfig{APIKey: "sk-test-key", BaseURL: "http://" + addr, MaxRetries: 1})
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "hi", Cwd: t.TempDir(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var retries []*event.SessionRetry
	var failed bool
	for _, ev := range drain(t, tr) {
		switch ev.Type {
		case event.TypeSessionRetry:
			retries = append(retries, ev.Retry)
		case event.TypeSessionError:
			failed = true
		}
	}
	if len(retries) != 1 || retries[0].Attempt != 1 || retries[0].MaxRetries != 1 || retries[0].APIErrorStatus != 0 ||
		!strings.Contains(retries[0].Error, "connection refused") || strings.Contains(retries[0].Error, addr) {
		t.Errorf("retries %+v", retries)
	}
	if !failed {
		t.Error("no session:error after the last attempt")
	}
}
