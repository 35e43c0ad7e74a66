// Package engines builds the harness's built-in engines and knows their
// names. It is the one place that imports the concrete engines (Claude
// Code, the native loop, Codex, the ACP agents): a command builds them
// here and hands them to the core, which, like every door, only sees the
// seam (package engine).
//
//	all := engines.Builtin(engines.Config{ClaudeBinary: bin, Logger: &log})
//	file, err := engines.Load(path, cfg) // --engines FILE: more ACP agents
//	h, err := harness.New(harness.Config{Engines: append(all, file...), Aliases: engines.Aliases})
//
// The built-in engines, in the order they are offered:
//
//	claude-code  the Claude Code CLI (package claudecode); aliases claude, claudecode
//	anthropic    the native loop on the Messages API (package native); alias native
//	codex        Codex's app-server (package codex); alias openai
//	opencode     OpenCode over ACP (package acp)
//	claude-acp   Claude over ACP (claude-agent-acp)
//	copilot      GitHub Copilot over ACP
package engines

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/codex"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/native"
)

// The built-in engines' names (what sessions store and clients send).
const (
	ClaudeCode = engine.ClaudeCode
	Anthropic  = engine.Anthropic
	Codex      = codex.Name
	OpenCode   = acp.OpenCode
	ClaudeACP  = acp.ClaudeACP
	Copilot    = acp.Copilot
)

// Names are the built-in engines' names, in the order Builtin returns
// them.
var Names = []string{ClaudeCode, Anthropic, Codex, OpenCode, ClaudeACP, Copilot}

// Aliases are the other names the built-in engines go by, as users and
// clients write them: what harness.Config.Aliases takes.
var Aliases = map[string]string{
	"claude":     ClaudeCode,
	"claudecode": ClaudeCode,
	"native":     Anthropic,
	"openai":     Codex,
}

// Canonical returns the engine name that name stands for: an alias's
// engine (case does not matter for aliases and built-in names), else
// name as given (an engines file's entry, or an unknown name the caller
// reports).
func Canonical(name string) string {
	lower := strings.ToLower(name)
	if n, ok := Aliases[lower]; ok {
		return n
	}
	if slices.Contains(Names, lower) {
		return lower
	}
	return name
}

// Config is what the built-in engines are built with. The zero value is
// usable: the agents are found by their usual search, children get this
// process's environment (filtered by each engine), nothing is logged.
type Config struct {
	// ClaudeBinary is the claude executable ("" = claudecode.FindBinary's
	// search).
	ClaudeBinary string
	// Env is the environment every child's is filtered from (nil =
	// os.Environ()); AllowEnv names secret-looking variables to pass
	// anyway (see internal/secrets).
	Env      []string
	AllowEnv []string
	// ChildEnv entries (KEY=VALUE) are what the core adds to every turn
	// (harness.Config.ChildEnv: the demo's fake API URL and key): the ACP
	// agents get them when they start, and the native loop reads its
	// ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL from them (over Env).
	ChildEnv []string
	// Logger receives the engines' logs (nil = none).
	Logger *zerolog.Logger
	// InterruptGrace and KillGrace tune Claude Code's stop sequence (see
	// claudecode.Config; 0 = its defaults).
	InterruptGrace time.Duration
	KillGrace      time.Duration
	// CodexThreadConfig overrides Codex configuration for every thread
	// (codex.Config.ThreadConfig; nil = none).
	CodexThreadConfig map[string]any
	// ProjectConfig lets Claude Code and Codex read the projects' own
	// configuration (claudecode.Config.ProjectSettings,
	// codex.Config.TrustProject); off, they read the user's only (issue
	// 29). For a caller that writes that configuration itself (the IRC
	// daemon's skill and command rule).
	ProjectConfig bool
}

// Builtin returns every built-in engine for c, in the order of Names. An
// ACP agent whose configuration is refused (it never is for the built-in
// ones) is left out. Nothing is started until a turn.
func Builtin(c Config) []engine.Engine {
	out := make([]engine.Engine, 0, len(Names))
	for _, name := range Names {
		if e, err := New(name, c); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// New returns the built-in engine called name (or an alias of it) for c.
// It fails with ErrUnknown for any other name.
func New(name string, c Config) (engine.Engine, error) {
	switch name = Canonical(name); name {
	case ClaudeCode:
		return claudecode.NewEngine(claudecode.Config{
			Binary: c.ClaudeBinary, Env: c.Env, AllowEnv: c.AllowEnv, Logger: c.Logger,
			InterruptGrace: c.InterruptGrace, KillGrace: c.KillGrace, ProjectSettings: c.ProjectConfig,
		}), nil
	case Anthropic:
		env := c.Env
		if env == nil {
			env = os.Environ()
		}
		return native.NewEngine(native.EngineConfig{
			APIKey: lookup("ANTHROPIC_API_KEY", env, c.ChildEnv), BaseURL: lookup("ANTHROPIC_BASE_URL", env, c.ChildEnv), Logger: c.Logger,
		}), nil
	case Codex:
		// Codex keeps its own configuration ($CODEX_HOME/config.toml, its
		// provider and credentials): it gets the environment as it is.
		return codex.NewEngine(codex.Config{Env: c.Env, AllowEnv: c.AllowEnv, Logger: c.Logger, ThreadConfig: c.CodexThreadConfig, TrustProject: c.ProjectConfig}), nil
	}
	if ac, ok := acp.BuiltinConfig(name); ok {
		ac.Env, ac.AllowEnv, ac.ExtraEnv, ac.Logger = c.Env, c.AllowEnv, c.ChildEnv, c.Logger
		return acp.NewEngine(ac)
	}
	return nil, fmt.Errorf("%w %q (built in: %s)", ErrUnknown, name, strings.Join(Names, ", "))
}

// ErrUnknown is returned by New for a name that is no built-in engine.
var ErrUnknown = errors.New("unknown engine")

// lookup returns name's value in the last of lists that sets it.
func lookup(name string, lists ...[]string) string {
	v := ""
	for _, list := range lists {
		for _, kv := range list {
			if k, val, ok := strings.Cut(kv, "="); ok && k == name {
				v = val
			}
		}
	}
	return v
}
