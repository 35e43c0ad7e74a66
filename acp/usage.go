package acp

import (
	"encoding/json"

	"github.com/chirality/harness/event"
)

// turnUsage is the usage:update of a turn from its PromptResponse's
// usage (the turn's totals, ScopeTurn). The cost an agent reports in
// usage_update is left out: claude-agent-acp's is the session's running
// total, which a resumed session carries over, so the core prices the
// tokens instead. ok is false when the agent reported no tokens.
func turnUsage(raw json.RawMessage) (*event.UsageUpdate, bool) {
	var w struct {
		In         int64 `json:"inputTokens"`
		Out        int64 `json:"outputTokens"`
		CacheRead  int64 `json:"cachedReadTokens"`
		CacheWrite int64 `json:"cachedWriteTokens"`
	}
	if json.Unmarshal(raw, &w) != nil || w.In+w.Out+w.CacheRead+w.CacheWrite == 0 {
		return nil, false
	}
	return &event.UsageUpdate{InputTokens: w.In, OutputTokens: w.Out, CacheReadTokens: w.CacheRead,
		CacheWriteTokens: w.CacheWrite, Scope: event.ScopeTurn}, true
}
