package harness

import (
	"encoding/json"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/usage"
)

// specEvent makes an engine's event 004's UIEvent of its type before the
// core stores it, so every door sends the contract's shape whatever the
// engine (spec 004 §1.3):
//
//   - session:init's tools is string[]: an engine that lists none (Codex,
//     the ACP agents) sends [], not null;
//   - session:complete's usage is a UsageInfo, input_tokens and
//     output_tokens numbers: an engine that spells its usage otherwise
//     (the ACP agents' camelCase inputTokens…, or none: {}) has it
//     rewritten as one, its counts kept (usage.FromUsageObject reads the
//     spellings). A usage that already has both is left as it is, extra
//     fields and all (Claude Code's, the native loop's, Codex's).
//
// ev's payloads are not changed in place (an engine may hold them).
func specEvent(ev event.Event) event.Event {
	switch {
	case ev.Type == event.TypeSessionInit && ev.Init != nil && ev.Init.Tools == nil:
		init := *ev.Init
		init.Tools = []string{}
		ev.Init = &init
	case ev.Type == event.TypeSessionComplete && ev.Complete != nil && !isUsageInfo(ev.Complete.Usage):
		c := *ev.Complete
		t := usage.FromUsageObject(c.Usage, c.CostUSD)
		c.Usage, _ = json.Marshal(usageInfo{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens,
			CacheReadInputTokens: t.CacheReadTokens, CacheCreationInputTokens: t.CacheWriteTokens})
		ev.Complete = &c
	}
	return ev
}

// usageInfo is 004's UsageInfo.
type usageInfo struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// isUsageInfo reports whether raw is an object whose input_tokens and
// output_tokens are numbers.
func isUsageInfo(raw json.RawMessage) bool {
	var u struct {
		In  *json.Number `json:"input_tokens"`
		Out *json.Number `json:"output_tokens"`
	}
	// Case-insensitive matching cannot confuse inputTokens with
	// input_tokens (the underscore differs).
	return json.Unmarshal(raw, &u) == nil && u.In != nil && u.Out != nil
}
