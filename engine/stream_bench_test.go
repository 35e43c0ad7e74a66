package engine_test

import (
	"strconv"
	"syscall"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// benchStream hands n events from a producer goroutine to the consumer
// (the benchmark's goroutine) through a Stream of 256, as the engines use
// it. produce and consume are the work each side does per event besides
// the hand-off. It reports ns and voluntary context switches of the
// process per event: a consumer that parks and is woken for each event
// costs the kernel a switch per event once the Go scheduler has nothing
// else to run.
func benchStream(b *testing.B, n int, produce func(*event.Event), consume func(event.Event), emit func(*engine.Stream, event.Event), flushEvery int) {
	b.ReportAllocs()
	defer reportUsage(b, func() int { return b.N * n })()
	for b.Loop() {
		s := engine.NewStream(256)
		go func() {
			ev := event.Event{Type: event.TypeChatDelta, SessionID: "bench", Text: "hello"}
			for i := 0; i < n; i++ {
				if produce != nil {
					produce(&ev)
				}
				emit(s, ev)
				if flushEvery > 0 && (i+1)%flushEvery == 0 {
					s.Flush()
				}
			}
			s.End(nil)
		}()
		got := 0
		for s.Next() {
			if consume != nil {
				consume(s.Event())
			}
			got++
		}
		if got != n {
			b.Fatalf("%d events, want %d", got, n)
		}
	}
}

// reportUsage reports, when the function it returns is called, wall and
// CPU time (of the whole process) and context switches per event, events
// the count then.
func reportUsage(b *testing.B, events func() int) func() {
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	return func() {
		var after syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		n := float64(events())
		cpu := func(r *syscall.Rusage) int64 { return r.Utime.Nano() + r.Stime.Nano() }
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/event")
		b.ReportMetric(float64(cpu(&after)-cpu(&before))/n, "cpu-ns/event")
		b.ReportMetric(float64(after.Nvcsw-before.Nvcsw+after.Nivcsw-before.Nivcsw)/n, "csw/event")
		b.ReportMetric(0, "ns/op")
	}
}

// spin is CPU work of about the size of decoding one delta line (the
// producer) or encoding one event (the consumer).
func spin(rounds int) func(*event.Event) {
	return func(*event.Event) { sink += work(rounds) }
}

var sink uint64

func work(rounds int) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < rounds; i++ {
		h = (h ^ uint64(i)) * 1099511628211
	}
	return h
}

func emitEach(s *engine.Stream, ev event.Event)  { s.Emit(ev) }
func queueEach(s *engine.Stream, ev event.Event) { s.Queue(ev) }

// BenchmarkStreamHandoff: the hand-off alone (both sides do nothing
// else), a producer slower than its consumer (the claudecode driver:
// decoding a line costs more than encoding its event), and a slower
// consumer; each with Emit (a consumer woken as soon as it waits) and
// with Queue + a Flush per 230 events (a decoder that flushes before each
// read of a 64 KB pipe buffer).
func BenchmarkStreamHandoff(b *testing.B) {
	var out []byte
	encode := func(ev event.Event) { out = ev.AppendJSON(out[:0]) }
	cases := []struct {
		name    string
		produce func(*event.Event)
		consume func(event.Event)
	}{
		{"bare", nil, nil},
		{"slow-producer", spin(400), encode},
		{"slow-consumer", nil, func(ev event.Event) { encode(ev); sink += work(400) }},
	}
	const n = 20000
	for _, c := range cases {
		if c.produce != nil || c.consume != nil {
			// the same work on one goroutine, no hand-off
			b.Run(c.name+"/serial", func(b *testing.B) {
				defer reportUsage(b, func() int { return b.N * n })()
				ev := event.Event{Type: event.TypeChatDelta, SessionID: "bench", Text: "hello"}
				for b.Loop() {
					for i := 0; i < n; i++ {
						if c.produce != nil {
							c.produce(&ev)
						}
						c.consume(ev)
					}
				}
			})
		}
		b.Run(c.name+"/emit", func(b *testing.B) { benchStream(b, n, c.produce, c.consume, emitEach, 0) })
		b.Run(c.name+"/queue-flush"+strconv.Itoa(230), func(b *testing.B) { benchStream(b, n, c.produce, c.consume, queueEach, 230) })
	}
}
