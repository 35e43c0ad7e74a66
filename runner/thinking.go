package runner

import (
	"errors"
	"fmt"

	"github.com/chirality/harness/engine"
)

// ErrInvalidThinking is returned by ThinkingEnv for a level other than
// "", low, medium or high.
var ErrInvalidThinking = errors.New("runner: invalid thinking level (want low, medium or high)")

// ThinkingEnv maps a thinking level (agents.yaml's thinking: low, medium,
// high; "" = the engine's default) to the environment entries that set
// it for engineName, to add to the ChildEnv of the agent's Harness: the
// engine seam (engine.Request) has no thinking field, so the level is a
// property of the agent's process, not of a turn.
//
//   - claude-code: CLAUDE_CODE_EFFORT_LEVEL=<level>, the CLI's effort
//     setting (verified on CLI 2.1.329 against the fake API: the request's
//     output_config.effort follows it).
//   - every other engine: not honoured (honoured == false): the native loop
//     sends no thinking parameter, and Codex and the ACP agents keep their
//     own configuration.
func ThinkingEnv(engineName, level string) (env []string, honoured bool, err error) {
	switch level {
	case "":
		return nil, true, nil
	case "low", "medium", "high":
	default:
		return nil, false, fmt.Errorf("%w: %q", ErrInvalidThinking, level)
	}
	if engineName == engine.ClaudeCode {
		return []string{"CLAUDE_CODE_EFFORT_LEVEL=" + level}, true, nil
	}
	return nil, false, nil
}
