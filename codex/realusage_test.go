package codex_test

import (
	"testing"

	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// TestUsageAndRateLimits: the pinned codex's token usage of each model
// call becomes a usage:update (cached input apart), and the rate-limit
// headers the API sends become rate_limit events.
func TestUsageAndRateLimits(t *testing.T) {
	g := newRig(t)
	g.fake.Script(codextest.Reply{Text: "hi", InputTokens: 120, OutputTokens: 7})
	g.fake.SetHeaders(map[string]string{
		"x-codex-primary-used-percent":     "42",
		"x-codex-primary-window-minutes":   "300",
		"x-codex-primary-reset-at":         "1900000000",
		"x-codex-secondary-used-percent":   "9",
		"x-codex-secondary-window-minutes": "10080",
		"x-codex-secondary-reset-at":       "1900500000",
	})
	r := g.turn(t, engine.Request{Message: "hello"}, nil)
	if r.err != nil {
		t.Fatalf("turn: %v (%v)", r.err, r.types())
	}
	var in, out int64
	for _, e := range r.find(event.TypeUsageUpdate) {
		in += e.Usage.InputTokens + e.Usage.CacheReadTokens
		out += e.Usage.OutputTokens
	}
	if in != 120 || out != 7 {
		t.Errorf("usage:update sums to %d in, %d out; the API reported 120, 7 (%v)", in, out, r.types())
	}
	limits := map[string]*event.RateLimit{}
	for _, e := range r.find(event.TypeRateLimit) {
		limits[e.RateLimit.Limit] = e.RateLimit
	}
	p := limits["primary"]
	if p == nil || p.UsedPercent != 42 || p.WindowMinutes != 300 || p.ResetsAt != 1900000000 {
		t.Errorf("primary rate limit %+v, want 42%% of 300 min resetting at 1900000000 (all: %v)", p, limits)
	}
	if s := limits["secondary"]; s == nil || s.UsedPercent != 9 {
		t.Errorf("secondary rate limit %+v, want 9%%", s)
	}
}
