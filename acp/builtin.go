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
			Fork:        true,
		},
		{
			Name: ClaudeACP, Command: []string{"claude-agent-acp"},
			Install:     "npm install @agentclientprotocol/claude-agent-acp@0.101.0",
			Credentials: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"},
			SessionMeta: ClaudeACPSessionMeta,
			Fork:        true,
		},
		{
			Name: Copilot, Command: []string{"copilot", "--acp", "--stdio"},
			Install:     "npm install @github/copilot@1.0.102",
			Credentials: []string{"COPILOT_PROVIDER_API_KEY", "COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"},
			NoStdioMCP:  true,
		},
	}
}

// ClaudeACPSessionMeta is claude-agent-acp's session _meta for a
// permission mode: outside bypassPermissions it sets
// claudeCode.options.allowDangerouslySkipPermissions to false.
//
// Why: the adapter (0.101.0, dist/permissions/modes.js) lets the Claude
// CLI skip permissions (--allow-dangerously-skip-permissions) whenever it
// is not root or IS_SANDBOX is set to anything, while the CLI, as root,
// refuses that flag unless IS_SANDBOX is exactly "1" ("cannot be used with
// root/sudo privileges"): with IS_SANDBOX=yes or true every session/new
// failed, in every mode. With this _meta the adapter never passes the flag
// outside bypass, so claude-acp runs as root in every other mode whatever
// IS_SANDBOX says; bypassPermissions as root still needs IS_SANDBOX=1.
// A session set up outside bypass cannot switch to it later.
func ClaudeACPSessionMeta(permissionMode string) map[string]any {
	if permissionMode == "bypassPermissions" {
		return nil
	}
	return map[string]any{"claudeCode": map[string]any{"options": map[string]any{"allowDangerouslySkipPermissions": false}}}
}

// BuiltinConfig returns the built-in entry named name, if there is one.
func BuiltinConfig(name string) (Config, bool) {
	i := slices.IndexFunc(Builtin(), func(c Config) bool { return c.Name == name })
	if i < 0 {
		return Config{}, false
	}
	return Builtin()[i], true
}
