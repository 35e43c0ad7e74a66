package codex

import (
	"maps"
	"os"
	"path/filepath"
)

// untrustProject adds to a thread's config that the turn's project is
// untrusted (projects.<dir>.trust_level), for its working directory and
// the git repository around it (Codex keys a project's trust by its
// repository's root), each as given and with symlinks followed.
//
// Why: Codex (0.169) reads a project's own .codex/config.toml unless the
// project is marked untrusted, also in one the user never trusted
// (verified on the real app-server: the project's model was used and its
// mcp_servers command ran at thread start). A file in the project, which
// an agent may have written, would otherwise start commands unasked and
// change the session's configuration. Its approval_policy and sandbox
// never won (thread/start's own approvalPolicy and sandbox do), but its
// MCP servers, sandbox_workspace_write.writable_roots, model providers
// and other keys would. The user's own $CODEX_HOME/config.toml still
// applies. What this drops besides (verified): an untrusted project's
// AGENTS.md no longer reaches the model; the persona's prompt
// (baseInstructions) does.
func untrustProject(config map[string]any, cwd string) map[string]any {
	if cwd == "" {
		return config
	}
	out := maps.Clone(config)
	if out == nil {
		out = map[string]any{}
	}
	projects := map[string]any{}
	if p, ok := out["projects"].(map[string]any); ok {
		projects = maps.Clone(p)
	}
	for _, d := range projectDirs(cwd) {
		projects[d] = map[string]any{"trust_level": "untrusted"}
	}
	out["projects"] = projects
	return out
}

// projectDirs are cwd and the root of the git repository holding it (the
// nearest ancestor with a .git entry), as given and resolved.
func projectDirs(cwd string) []string {
	var dirs []string
	add := func(d string) {
		for _, v := range []string{filepath.Clean(d), resolved(d)} {
			if v != "" && !contains(dirs, v) {
				dirs = append(dirs, v)
			}
		}
	}
	add(cwd)
	for d := resolved(cwd); d != ""; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			add(d)
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return dirs
}

func resolved(d string) string {
	r, err := filepath.EvalSymlinks(d)
	if err != nil {
		return ""
	}
	return r
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
