package native

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/mcpconfig/mcptest"
)

// BenchmarkFirstDeltaMCP: a message → the first chat:delta with 0 and 3
// MCP servers (server-everything three times, started in parallel at the
// turn's start), and "start-only": the three servers' own start (connect,
// initialize, tools/list) through startMCP alone. The harness's share is
// servers=3 − servers=0 − start-only (BENCHMARKS.md); each turn's own
// "beyond-mcp-start" is its first delta less its startMCP time, measured
// in the same turn (less noisy than the difference of two runs).
func BenchmarkFirstDeltaMCP(b *testing.B) {
	three := mcptest.Config(mcptest.Everything(b, "a", nil), mcptest.Everything(b, "b", nil), mcptest.Everything(b, "c", nil))
	report := func(b *testing.B, lat []time.Duration) {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	for _, n := range []int{0, 3} {
		b.Run("servers="+strconv.Itoa(n), func(b *testing.B) {
			api, err := claudetest.NewFakeAPI()
			if err != nil {
				b.Fatal(err)
			}
			defer api.Close()
			api.SetResponder(func(*claudetest.Request) claudetest.Reply { return claudetest.TextReply("hello there, friend") })
			e := NewEngine(EngineConfig{APIKey: "k", BaseURL: api.URL, Options: []option.RequestOption{option.WithMaxRetries(0)}})
			defer e.Shutdown(context.Background())
			var cfg *mcpconfig.Config
			if n > 0 {
				cfg = three
			}
			cwd, state := b.TempDir(), b.TempDir()
			var lat, share []time.Duration
			var started time.Duration
			onMCPStarted = func(d time.Duration) { started = d }
			defer func() { onMCPStarted = nil }()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s", Message: "hi", Cwd: cwd, StateDir: state, MCP: cfg})
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
				share = append(share, first-started)
			}
			b.StopTimer()
			report(b, lat)
			slices.Sort(share)
			b.ReportMetric(float64(share[len(share)/2].Microseconds())/1000, "p50-beyond-mcp-start-ms")
		})
	}
	b.Run("start-only", func(b *testing.B) {
		req := engine.Request{Cwd: b.TempDir()}
		var lat []time.Duration
		for range b.N {
			t0 := time.Now()
			mc := startMCP(context.Background(), three, req)
			lat = append(lat, time.Since(t0))
			if len(mc.tools) == 0 {
				b.Fatal("no tools")
			}
			mc.close()
		}
		report(b, lat)
	})
}
