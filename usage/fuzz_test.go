package usage_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chirality/harness/usage"
)

// FuzzIndexLog: any log content (what an agent could write into its
// project's event log) is read without a panic, read again to the same
// totals, and a report of it is consistent (the groups add up to the
// total).
func FuzzIndexLog(f *testing.F) {
	f.Add([]byte(`{"type":"session:init","engine":"codex","model":"gpt-5","timestamp":1790000000000}
{"type":"usage:update","engine":"codex","model":"gpt-5","inputTokens":10,"outputTokens":5,"cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":0.1,"timestamp":1790000000000}
{"type":"session:complete","costUsd":0,"usage":{},"timestamp":1790000000000}
`))
	f.Add([]byte(`{"type":"session:complete","costUsd":2,"usage":{"input_tokens":4,"inputTokens":3}}
{"type":"rate_limit","engine":"claude-code","limit":"five_hour","usedPercent":-1,"resetsAt":5}
{"type":"usage:update","inputTokens":"x"}
{"type":"session:error","costUsd":1e308}
not json
{"type":"usage:update","costUsd":1e308}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		dir := filepath.Join(root, sessionsDir)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "s.events.jsonl"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		roots := []string{root}
		ix := usage.NewIndex()
		ix.Update(usage.Logs(roots, sessionsDir))
		a := ix.Report(roots, usage.Query{By: usage.ByDay})
		ix2 := usage.NewIndex()
		ix2.Update(usage.Logs(roots, sessionsDir))
		b := ix2.Report(roots, usage.Query{By: usage.ByDay})
		if a.Total != b.Total && a.Total == a.Total { // NaN-free totals read twice agree
			t.Fatalf("read twice: %+v then %+v", a.Total, b.Total)
		}
		var sum usage.Totals
		for _, g := range a.Groups {
			sum.Add(g.Totals)
		}
		if sum.Turns != a.Total.Turns || sum.InputTokens != a.Total.InputTokens {
			t.Fatalf("groups add up to %+v, total %+v", sum, a.Total)
		}
	})
}
