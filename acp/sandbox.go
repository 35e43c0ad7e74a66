package acp

import (
	"net"
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

// modelURLs are the model APIs a sandboxed ACP agent with env may
// connect to (their ports; see sandbox.NetOf): claude-acp's
// ANTHROPIC_BASE_URL (in env or its ~/.claude/settings.json), Copilot's
// COPILOT_PROVIDER_BASE_URL, OPENAI_BASE_URL, and every provider's
// baseURL in opencode's OPENCODE_CONFIG_CONTENT or its config files;
// when none is named, "" (a provider at its default https address, port
// 443).
func modelURLs(env []string) []string {
	var urls []string
	for _, k := range []string{"ANTHROPIC_BASE_URL", "COPILOT_PROVIDER_BASE_URL", "OPENAI_BASE_URL"} {
		if v := sandbox.Getenv(env, k); v != "" {
			urls = append(urls, v)
		}
	}
	home := sandbox.Home(env)
	urls = append(urls, sandbox.URLsIn([]byte(sandbox.Getenv(env, "OPENCODE_CONFIG_CONTENT")), "baseURL")...)
	var files []string
	for _, dir := range []string{sandbox.Getenv(env, "XDG_CONFIG_HOME"), filepath.Join(home, ".config")} {
		if dir != "" {
			for _, f := range []string{"opencode.json", "opencode.jsonc", "config.json"} {
				files = append(files, filepath.Join(dir, "opencode", f))
			}
		}
	}
	urls = append(urls, sandbox.URLsInFiles("baseURL", files...)...)
	urls = append(urls, sandbox.URLsInFiles("ANTHROPIC_BASE_URL", filepath.Join(home, ".claude", "settings.json"))...)
	if len(urls) == 0 {
		urls = []string{""}
	}
	return urls
}

// freePort is a loopback TCP port free a moment ago, for an agent that
// listens (Config.PortFlag). Another process may take it before the agent
// binds it: then the agent fails to start, and the next turn tries again.
func freePort() (uint16, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return uint16(ln.Addr().(*net.TCPAddr).Port), nil
}
