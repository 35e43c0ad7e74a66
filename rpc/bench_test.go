package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engines"
)

// BenchmarkThreadList1000: thread.list over 1,000 stored threads (goal
// < 50 ms), including loading them at start.
func BenchmarkThreadList1000(b *testing.B) {
	cwd, _ := filepath.EvalSymlinks(b.TempDir())
	for i := range 1000 {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		dir := filepath.Join(cwd, ".harness", "threads", id)
		os.MkdirAll(dir, 0o700)
		m, _ := json.Marshal(meta{Thread: Thread{ThreadID: id, Title: "t", Directory: cwd, Time: threadTime{Created: int64(i), Updated: int64(i)}}})
		os.WriteFile(filepath.Join(dir, "meta.json"), m, 0o600)
	}
	h, err := harness.New(harness.Config{Roots: []string{cwd}, StateDir: b.TempDir(), NoProjectLogs: true, Engines: engines.Builtin(engines.Config{})})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	var lat []time.Duration
	for range b.N {
		t0 := time.Now()
		s, err := NewServer(h, io.Discard, Options{Cwd: cwd})
		if err != nil {
			b.Fatal(err)
		}
		s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"thread.list"}`))
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkThreadGet100k: thread.get of a 100,000-event thread stored
// before threads were stored in their session's log, streamed from disk
// (bytes allocated per op stay far below the history's size).
func BenchmarkThreadGet100k(b *testing.B) {
	cwd, _ := filepath.EvalSymlinks(b.TempDir())
	h, _ := harness.New(harness.Config{Roots: []string{cwd}, StateDir: b.TempDir(), NoProjectLogs: true, Engines: engines.Builtin(engines.Config{})})
	defer h.Shutdown(context.Background())
	s, _ := NewServer(h, io.Discard, Options{Cwd: cwd})
	res, _ := s.threadCreate(json.RawMessage(`{}`))
	f := res.(deferred)
	f.then()
	tid := f.result.(map[string]any)["thread"].(Thread).ThreadID
	t := s.threads[tid]
	t.meta.Store = "" // a thread stored before: a log of its notifications (a turn's render from the session's log)
	for range 100_000 {
		s.notify(t, "item.delta", map[string]any{"threadId": tid, "turnId": "turn_x", "itemId": "item_x", "kind": "text", "delta": strings.Repeat("w", 40)})
	}
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"thread.get","params":{"threadId":"` + tid + `"}}`)
	b.ResetTimer()
	for range b.N {
		s.Handle(context.Background(), line)
	}
}
