package usage_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/usage"
)

const sessionsDir = ".chirality/sessions"

// writeLog appends the events' wire lines to session id's log in root.
func writeLog(t testing.TB, root, id string, evs ...event.Event) {
	t.Helper()
	dir := filepath.Join(root, sessionsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, id+".events.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b []byte
	for _, e := range evs {
		b = append(e.AppendJSON(b), '\n')
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

var day1 = time.Date(2026, 11, 20, 10, 30, 0, 0, time.UTC).UnixMilli()
var day2 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC).UnixMilli()

func turn(engine, model string, at int64, calls ...event.UsageUpdate) []event.Event {
	evs := []event.Event{{Type: event.TypeUserMessage, Text: "hi", Time: at},
		{Type: event.TypeSessionInit, Init: &event.SessionInit{Engine: engine, Model: model}, Time: at}}
	for i := range calls {
		c := calls[i]
		evs = append(evs, event.Event{Type: event.TypeUsageUpdate, Usage: &c, Time: at})
	}
	return append(evs, event.Event{Type: event.TypeSessionComplete, Complete: &event.SessionComplete{CostUSD: 99}, Time: at},
		event.Event{Type: event.TypeProcessExit, Exit: &event.ProcessExit{}, Time: at})
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9+1e-9*math.Abs(b) }

// TestIndexTotals: the report adds up the usage:update events of every
// session, grouped by session, engine, model and day; since leaves out
// earlier days; a log that grows is read from where it was left; a turn
// of a log from before usage:update counts its session:complete.
func TestIndexTotals(t *testing.T) {
	root := t.TempDir()
	writeLog(t, root, "a", turn("codex", "gpt-5", day1,
		event.UsageUpdate{Engine: "codex", Model: "gpt-5", InputTokens: 100, OutputTokens: 10, CostUSD: 0.5},
		event.UsageUpdate{Engine: "codex", Model: "gpt-5", InputTokens: 50, CacheReadTokens: 7, OutputTokens: 5, CostUSD: 0.25})...)
	writeLog(t, root, "b", turn("", "claude-sonnet-5-5", day2,
		event.UsageUpdate{Engine: "claude-code", Model: "claude-sonnet-5-5", InputTokens: 1, OutputTokens: 2, CacheWriteTokens: 3, CostUSD: 1})...)
	// An old log: no usage:update, the turn's own figures.
	writeLog(t, root, "old", event.Event{Type: event.TypeSessionInit, Init: &event.SessionInit{Engine: "native", Model: "claude-haiku-5-5"}, Time: day2},
		event.Event{Type: event.TypeSessionComplete, Complete: &event.SessionComplete{CostUSD: 2, Usage: []byte(`{"input_tokens":4,"output_tokens":6}`)}, Time: day2})

	ix := usage.NewIndex()
	logs := usage.Logs([]string{root}, sessionsDir)
	if len(logs) != 3 {
		t.Fatalf("%d logs, want 3", len(logs))
	}
	ix.Update(logs)
	rep := ix.Report(nil, usage.Query{By: usage.ByEngine})
	want := usage.Totals{CostUSD: 3.75, InputTokens: 155, OutputTokens: 23, CacheReadTokens: 7, CacheWriteTokens: 3, Turns: 3}
	if !near(rep.Total.CostUSD, want.CostUSD) || rep.Total.InputTokens != want.InputTokens || rep.Total.OutputTokens != want.OutputTokens ||
		rep.Total.CacheReadTokens != 7 || rep.Total.CacheWriteTokens != 3 || rep.Total.Turns != 3 {
		t.Errorf("total %+v, want %+v", rep.Total, want)
	}
	got := map[string]usage.Totals{}
	for _, g := range rep.Groups {
		got[g.Key] = g.Totals
	}
	if len(got) != 3 || !near(got["codex"].CostUSD, 0.75) || got["codex"].Turns != 1 || !near(got["claude-code"].CostUSD, 1) || !near(got["native"].CostUSD, 2) {
		t.Errorf("by engine %+v", rep.Groups)
	}
	if rep.Groups[0].Key != "native" {
		t.Errorf("groups not largest cost first: %+v", rep.Groups)
	}
	byDay := ix.Report(nil, usage.Query{By: usage.ByDay})
	if len(byDay.Groups) != 2 || byDay.Groups[0].Key != "2026-11-20" || !near(byDay.Groups[0].CostUSD, 0.75) ||
		byDay.Groups[1].Key != "2026-11-21" || !near(byDay.Groups[1].CostUSD, 3) {
		t.Errorf("by day %+v", byDay.Groups)
	}
	since := ix.Report(nil, usage.Query{Since: time.UnixMilli(day2)})
	if !near(since.Total.CostUSD, 3) || since.Total.Turns != 2 || len(since.Groups) != 0 {
		t.Errorf("since day 2: %+v", since)
	}
	one := ix.Report(nil, usage.Query{SessionID: "a"})
	if !near(one.Total.CostUSD, 0.75) || one.Total.Turns != 1 {
		t.Errorf("session a: %+v", one.Total)
	}

	// The log grows, a torn line last: the new whole lines count, the
	// torn one when it is whole.
	writeLog(t, root, "a", turn("codex", "gpt-5", day2, event.UsageUpdate{Engine: "codex", Model: "gpt-5", InputTokens: 1000, CostUSD: 10})...)
	path := filepath.Join(root, sessionsDir, "a.events.jsonl")
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	torn := string(event.Event{Type: event.TypeUsageUpdate, Usage: &event.UsageUpdate{InputTokens: 1, CostUSD: 100}}.AppendJSON(nil))
	fmt.Fprint(f, torn[:20])
	ix.Update(logs)
	if one = ix.Report(nil, usage.Query{SessionID: "a"}); !near(one.Total.CostUSD, 10.75) || one.Total.Turns != 2 {
		t.Errorf("session a grown: %+v", one.Total)
	}
	fmt.Fprint(f, torn[20:]+"\n")
	f.Close()
	ix.Update(logs)
	if one = ix.Report(nil, usage.Query{SessionID: "a"}); !near(one.Total.CostUSD, 110.75) {
		t.Errorf("session a after the torn line was completed: %+v", one.Total)
	}

	// Saved and loaded, the index answers the same; roots filter.
	file := filepath.Join(t.TempDir(), "usage-index.json")
	if err := ix.Save(file); err != nil {
		t.Fatal(err)
	}
	ix2 := usage.Load(file)
	if r := ix2.Report([]string{root}, usage.Query{}); !near(r.Total.CostUSD, 113.75) {
		t.Errorf("loaded index total %+v", r.Total)
	}
	if r := ix2.Report([]string{"/elsewhere"}, usage.Query{}); r.Total.Turns != 0 {
		t.Errorf("another root's report %+v", r.Total)
	}
	// A deleted session is forgotten.
	os.Remove(filepath.Join(root, sessionsDir, "b.events.jsonl"))
	logs = usage.Logs([]string{root}, sessionsDir)
	ix2.Forget([]string{root}, logs)
	if r := ix2.Report(nil, usage.Query{By: usage.BySession}); len(r.Groups) != 2 {
		t.Errorf("after deleting b: %+v", r.Groups)
	}
}

// TestIndexRateLimits: the latest state of each limit is reported.
func TestIndexRateLimits(t *testing.T) {
	root := t.TempDir()
	writeLog(t, root, "a",
		event.Event{Type: event.TypeRateLimit, RateLimit: &event.RateLimit{Engine: "codex", Limit: "primary", UsedPercent: 10}, Time: day1},
		event.Event{Type: event.TypeRateLimit, RateLimit: &event.RateLimit{Engine: "codex", Limit: "primary", UsedPercent: 40, ResetsAt: 5}, Time: day2})
	writeLog(t, root, "b",
		event.Event{Type: event.TypeRateLimit, RateLimit: &event.RateLimit{Engine: "claude-code", Limit: "five_hour", UsedPercent: 80}, Time: day1})
	ix := usage.NewIndex()
	ix.Update(usage.Logs([]string{root}, sessionsDir))
	rep := ix.Report(nil, usage.Query{})
	if len(rep.RateLimits) != 2 || rep.RateLimits[0].Limit != "primary" || rep.RateLimits[0].UsedPercent != 40 || rep.RateLimits[1].UsedPercent != 80 {
		t.Errorf("rate limits %+v", rep.RateLimits)
	}
}

// BenchmarkReport2000x50 measures GET /usage's work over 2,000 sessions of
// 50 turns (3 model calls a turn): the first read of every log (cold),
// a report after a restart (the saved index loaded, every log checked),
// and a report when one log grew (warm: the steady state of a server).
func BenchmarkReport2000x50(b *testing.B) {
	root := b.TempDir()
	var sb strings.Builder
	for s := 0; s < 2000; s++ {
		sb.Reset()
		for turnN := 0; turnN < 50; turnN++ {
			at := day1 + int64(s*50+turnN)*60_000
			for _, e := range turn("codex", "gpt-5", at,
				event.UsageUpdate{Engine: "codex", Model: "gpt-5", InputTokens: 100, OutputTokens: 10, CostUSD: 0.01},
				event.UsageUpdate{Engine: "codex", Model: "gpt-5", InputTokens: 100, OutputTokens: 10, CostUSD: 0.01},
				event.UsageUpdate{Engine: "codex", Model: "gpt-5", InputTokens: 100, OutputTokens: 10, CostUSD: 0.01}) {
				sb.Write(e.AppendJSON(nil))
				sb.WriteByte('\n')
				if e.Type == event.TypeSessionInit {
					// the text of a turn, which the index skips
					for k := 0; k < 20; k++ {
						sb.WriteString(`{"type":"chat:delta","sessionId":"x","text":"some streamed words of an answer"}` + "\n")
					}
				}
			}
		}
		dir := filepath.Join(root, sessionsDir)
		_ = os.MkdirAll(dir, 0o700)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%04d.events.jsonl", s)), []byte(sb.String()), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	roots := []string{root}
	b.Run("cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ix := usage.NewIndex()
			ix.Update(usage.Logs(roots, sessionsDir))
			if r := ix.Report(roots, usage.Query{By: usage.ByDay}); r.Total.Turns != 100_000 {
				b.Fatalf("turns %d", r.Total.Turns)
			}
		}
	})
	ix := usage.NewIndex()
	ix.Update(usage.Logs(roots, sessionsDir))
	grow := filepath.Join(root, sessionsDir, "s0000.events.jsonl")
	line := event.Event{Type: event.TypeUsageUpdate, Usage: &event.UsageUpdate{InputTokens: 1}, Time: day2}.AppendJSON(nil)
	file := filepath.Join(b.TempDir(), "usage-index.json")
	if err := ix.Save(file); err != nil {
		b.Fatal(err)
	}
	b.Run("restart", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ix := usage.Load(file)
			ix.Update(usage.Logs(roots, sessionsDir))
			if r := ix.Report(roots, usage.Query{By: usage.ByDay}); r.Total.Turns != 100_000 {
				b.Fatalf("turns %d", r.Total.Turns)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			f, _ := os.OpenFile(grow, os.O_APPEND|os.O_WRONLY, 0)
			_, _ = f.Write(append(line, '\n'))
			f.Close()
			ix.Update(usage.Logs(roots, sessionsDir))
			if r := ix.Report(roots, usage.Query{By: usage.ByDay}); r.Total.Turns != 100_000 {
				b.Fatalf("turns %d", r.Total.Turns)
			}
		}
	})
}
