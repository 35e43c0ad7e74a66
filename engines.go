package harness

import (
	"os"
	"strings"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/native"
)

// builtinEngines are the engines every Harness offers beside Claude Code:
// the native loop (engine.Anthropic), with the key and base URL the
// children would get (Config.ChildEnv over Config.Env, else this
// process's environment), so `serve --demo` points it at the demo model
// too.
func builtinEngines(c *Config) []engine.Engine {
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	look := func(name string) string {
		v := ""
		for _, list := range [][]string{env, c.ChildEnv} {
			for _, kv := range list {
				if k, val, ok := strings.Cut(kv, "="); ok && k == name {
					v = val
				}
			}
		}
		return v
	}
	return []engine.Engine{native.NewEngine(native.EngineConfig{
		APIKey: look("ANTHROPIC_API_KEY"), BaseURL: look("ANTHROPIC_BASE_URL"), Logger: c.Logger,
	})}
}
