package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// latencies collects, per notification, the time from its event to the
// receiver's handler.
type latencies struct {
	mu   sync.Mutex
	got  []time.Duration
	seen chan struct{}
}

func (l *latencies) report(b *testing.B) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.got) == 0 {
		return
	}
	s := slices.Clone(l.got)
	slices.Sort(s)
	q := func(p float64) float64 { return float64(s[int(p*float64(len(s)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.95), "p95-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkEventToWebhook: from Notifier.Observe of an approval request
// to the webhook handler on loopback, one at a time (the notifier's own
// cost: queue, JSON, signature, HTTP).
func BenchmarkEventToWebhook(b *testing.B) {
	lat := &latencies{seen: make(chan struct{}, 1)}
	var start atomic.Int64 // UnixNano of the Observe being measured
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		lat.mu.Lock()
		lat.got = append(lat.got, time.Duration(time.Now().UnixNano()-start.Load()))
		lat.mu.Unlock()
		lat.seen <- struct{}{}
	}))
	defer srv.Close()
	n, err := New(Config{Webhooks: []string{srv.URL}, Secret: "bench-secret"})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close(context.Background())
	ev := event.Event{Type: event.TypeApprovalRequested, SessionID: "s1", Approval: &event.ApprovalRequested{ToolName: "Bash"}}
	b.ResetTimer()
	for b.Loop() {
		start.Store(time.Now().UnixNano())
		n.Observe(ev)
		<-lat.seen
	}
	lat.report(b)
}

// BenchmarkTurnEndToWebhook: from a real turn's process:exit (its stored
// time, in milliseconds) to the webhook handler: the real CLI on the fake
// API, the Harness's watch, the notifier, loopback HTTP.
func BenchmarkTurnEndToWebhook(b *testing.B) {
	h, api, root := newHarness(b, false)
	lat := &latencies{seen: make(chan struct{}, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		var no Notification
		_ = json.NewDecoder(r.Body).Decode(&no)
		at, err := time.Parse(time.RFC3339, no.At)
		if err != nil || no.Type != TypeTurnCompleted {
			panic(fmt.Sprintf("call %+v", no))
		}
		lat.mu.Lock()
		lat.got = append(lat.got, arrived.Sub(at))
		lat.mu.Unlock()
		lat.seen <- struct{}{}
	}))
	defer srv.Close()
	n, err := Start(h, Config{Webhooks: []string{srv.URL}})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close(context.Background())
	api.SetResponder(func(*claudetest.Request) claudetest.Reply { return claudetest.TextReply("done") })
	s, err := h.NewSession(harness.SessionSpec{ProjectRoot: root, Mode: "direct"})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		tr, err := h.StartTurn(context.Background(), harness.TurnRequest{SessionID: s.ID, Message: "hello"})
		if err != nil {
			b.Fatal(err)
		}
		<-tr.Done()
		<-lat.seen
	}
	lat.report(b)
}
