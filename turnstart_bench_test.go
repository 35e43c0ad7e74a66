package harness

import (
	"context"
	"os"
	"path/filepath"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/engines"
)

// startStub is a stand-in claude for measuring what a turn's start costs
// the harness's process: it waits for the user message, says init and a
// result, and exits when stdin closes (sh's own cost is the child's, not
// the harness's).
const startStub = `#!/bin/sh
read line
echo '{"type":"system","subtype":"init","session_id":"00000000-0000-4000-8000-000000000001","model":"bench","tools":["Read"],"cwd":".","permissionMode":"dontAsk","claude_code_version":"2.1.329"}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"00000000-0000-4000-8000-000000000001","total_cost_usd":0.0001,"usage":{"input_tokens":1,"output_tokens":1},"num_turns":1,"duration_ms":1}'
cat >/dev/null
`

// processCost is what this process spent: CPU time (children excluded),
// time goroutines waited on sync.Mutex and RWMutex, GC cycles.
type processCost struct {
	cpu, mutexWait time.Duration
	gcs            uint64
}

func costNow() processCost {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	m := []metrics.Sample{{Name: "/sync/mutex/wait/total:seconds"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(m)
	return processCost{
		cpu:       time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		mutexWait: time.Duration(m[0].Value.Float64() * 1e9),
		gcs:       m[1].Value.Uint64(),
	}
}

// BenchmarkTurnStart measures the first turns of new sessions of one
// project, `at` of them started at once (as gatewayload's 50 sessions
// do), on the claudecode engine with a shell stand-in: per turn, the
// allocations (-benchmem), this process's CPU, the summed time goroutines
// waited on mutexes, and GC cycles. These move little with the machine's
// load; ns/op (a batch of `at` turns, start to process:exit) does.
func BenchmarkTurnStart(b *testing.B) {
	for _, at := range []int{1, 50} {
		b.Run(map[int]string{1: "one", 50: "50atOnce"}[at], func(b *testing.B) { benchTurnStart(b, at) })
	}
}

func benchTurnStart(b *testing.B, at int) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	stub := filepath.Join(b.TempDir(), "claude")
	if err := os.WriteFile(stub, []byte(startStub), 0o755); err != nil {
		b.Fatal(err)
	}
	h, err := New(Config{Roots: []string{root}, StateDir: b.TempDir(),
		Engines: engines.Builtin(engines.Config{ClaudeBinary: stub})})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	b.ReportAllocs()
	b.ResetTimer()
	var cost processCost
	for range b.N {
		// New sessions each time, the old ones deleted: the project keeps
		// `at` sessions, as gatewayload's does.
		b.StopTimer()
		ids := make([]string, at)
		for i := range ids {
			s, err := h.NewSession(SessionSpec{ProjectRoot: root, Mode: "workbench"})
			if err != nil {
				b.Fatal(err)
			}
			ids[i] = s.ID
		}
		b.StartTimer()
		c0 := costNow()
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Go(func() {
				tr, err := h.StartTurn(context.Background(), TurnRequest{SessionID: id, Message: "go"})
				if err != nil {
					b.Error(err)
					return
				}
				<-tr.Done()
			})
		}
		wg.Wait()
		c1 := costNow()
		b.StopTimer()
		cost.cpu += c1.cpu - c0.cpu
		cost.mutexWait += c1.mutexWait - c0.mutexWait
		cost.gcs += c1.gcs - c0.gcs
		for _, id := range ids {
			if err := h.DeleteSession(context.Background(), id); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	c0, c1 := processCost{}, cost
	turns := float64(b.N * at)
	b.ReportMetric(float64((c1.cpu-c0.cpu).Microseconds())/turns, "cpu-µs/turn")
	b.ReportMetric(float64((c1.mutexWait-c0.mutexWait).Microseconds())/turns, "lockwait-µs/turn")
	b.ReportMetric(float64(c1.gcs-c0.gcs)/turns, "gc/turn")
}
