package codex

import (
	"os"
	"path/filepath"
	"testing"
)

// What marks a Codex file change approval request as asking for more
// than its patch: a root to write under for the rest of the session, or
// a reason (extra write access). A plain patch's request has neither.
func TestWidensPatch(t *testing.T) {
	for _, c := range []struct {
		reason, grantRoot string
		want              bool
	}{
		{"", "", false},
		{"  ", " ", false},
		{"", "/home/u", true},
		{"needs to write outside the workspace", "", true},
	} {
		if got := widensPatch(c.reason, c.grantRoot); got != c.want {
			t.Errorf("widensPatch(%q, %q) = %v, want %v", c.reason, c.grantRoot, got, c.want)
		}
	}
}

// Existing protected paths are unreadable in the profile, and the guard
// is in it, only where a person is asked (untrusted): under never a
// denied read would keep an execpolicy allow rule's command in the
// sandbox, which refuses AF_UNIX connects. A missing one stays "read"
// (denied, Codex makes a placeholder file for it, on the disk when it
// runs an escalation).
func TestProtectedProfileDeniesReadsOnlyWhenAsking(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for pol, want := range map[string]string{"untrusted": "none", "never": "read"} {
		params := map[string]any{"sandbox": "workspace-write", "approvalPolicy": pol}
		cfg := withProtectedProfile(params, nil, dir, []string{dir + "/.mcp.json", dir + "/agents/", "/elsewhere/state/"})
		perms, _ := cfg["permissions"].(map[string]any)
		prof, _ := perms[protectProfile].(map[string]any)
		fs, _ := prof["filesystem"].(map[string]any)
		inside, _ := fs[":workspace_roots"].(map[string]any)
		if inside[".mcp.json"] != want || inside["agents"] != "read" || fs["/elsewhere"] != "read" {
			t.Errorf("%s: profile %v, want .mcp.json %q, the missing agents/ and /elsewhere read", pol, cfg, want)
		}
		if _, has := inside[escapeGuard]; has != (pol == "untrusted") {
			t.Errorf("%s: guard in the profile = %v", pol, has)
		}
	}
}
