package engines

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The demo points every engine at loopback, blanks the real services'
// credentials, and leaves nothing behind.
func TestStartDemo(t *testing.T) {
	d, err := StartDemo(DemoOptions{Project: true})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range d.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for _, name := range []string{"ANTHROPIC_BASE_URL", "COPILOT_PROVIDER_BASE_URL"} {
		u, err := url.Parse(env[name])
		if err != nil || u.Hostname() != "127.0.0.1" {
			t.Errorf("%s = %q, want loopback", name, env[name])
		}
	}
	if env["COPILOT_OFFLINE"] != "true" || !strings.Contains(env["OPENCODE_CONFIG_CONTENT"], `"baseURL":"`+d.MessagesURL+`/v1"`) {
		t.Errorf("copilot/opencode not on the demo model: %v", env)
	}
	for _, name := range []string{"GH_TOKEN", "GITHUB_TOKEN", "COPILOT_GITHUB_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "HTTPS_PROXY"} {
		if v, ok := env[name]; !ok || v != "" {
			t.Errorf("%s not blanked (%q, set %v)", name, v, ok)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(env["CODEX_HOME"], "config.toml"))
	if err != nil || !strings.Contains(string(cfg), `base_url = "`+d.ResponsesURL+`"`) || !strings.Contains(string(cfg), "supports_websockets = false") {
		t.Errorf("codex config = %s (%v)", cfg, err)
	}
	if _, err := os.Stat(filepath.Join(d.Project, "main.go")); err != nil {
		t.Error(err)
	}
	dir := d.Dir
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("scratch %s left behind: %v", dir, err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
