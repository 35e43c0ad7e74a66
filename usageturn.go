package harness

import (
	"encoding/json"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/usage"
)

// turnUsage is what a turn's usage:update events added up to so far: the
// core's one place where the engines' running totals become deltas and
// unpriced tokens get a price.
type turnUsage struct {
	seen  bool
	model string // the turn's model, from session:init
	sum   event.UsageUpdate
}

// normalize turns an engine's usage:update into the stored form: a
// delta (ScopeCall) with engine, model and cost. ok is false when it adds
// nothing.
func (tu *turnUsage) normalize(u event.UsageUpdate, engineName string) (event.UsageUpdate, bool) {
	tu.seen = true
	if u.Engine == "" {
		u.Engine = engineName
	}
	if u.Model == "" {
		u.Model = tu.model
	}
	if !u.HasCost {
		u.CostUSD = usage.Cost(u.Model, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
		u.CostEstimated = true
	}
	if u.Scope == event.ScopeTurn {
		// Running totals: what they add to what the turn reported.
		u.InputTokens -= tu.sum.InputTokens
		u.OutputTokens -= tu.sum.OutputTokens
		u.CacheReadTokens -= tu.sum.CacheReadTokens
		u.CacheWriteTokens -= tu.sum.CacheWriteTokens
		u.CostUSD -= tu.sum.CostUSD
	}
	u.Scope, u.HasCost = "", false
	if u.InputTokens == 0 && u.OutputTokens == 0 && u.CacheReadTokens == 0 && u.CacheWriteTokens == 0 && u.CostUSD == 0 {
		return u, false
	}
	tu.sum.InputTokens += u.InputTokens
	tu.sum.OutputTokens += u.OutputTokens
	tu.sum.CacheReadTokens += u.CacheReadTokens
	tu.sum.CacheWriteTokens += u.CacheWriteTokens
	tu.sum.CostUSD += u.CostUSD
	return u, true
}

// fromComplete is the usage:update of a turn whose engine sent none: the
// usage object and cost of its session:complete (or a failed turn's
// cost), in any of the engines' spellings.
func (tu *turnUsage) fromComplete(raw json.RawMessage, cost float64) event.UsageUpdate {
	t := usage.FromUsageObject(raw, cost)
	return event.UsageUpdate{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, CacheReadTokens: t.CacheReadTokens,
		CacheWriteTokens: t.CacheWriteTokens, CostUSD: cost, HasCost: cost > 0, Scope: event.ScopeTurn}
}

// usageEvent is ev (a usage:update from the engine) in its stored form;
// ok is false when it adds nothing and is dropped.
func (r *runner) usageEvent(ev event.Event) (event.Event, bool) {
	if ev.Usage == nil {
		return ev, false
	}
	u, ok := r.usage.normalize(*ev.Usage, r.eng.Name())
	ev.Usage = &u
	return ev, ok
}

// completeUsage emits, before a turn's end, the usage:update its engine
// did not send: from its session:complete's usage and cost.
func (r *runner) completeUsage(raw json.RawMessage, cost float64) {
	if r.usage.seen {
		return
	}
	if u, ok := r.usage.normalize(r.usage.fromComplete(raw, cost), r.eng.Name()); ok {
		r.emit(event.Event{Type: event.TypeUsageUpdate, Usage: &u})
	}
}

// checkBudget interrupts the turn when what it spent so far crosses a
// budget: at the end of the model call that crossed it, before the next.
func (r *runner) checkBudget() {
	if b := r.budget.spend(r.usage.sum); b != nil {
		r.log.Warn().Str("sessionId", r.s.ID).Str("scope", b.Scope).Float64("spentUsd", b.Spent.CostUSD).
			Float64("maxCostUsd", b.Budget.MaxCostUSD).Int64("maxTokens", b.Budget.MaxTokens).Msg("budget exceeded: the turn is interrupted")
		go r.lt.interrupt() // not on the reading goroutine: an engine's Interrupt may wait for it
	}
}

// rateLimitEvent names the engine of a rate_limit that does not.
func (r *runner) rateLimitEvent(ev event.Event) event.Event {
	if ev.RateLimit != nil && ev.RateLimit.Engine == "" {
		rl := *ev.RateLimit
		rl.Engine = r.eng.Name()
		ev.RateLimit = &rl
	}
	return ev
}
