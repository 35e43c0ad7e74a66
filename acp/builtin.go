package acp

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/chirality/harness/engine"
)

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
			MCPEnv:      OpenCodeAskMCP,
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
//
// In every mode it also sets claudeCode.options.strictMcpConfig: the
// adapter loads the project's settings, and with them its .mcp.json
// servers, by itself; strict, the agent starts only the servers the
// session sends (what the core let through: project servers a person
// trusted, the harness's own), never a cloned repository's .mcp.json
// (issue 29).
func ClaudeACPSessionMeta(permissionMode string) map[string]any {
	opts := map[string]any{"strictMcpConfig": true}
	if permissionMode != "bypassPermissions" {
		opts["allowDangerouslySkipPermissions"] = false
	}
	return map[string]any{"claudeCode": map[string]any{"options": opts}}
}

// BuiltinConfig returns the built-in entry named name, if there is one.
func BuiltinConfig(name string) (Config, bool) {
	i := slices.IndexFunc(Builtin(), func(c Config) bool { return c.Name == name })
	if i < 0 {
		return Config{}, false
	}
	return Builtin()[i], true
}

// OpenCodeAskMCP makes OpenCode ask before an MCP tool runs. OpenCode
// (1.18.33) runs MCP tools without asking by default, in every mode, so
// neither rules nor a person would decide them; with a permission entry
// "<server>_*": "ask" in its configuration it sends
// session/request_permission for them like for any tool, and the harness
// answers by rule, person or policy (dontAsk: deny). Outside
// bypassPermissions, for each of the request's servers whose pattern the
// user's OPENCODE_CONFIG_CONTENT does not set already, the entry is merged
// into that variable (a user's own choice for a server stands; so does a
// permission set for everything at once). The agent is one process per
// session: the servers of the turn that starts it count.
func OpenCodeAskMCP(env []string, req engine.Request) []string {
	if req.MCP.Len() == 0 || req.PermissionMode == "bypassPermissions" {
		return env
	}
	const key = "OPENCODE_CONFIG_CONTENT="
	cfg := map[string]any{}
	at := -1
	for i, kv := range env {
		if strings.HasPrefix(kv, key) {
			at = i
		}
	}
	if at >= 0 {
		if err := json.Unmarshal([]byte(env[at][len(key):]), &cfg); err != nil || cfg == nil {
			return env // not a JSON object: OpenCode will say so itself
		}
	}
	perm, ok := cfg["permission"].(map[string]any)
	if !ok {
		if _, set := cfg["permission"]; set {
			return env // one permission for everything: the user's choice
		}
		perm = map[string]any{}
	}
	for _, s := range req.MCP.Servers {
		if _, set := perm[s.Name+"_*"]; !set {
			perm[s.Name+"_*"] = "ask"
		}
	}
	cfg["permission"] = perm
	b, err := json.Marshal(cfg)
	if err != nil {
		return env
	}
	out := slices.Clone(env)
	if at >= 0 {
		out[at] = key + string(b)
	} else {
		out = append(out, key+string(b))
	}
	return out
}
