package codex_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// BenchmarkFirstDelta: from StartTurn to the first chat:delta, real codex
// (a new child per turn) on the loopback fake.
func BenchmarkFirstDelta(b *testing.B) {
	g := newRig(b)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		g.fake.Script(codextest.Reply{Text: "hello there", Deltas: 2})
		start := time.Now()
		tr, err := g.eng.StartTurn(context.Background(), engine.Request{SessionKey: "b", Message: "hi", Cwd: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		got := false
		for tr.Next() {
			if !got && tr.Event().Type == event.TypeChatDelta {
				total += time.Since(start)
				got = true
			}
		}
		_ = tr.Close()
		if !got {
			b.Fatal("no delta")
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/first-delta")
}

func cpu(who int) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCPUPer1000Deltas: one turn streaming 1,000 deltas; the
// harness's CPU (this process, the fake API included, so an upper bound)
// beside the agent's own (the reaped children).
func BenchmarkCPUPer1000Deltas(b *testing.B) {
	g := newRig(b)
	text := strings.Repeat("tok ", 1000)
	var self, kids time.Duration
	for i := 0; i < b.N; i++ {
		g.fake.Script(codextest.Reply{Text: text, Deltas: 1000})
		s0, k0 := cpu(syscall.RUSAGE_SELF), cpu(syscall.RUSAGE_CHILDREN)
		tr, err := g.eng.StartTurn(context.Background(), engine.Request{SessionKey: "b", Message: "hi", Cwd: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for tr.Next() {
			if tr.Event().Type == event.TypeChatDelta {
				n++
			}
		}
		_ = tr.Close()
		if n != 1000 {
			b.Fatalf("%d deltas", n)
		}
		self += cpu(syscall.RUSAGE_SELF) - s0
		kids += cpu(syscall.RUSAGE_CHILDREN) - k0
	}
	b.ReportMetric(float64(self.Microseconds())/1000/float64(b.N), "harness-ms/1000")
	b.ReportMetric(float64(kids.Microseconds())/1000/float64(b.N), "agent-ms/1000")
}
