package event

// Scopes of a UsageUpdate an engine emits (UsageUpdate.Scope). The core
// stores and publishes only ScopeCall: it turns ScopeTurn figures into
// what they add to the turn's earlier updates.
const (
	// ScopeCall: the figures are what one model call (or one part of the
	// turn) used, to be added to the rest.
	ScopeCall = "call"
	// ScopeTurn: the figures are the turn's running totals so far.
	ScopeTurn = "turn"
)

// UsageUpdate is the payload of usage:update: tokens and cost of a model
// call. Engine and Model say whose; CostEstimated is set when the engine
// did not say what it cost and the core priced the tokens from its
// table (package usage, dated).
type UsageUpdate struct {
	Engine           string  `json:"engine,omitempty"`
	Model            string  `json:"model,omitempty"`
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens"`
	CacheWriteTokens int64   `json:"cacheWriteTokens"`
	CostUSD          float64 `json:"costUsd"`
	CostEstimated    bool    `json:"costEstimated,omitempty"`
	// HasCost says the engine priced the call itself (CostUSD is its
	// figure, even 0); without it the core prices the tokens.
	HasCost bool `json:"-"`
	// Scope is ScopeCall (the default, "") or ScopeTurn; stored events
	// are always calls, so it is not on the wire.
	Scope string `json:"-"`
}

// Tokens is the update's token count, every kind together.
func (u *UsageUpdate) Tokens() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// RateLimit is the payload of rate_limit: the state of one account limit
// as the engine last learned it.
type RateLimit struct {
	Engine string `json:"engine,omitempty"`
	// Limit names the limit: the engine's own word (Claude's
	// five_hour, seven_day…; Codex's primary, secondary or its limit id).
	Limit string `json:"limit"`
	// UsedPercent is how much of it is used, 0-100, when known (-1 not).
	UsedPercent float64 `json:"usedPercent"`
	// Status is allowed, allowed_warning or rejected when the engine
	// says (Claude does), else empty.
	Status string `json:"status,omitempty"`
	// ResetsAt is when it resets, Unix seconds (0 unknown).
	ResetsAt int64 `json:"resetsAt,omitempty"`
	// WindowMinutes is the limit's window, when known.
	WindowMinutes int64 `json:"windowMinutes,omitempty"`
}

// BudgetInfo is what a session:error of kind budget_exceeded says: the
// budget's scope (session or project), its limits (0 = none) and what
// was spent when the turn crossed it.
type BudgetInfo struct {
	Scope        string  `json:"scope"`
	MaxCostUSD   float64 `json:"maxCostUsd,omitempty"`
	MaxTokens    int64   `json:"maxTokens,omitempty"`
	SpentCostUSD float64 `json:"spentCostUsd"`
	SpentTokens  int64   `json:"spentTokens"`
}
