package acp

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/protect"
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
			MCPEnv:      OpenCodeEnv,
			PortFlag:    "--port",
		},
		{
			Name: ClaudeACP, Command: []string{"claude-agent-acp"},
			Install:     "npm install @agentclientprotocol/claude-agent-acp@0.101.0",
			Credentials: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"},
			SessionMeta: ClaudeACPSessionMeta,
			Fork:        true,
			Steer:       true,
		},
		{
			Name: Copilot, Command: []string{"copilot", "--acp", "--stdio"},
			Install:     "npm install @github/copilot@1.0.102",
			Credentials: []string{"COPILOT_PROVIDER_API_KEY", "COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"},
			NoStdioMCP:  true,
		},
	}
}

// ClaudeACPSessionMeta is claude-agent-acp's session _meta for a turn:
// options for the Claude Code CLI the adapter runs.
//
// settingSources ["user"], in every mode: the adapter (0.101.0) has the
// CLI read the project's .claude/settings.json and settings.local.json,
// and the latter's allow rules ran Bash unasked (verified on the real
// adapter); the project's settings would widen what a session may do.
//
// Outside bypassPermissions, settings with the protected paths' "ask"
// rules (protect.ClaudeAskRules: the CLI asks, so the harness does,
// before a file tool writes .chirality/, agents/…), and
// allowDangerouslySkipPermissions false. Why the latter: the adapter lets
// the Claude CLI skip permissions (--allow-dangerously-skip-permissions)
// whenever it is not root or IS_SANDBOX is set to anything, while the
// CLI, as root, refuses that flag unless IS_SANDBOX is exactly "1"
// ("cannot be used with root/sudo privileges"): with IS_SANDBOX=yes or
// true every session/new failed, in every mode. With this _meta the
// adapter never passes the flag outside bypass, so claude-acp runs as
// root in every other mode whatever IS_SANDBOX says; bypassPermissions as
// root still needs IS_SANDBOX=1. A session set up outside bypass cannot
// switch to it later.
//
// In every mode it also sets strictMcpConfig: the adapter loads the
// project's .mcp.json servers by itself; strict, the agent starts only
// the servers the session sends (what the core let through: project
// servers a person trusted, the harness's own), never a cloned
// repository's .mcp.json (issue 29).
//
// And promptSuggestions false: the adapter (0.101.0) otherwise asks the
// model, after every turn, for a predicted next prompt ("[SUGGESTION
// MODE: …]"), a second paid request per turn that the harness never
// shows, racing the next turn's own request at the model API.
func ClaudeACPSessionMeta(req engine.Request) map[string]any {
	opts := map[string]any{"settingSources": []string{"user"}, "strictMcpConfig": true, "promptSuggestions": false}
	if req.PermissionMode != "bypassPermissions" {
		opts["allowDangerouslySkipPermissions"] = false
		opts["settings"] = map[string]any{"permissions": map[string]any{
			"ask": protect.ClaudeAskRules(protect.Or(req.Protected, req.Cwd)),
		}}
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

// OpenCodeEnv is the built-in opencode entry's environment for a
// session's agent (Config.MCPEnv):
//
//   - OPENCODE_DISABLE_PROJECT_CONFIG=1 in every mode: OpenCode (1.18.33)
//     otherwise reads the project's opencode.json, opencode.jsonc and
//     .opencode/, and an agent entry's "permission": {"bash": "allow"}
//     there ran bash unasked although the harness's configuration said
//     "ask" (verified on the real agent); the project's own
//     configuration would widen what a session may do. The user's
//     OPENCODE_CONFIG_CONTENT and global configuration still apply.
//   - outside bypassPermissions, an "edit" permission of "ask" for each
//     protected path (internal/protect), merged into
//     OPENCODE_CONFIG_CONTENT (the user's own entries stand; OpenCode
//     edits without asking by default, so the harness never saw such a
//     write);
//   - OpenCodeAskMCP's entries for the session's MCP servers.
func OpenCodeEnv(env []string, req engine.Request) []string {
	env = OpenCodeAskMCP(env, req)
	if req.PermissionMode != "bypassPermissions" {
		env = openCodeProtect(env, protect.Or(req.Protected, req.Cwd), req.Cwd)
	}
	return append(slices.Clip(env), "OPENCODE_DISABLE_PROJECT_CONFIG=1")
}

// openCodeProtect merges "edit": {"*": <the user's edit permission, else
// allow>, "<protected pattern>": "ask"…} into OPENCODE_CONFIG_CONTENT.
// OpenCode (1.18.33) matches an edit's pattern against the file's path
// relative to its worktree (the git repository's root; "/" outside one),
// and "*" there matches any characters, "/" included: each protected path
// of the project is given relative to the project and, for a project
// below the worktree, as "*/<that>" (the same names in a subdirectory
// are asked too); one outside the project (the state directory) as its
// absolute path without the leading "/".
func openCodeProtect(env []string, protected []string, root string) []string {
	if len(protected) == 0 {
		return env
	}
	return withOpenCodeConfig(env, func(cfg map[string]any) bool {
		addProtectedEdits(cfg, protected, root)
		return true
	})
}

func addProtectedEdits(cfg map[string]any, protected []string, root string) {
	perm, ok := cfg["permission"].(map[string]any)
	if !ok {
		perm = map[string]any{}
		if all, set := cfg["permission"].(string); set {
			perm["*"] = all // one permission for everything, edits included
		}
	}
	edit, ok := perm["edit"].(map[string]any)
	if !ok {
		edit = map[string]any{"*": "allow"}
		if v, set := perm["edit"].(string); set {
			edit["*"] = v
		} else if v, set := perm["*"].(string); set {
			edit["*"] = v
		}
	}
	r := protect.Resolve("", root)
	for _, p := range protected {
		d, dir := strings.CutSuffix(p, string(filepath.Separator))
		if !dir {
			d = p
		}
		var pats []string
		if rel, err := filepath.Rel(r, d); err == nil && !strings.HasPrefix(rel, "..") {
			pats = append(pats, filepath.ToSlash(rel), "*/"+filepath.ToSlash(rel))
		} else {
			pats = append(pats, strings.TrimPrefix(filepath.ToSlash(d), "/"))
		}
		for _, pat := range pats {
			if dir {
				pat += "/*"
			}
			if _, set := edit[pat]; !set {
				edit[pat] = "ask"
			}
		}
	}
	perm["edit"] = edit
	cfg["permission"] = perm
}

// withOpenCodeConfig returns env with its OPENCODE_CONFIG_CONTENT (a new
// one when it has none) changed by change; env as it was when that is
// not a JSON object (OpenCode will say so itself) or change says no.
func withOpenCodeConfig(env []string, change func(cfg map[string]any) bool) []string {
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
			return env
		}
	}
	if !change(cfg) {
		return env
	}
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
	return withOpenCodeConfig(env, func(cfg map[string]any) bool {
		perm, ok := cfg["permission"].(map[string]any)
		if !ok {
			if _, set := cfg["permission"]; set {
				return false // one permission for everything: the user's choice
			}
			perm = map[string]any{}
		}
		for _, s := range req.MCP.Servers {
			if _, set := perm[s.Name+"_*"]; !set {
				perm[s.Name+"_*"] = "ask"
			}
		}
		cfg["permission"] = perm
		return true
	})
}
