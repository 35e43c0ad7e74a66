package harness

import (
	"os"
	"strings"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/codex"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/native"
)

// builtinEngines are the engines every Harness offers beside Claude Code:
// the native loop (engine.Anthropic), with the key and base URL the
// children would get (Config.ChildEnv over Config.Env, else this
// process's environment), so `serve --demo` points it at the demo model
// too; Codex (package codex); and the ACP agents OpenCode, Claude over
// ACP and Copilot (package acp, acp.Builtin), whose children get the same
// filtered environment plus Config.ChildEnv.
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
	out := []engine.Engine{
		native.NewEngine(native.EngineConfig{
			APIKey: look("ANTHROPIC_API_KEY"), BaseURL: look("ANTHROPIC_BASE_URL"), Logger: c.Logger,
		}),
		// Codex keeps its own configuration ($CODEX_HOME/config.toml, its
		// provider and credentials): it gets the environment as it is.
		codex.NewEngine(codex.Config{Env: c.Env, AllowEnv: c.AllowEnv, Logger: c.Logger}),
	}
	for _, ac := range acp.Builtin() {
		ac.Env, ac.AllowEnv, ac.ExtraEnv, ac.Logger = c.Env, c.AllowEnv, c.ChildEnv, c.Logger
		if e, err := acp.NewEngine(ac); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// sessionCloser is an engine that keeps something per session (an ACP
// agent process; Codex's running turn): DeleteSession closes it.
type sessionCloser interface {
	Close(sessionKey string)
}
