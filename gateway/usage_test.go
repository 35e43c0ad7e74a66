package gateway

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/usage"
)

// usageOf is the sum of the usage:update events of a turn's events.
func usageOf(evs []sseEvent) usage.Totals {
	var t usage.Totals
	for _, e := range evs {
		if u := e.Event.Usage; e.Event.Type == event.TypeUsageUpdate && u != nil {
			t.CostUSD += u.CostUSD
			t.InputTokens += u.InputTokens
			t.OutputTokens += u.OutputTokens
			t.CacheReadTokens += u.CacheReadTokens
			t.CacheWriteTokens += u.CacheWriteTokens
		}
		if e.Event.Type == event.TypeSessionComplete || e.Event.Type == event.TypeSessionError {
			t.Turns++
		}
	}
	return t
}

func sameTotals(t *testing.T, what string, got, want usage.Totals) {
	t.Helper()
	if math.Abs(got.CostUSD-want.CostUSD) > 0.01*want.CostUSD || got.InputTokens != want.InputTokens || got.OutputTokens != want.OutputTokens ||
		got.CacheReadTokens != want.CacheReadTokens || got.CacheWriteTokens != want.CacheWriteTokens || got.Turns != want.Turns {
		t.Errorf("%s: %+v, the turns' events sum to %+v", what, got, want)
	}
}

// TestUsageThroughTheGateway: turns on Claude Code and Codex (fake
// models) report their usage as usage:update; GET /usage adds them up by
// engine, day and session within 1% of what the events say, the
// session's own total is on GET /session/{id}, and Codex's rate limits
// reach rateLimits.
func TestUsageThroughTheGateway(t *testing.T) {
	bin, err := filepath.Abs("../node_modules/.bin/codex")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the pinned codex is missing (make cli): %v", err)
	}
	t.Setenv("HARNESS_CODEX_BIN", bin)
	fake, err := codextest.NewFakeAPI(codextest.Reply{Text: "hello from codex", InputTokens: 300, OutputTokens: 20})
	if err != nil {
		t.Fatal(err)
	}
	fake.SetHeaders(map[string]string{"x-codex-primary-used-percent": "61", "x-codex-primary-window-minutes": "300", "x-codex-primary-reset-at": "1900000000"})
	defer fake.Close()
	codexHome := filepath.Join(t.TempDir(), "codex")
	if _, err := fake.WriteConfig(codexHome); err != nil {
		t.Fatal(err)
	}
	s := newServerWith(t, func(c *harness.Config) { c.ChildEnv = append(c.ChildEnv, "CODEX_HOME="+codexHome) }, nil)
	s.api.SetResponder(func(*claudetest.Request) claudetest.Reply {
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("hi")}, InputTokens: 1000, OutputTokens: 40}
	})

	_, out := s.createJSON(map[string]any{})
	claudeID := sessionID(t, out)
	_, out = s.createJSON(map[string]any{"engine": "codex"})
	codexID := sessionID(t, out)

	claude := usageOf(s.turnSSE(claudeID, "one"))
	two := usageOf(s.turnSSE(claudeID, "two"))
	codex := usageOf(s.turnSSE(codexID, "three"))
	if claude.InputTokens < 1000 || claude.OutputTokens < 40 || claude.CostUSD <= 0 || two.InputTokens < 1000 {
		t.Fatalf("claude turns' usage:update %+v, %+v: want at least the fake's 1000 in, 40 out, priced", claude, two)
	}
	if codex.InputTokens+codex.CacheReadTokens != 300 || codex.OutputTokens != 20 || codex.CostUSD <= 0 {
		t.Fatalf("codex turn's usage:update %+v: want the fake's 300 in, 20 out, priced", codex)
	}
	claude.Add(two)

	get := func(q string) usage.Report {
		t.Helper()
		code, body := s.do("GET", "/api/harness/usage"+q, "")
		if code != 200 {
			t.Fatalf("GET /usage%s: %d %s", q, code, body)
		}
		var rep usage.Report
		if err := json.Unmarshal([]byte(body), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	all := claude
	all.Add(codex)
	rep := get("?by=engine")
	sameTotals(t, "total", rep.Total, all)
	groups := map[string]usage.Totals{}
	for _, g := range rep.Groups {
		groups[g.Key] = g.Totals
	}
	if len(groups) != 2 {
		t.Errorf("by engine: %+v, want claude-code and codex", rep.Groups)
	}
	sameTotals(t, "claude-code", groups["claude-code"], claude)
	sameTotals(t, "codex", groups["codex"], codex)
	if len(rep.RateLimits) != 1 || rep.RateLimits[0].Engine != "codex" || rep.RateLimits[0].Limit != "primary" ||
		rep.RateLimits[0].UsedPercent != 61 || rep.RateLimits[0].ResetsAt != 1900000000 {
		t.Errorf("rate limits %+v, want codex's primary at 61%%", rep.RateLimits)
	}

	day := get("?by=day&projectRoot=" + s.root)
	today := time.Now().UTC().Format(time.DateOnly)
	if len(day.Groups) != 1 || day.Groups[0].Key != today {
		t.Errorf("by day: %+v, want one day, %s", day.Groups, today)
	} else {
		sameTotals(t, "today", day.Groups[0].Totals, all)
	}
	if later := get("?since=" + time.Now().Add(2*time.Hour).UTC().Format(time.RFC3339)); later.Total.Turns != 0 {
		t.Errorf("since in two hours: %+v", later.Total)
	}

	code, body := s.do("GET", "/api/harness/session/"+codexID, "")
	var env struct {
		Usage usage.Totals `json:"usage"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &env) != nil {
		t.Fatalf("GET session: %d %s", code, body)
	}
	sameTotals(t, "the codex session's usage", env.Usage, codex)

	for _, q := range []string{"?by=week", "?since=yesterday"} {
		if code, body := s.do("GET", "/api/harness/usage"+q, ""); code != 400 {
			t.Errorf("GET /usage%s: %d %s, want 400", q, code, body)
		}
	}
}
