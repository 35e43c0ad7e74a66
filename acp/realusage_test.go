package acp_test

import (
	"testing"

	"github.com/chirality/harness/event"
)

// checkTurnUsage: a turn of a real agent on the fake API (10 input and 5
// output tokens a call) reports its tokens in usage:update.
func checkTurnUsage(t *testing.T, agent string, evs []event.Event) {
	t.Helper()
	var in, out int64
	n := 0
	for _, e := range evs {
		if e.Type == event.TypeUsageUpdate {
			n++
			in += e.Usage.InputTokens + e.Usage.CacheReadTokens + e.Usage.CacheWriteTokens
			out += e.Usage.OutputTokens
		}
	}
	// Each call to the fake uses 10 in, 5 out: k calls, k ≥ 1.
	if n != 1 || in < 10 || in%10 != 0 || out != in/2 {
		t.Errorf("%s: %d usage:update summing to %d in, %d out; want one with the fake's 10 in, 5 out per call", agent, n, in, out)
	}
}
