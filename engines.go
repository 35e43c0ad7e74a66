package harness

import "github.com/chirality/harness/engine"

// builtinEngines are the engines every Harness offers beside Claude Code.
func builtinEngines(c *Config) []engine.Engine {
	return nil
}
