package engine

import (
	"fmt"
	"slices"
)

// EffortLevels are the values of Request.Effort besides "" (the engine's
// default): how hard the model thinks before it answers. Each engine maps
// them onto its agent's own setting, or ignores them where the agent has
// none (each engine's package doc says which):
//
//	claude-code  CLAUDE_CODE_EFFORT_LEVEL=<level> in the CLI's environment
//	codex        turn/start's effort (the model's reasoning effort)
//	anthropic    ignored: the native loop sends no thinking parameter
//	ACP agents   ignored: ACP has no effort setting
var EffortLevels = []string{"low", "medium", "high"}

// ErrInvalidEffort is returned by CheckEffort for a level other than ""
// and EffortLevels.
var ErrInvalidEffort = NewError(ErrInvalid, "invalid effort level (want low, medium or high)")

// CheckEffort returns nil when level is "" or one of EffortLevels, and an
// error wrapping ErrInvalidEffort otherwise.
func CheckEffort(level string) error {
	if level == "" || slices.Contains(EffortLevels, level) {
		return nil
	}
	return fmt.Errorf("%w: %q", ErrInvalidEffort, level)
}
