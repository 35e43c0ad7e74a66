package acp

import "slices"

// The built-in ACP engine entries' names.
const (
	OpenCode  = "opencode"
	ClaudeACP = "claude-acp"
	Copilot   = "copilot"
)

// Builtin returns the configurations of the built-in ACP engines, pinned
// to the versions the tests run (package.json): opencode, claude-acp and
// copilot. Their Env, AllowEnv, ExtraEnv and Logger are the caller's to
// fill.
func Builtin() []Config {
	return []Config{
		{
			Name: OpenCode, Command: []string{"opencode", "acp"},
			Install:     "npm install opencode-ai@1.18.33",
			Credentials: []string{"ANTHROPIC_API_KEY"},
		},
		{
			Name: ClaudeACP, Command: []string{"claude-agent-acp"},
			Install:     "npm install @agentclientprotocol/claude-agent-acp@0.101.0",
			Credentials: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"},
		},
		{
			Name: Copilot, Command: []string{"copilot", "--acp", "--stdio"},
			Install:     "npm install @github/copilot@1.0.102",
			Credentials: []string{"COPILOT_PROVIDER_API_KEY", "COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"},
		},
	}
}

// BuiltinConfig returns the built-in entry named name, if there is one.
func BuiltinConfig(name string) (Config, bool) {
	i := slices.IndexFunc(Builtin(), func(c Config) bool { return c.Name == name })
	if i < 0 {
		return Config{}, false
	}
	return Builtin()[i], true
}
