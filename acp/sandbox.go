package acp

import (
	"path/filepath"

	"github.com/chirality/harness/sandbox"
)

// stateDirs are what a sandboxed ACP agent may write besides its workdir
// and private TMPDIR: the state each of the agents this package drives
// keeps under HOME (found by running each one sandboxed against the
// repository's fake models): opencode's XDG data, state, cache and
// config directories; claude-agent-acp's ~/.claude/ and ~/.claude.json;
// Copilot's ~/.copilot/. XDG_*_HOME, when set, are honoured.
func stateDirs(env []string) []string {
	home := sandbox.Home(env)
	dirs := sandbox.InHome(home, ".claude/", ".claude.json", ".copilot/", ".cache/",
		".local/share/opencode/", ".local/state/opencode/", ".config/opencode/", ".config/github-copilot/")
	for _, x := range []struct{ key, sub string }{
		{"XDG_DATA_HOME", "opencode"}, {"XDG_STATE_HOME", "opencode"}, {"XDG_CACHE_HOME", ""}, {"XDG_CONFIG_HOME", "opencode"},
	} {
		if v := sandbox.Getenv(env, x.key); v != "" {
			dirs = append(dirs, filepath.Join(v, x.sub)+string(filepath.Separator))
		}
	}
	return dirs
}
