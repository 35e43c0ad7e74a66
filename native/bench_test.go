package native

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// BenchmarkFirstDelta: a message to the native engine → its first
// chat:delta, on the loopback fake Messages API (p50/p99 over b.N turns).
func BenchmarkFirstDelta(b *testing.B) {
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		b.Fatal(err)
	}
	defer api.Close()
	api.SetResponder(func(*claudetest.Request) claudetest.Reply { return claudetest.TextReply("hello there, friend") })
	e := NewEngine(EngineConfig{APIKey: "k", BaseURL: api.URL, Options: []option.RequestOption{option.WithMaxRetries(0)}})
	defer e.Shutdown(context.Background())
	cwd, state := b.TempDir(), b.TempDir()
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s", Message: "hi", Cwd: cwd, StateDir: state})
		if err != nil {
			b.Fatal(err)
		}
		first := time.Duration(0)
		for tr.Next() {
			if first == 0 && tr.Event().Type == event.TypeChatDelta {
				first = time.Since(t0)
			}
		}
		lat = append(lat, first)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// The loop's cost per streamed event beside the bare SDK stream: the same
// 10,000-delta answer consumed by the SDK alone (NewStreaming + Accumulate)
// and by the native engine (its events included). CPU time of this
// process per delta.
func BenchmarkDeltas10k(b *testing.B) {
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		b.Fatal(err)
	}
	defer api.Close()
	answer := strings.Repeat("x", 10_000)
	api.SetResponder(func(*claudetest.Request) claudetest.Reply {
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(answer)}, ChunkSize: 1}
	})
	opts := []option.RequestOption{option.WithAPIKey("k"), option.WithBaseURL(api.URL), option.WithMaxRetries(0)}
	b.Run("bare-sdk", func(b *testing.B) {
		client := anthropic.NewClient(opts...)
		cpu := cpuTime()
		for range b.N {
			s := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: DefaultModel, MaxTokens: 10,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("go"))}})
			msg := anthropic.Message{}
			n := 0
			for s.Next() {
				msg.Accumulate(s.Current())
				n++
			}
			if s.Err() != nil || n < 10_000 {
				b.Fatal(s.Err(), n)
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N*10_000), "cpu-ns/delta")
	})
	b.Run("native-engine", func(b *testing.B) {
		e := NewEngine(EngineConfig{APIKey: "k", BaseURL: api.URL, Options: []option.RequestOption{option.WithMaxRetries(0)}})
		defer e.Shutdown(context.Background())
		cwd, state := b.TempDir(), b.TempDir()
		cpu := cpuTime()
		for range b.N {
			tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s", Message: "go", Cwd: cwd, StateDir: state})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for tr.Next() {
				if tr.Event().Type == event.TypeChatDelta {
					n++
				}
			}
			if n < 10_000 {
				b.Fatal(n)
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N*10_000), "cpu-ns/delta")
	})
}

// cpuTime is this process's user+system CPU time in nanoseconds (the fake
// API runs in it too, the same for both sides).
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
