package codex

import (
	"os"
	"path/filepath"

	"github.com/chirality/harness/internal/lazyre"
	"github.com/chirality/harness/sandbox"
)

// baseURLRE finds the providers' base_url settings of a config.toml.
var baseURLRE = lazyre.New(`(?m)^\s*base_url\s*=\s*["']([^"'\n]*)["']`)

// modelURLs are the model APIs a sandboxed Codex with env and CODEX_HOME
// home may connect to (their ports; see sandbox.NetOf):
// OPENAI_BASE_URL and every base_url of $CODEX_HOME/config.toml's
// providers; when none is named, "" (OpenAI at its default https
// address, port 443).
func modelURLs(env []string, home string) []string {
	var urls []string
	if v := sandbox.Getenv(env, "OPENAI_BASE_URL"); v != "" {
		urls = append(urls, v)
	}
	if b, err := os.ReadFile(filepath.Join(home, "config.toml")); err == nil {
		for _, m := range baseURLRE.Re().FindAllSubmatch(b, -1) {
			urls = append(urls, string(m[1]))
		}
	}
	if len(urls) == 0 {
		urls = []string{""}
	}
	return urls
}
