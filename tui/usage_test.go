package tui

import (
	"strings"
	"testing"
)

// The status line shows what the session spent (the sum of its usage
// events) and the most used rate limit with its reset time.
func TestStatusLineUsage(t *testing.T) {
	m := scripted(100, 20)
	if got := plain(m.statusLine()); strings.Contains(got, "$") {
		t.Fatalf("spend shown before any usage: %q", got)
	}
	five, week := 83.0, 20.0
	m.Update(EventMsg{Type: "usage", Timestamp: 1, CostUSD: 0.01, Tokens: 100})
	m.Update(EventMsg{Type: "usage", Timestamp: 2, CostUSD: 0.0023, Tokens: 50})
	m.Update(EventMsg{Type: "rate_limit", Timestamp: 3, Limit: "seven_day", UsedPercent: &week})
	m.Update(EventMsg{Type: "rate_limit", Timestamp: 4, Limit: "five_hour", UsedPercent: &five, ResetsAt: 1900000000})
	got := plain(m.statusLine())
	if !strings.Contains(got, "$0.0123") || !strings.Contains(got, "five_hour 83% (resets ") || strings.Contains(got, "seven_day") {
		t.Errorf("status line %q: want $0.0123 and five_hour 83%% with its reset", got)
	}
	// A later reading of a limit replaces the earlier one.
	low := 10.0
	m.Update(EventMsg{Type: "rate_limit", Timestamp: 5, Limit: "five_hour", UsedPercent: &low})
	if got := plain(m.statusLine()); !strings.Contains(got, "seven_day 20%") {
		t.Errorf("after five_hour fell to 10%%: %q", got)
	}
	for _, b := range []string{`{"type":"rate_limit","timestamp":1,"limit":"x"}`, `{"type":"rate_limit","timestamp":1,"usedPercent":3}`} {
		if _, err := DecodeEvent([]byte(b)); err == nil {
			t.Errorf("%s decoded", b)
		}
	}
	if _, err := DecodeEvent([]byte(`{"type":"usage","timestamp":1,"costUsd":0.5,"tokens":9}`)); err != nil {
		t.Errorf("usage: %v", err)
	}
}
