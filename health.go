package harness

import (
	"context"

	"github.com/chirality/harness/engine"
)

// Health is how the Harness is: every engine it offers, whether it can
// run here and why not, and whether the default engine (the one a
// session naming none gets) can.
type Health struct {
	// OK is true when the default engine is available.
	OK bool `json:"ok" doc:"true when the default engine is available"`
	// ClaudeVersion is the Claude Code CLI's version when the
	// claude-code engine is available ("" otherwise).
	ClaudeVersion string `json:"claudeVersion" doc:"the Claude Code CLI version when the claude-code engine is available, else empty"`
	// Error says why the default engine is not available (OK false).
	Error string `json:"error,omitempty" doc:"why the default engine is not available"`
	// DefaultEngine is the name of the default engine.
	DefaultEngine string `json:"defaultEngine" doc:"the engine of sessions that name none" oa:"optional"`
	// Engines is Engines: each engine's status, in the Harness's order.
	Engines []engine.Status `json:"engines" doc:"every engine the server offers, whether it can run here and why not" oa:"optional"`
}

// Health checks every engine (concurrently, bounded by ctx) and reports
// the Harness healthy when its default engine is available: a server of
// the native engine is healthy without a Claude CLI.
func (h *Harness) Health(ctx context.Context) Health {
	out := Health{DefaultEngine: h.cfg.DefaultEngine, Engines: h.Engines(ctx)}
	for _, st := range out.Engines {
		if st.Name == engine.ClaudeCode && st.Available {
			out.ClaudeVersion = st.Version
		}
		if st.Name == out.DefaultEngine {
			out.OK = st.Available
			if !st.Available {
				out.Error = st.Name + ": " + st.Reason
			}
		}
	}
	return out
}
