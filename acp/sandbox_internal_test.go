package acp

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The model APIs a sandboxed ACP agent may reach: from its env, opencode's
// config content and files, claude-acp's settings; 443's "" when none.
func TestModelURLs(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_BASE_URL", "COPILOT_PROVIDER_BASE_URL", "OPENAI_BASE_URL", "OPENCODE_CONFIG_CONTENT", "XDG_CONFIG_HOME"} {
		t.Setenv(k, "") // the test's own environment names none
	}
	home := t.TempDir()
	if got := modelURLs([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "x")}); !slices.Equal(got, []string{""}) {
		t.Errorf("nothing named: %q, want the default", got)
	}
	for p, s := range map[string]string{
		filepath.Join(home, ".config", "opencode", "opencode.jsonc"): `{/* c */ "provider": {"p": {"options": {"baseURL": "http://127.0.0.1:7001"}}}}`,
		filepath.Join(home, ".claude", "settings.json"):              `{"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:7002"}}`,
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=" + home, "COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:7003", "OPENCODE_CONFIG_CONTENT={\"provider\":{\"f\":{\"options\":{\"baseURL\":\"http://127.0.0.1:7004/v1\"}}}}"}
	got := modelURLs(env)
	slices.Sort(got)
	want := []string{"http://127.0.0.1:7001", "http://127.0.0.1:7002", "http://127.0.0.1:7003", "http://127.0.0.1:7004/v1"}
	if !slices.Equal(got, want) {
		t.Errorf("modelURLs = %q, want %q", got, want)
	}
}
