package codex

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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

// What the Approver is asked for Codex's approval requests (0.169's
// params): every command marked, with the host a network request would
// reach and a kind other than "command" shown; a file change marked, and
// its root or reason shown, only when it asks for more than its patch.
func TestApprovalRequest(t *testing.T) {
	const cmd = "item/commandExecution/requestApproval"
	const patch = "item/fileChange/requestApproval"
	inputs := map[string]json.RawMessage{"p1": json.RawMessage(`{"changes":[{"path":"a.go"}]}`)}
	for _, c := range []struct {
		method, params string
		marked         bool
		input          map[string]any
	}{
		{cmd, `{"itemId":"c1","command":"npm test","cwd":"/w"}`, true,
			map[string]any{"command": "npm test", "cwd": "/w", "reason": ""}},
		{cmd, `{"itemId":"c1","command":"curl x","cwd":"/w","reason":"network","networkApprovalContext":{"host":"example.com","protocol":"https"}}`, true,
			map[string]any{"command": "curl x", "cwd": "/w", "reason": "network", "host": "example.com"}},
		{cmd, `{"itemId":"c1","command":"python3","cwd":"/w","kind":"writeStdin"}`, true,
			map[string]any{"command": "python3", "cwd": "/w", "reason": "", "kind": "writeStdin"}},
		{cmd, `{"itemId":"c1","command":"ls","cwd":"/w","kind":"command"}`, true,
			map[string]any{"command": "ls", "cwd": "/w", "reason": ""}},
		{patch, `{"itemId":"p1"}`, false, map[string]any{"changes": []any{map[string]any{"path": "a.go"}}}},
		{patch, `{"itemId":"p1","grantRoot":"/home/u"}`, true,
			map[string]any{"changes": []any{map[string]any{"path": "a.go"}}, "grantRoot": "/home/u"}},
		{patch, `{"itemId":"p2","reason":"extra write access"}`, true, map[string]any{"reason": "extra write access"}},
	} {
		req := approvalRequest(c.method, json.RawMessage(c.params), inputs)
		var in map[string]any
		if err := json.Unmarshal(req.Input, &in); err != nil {
			t.Fatalf("%s: input %s: %v", c.params, req.Input, err)
		}
		if req.Unsandboxed != c.marked || !reflect.DeepEqual(in, c.input) {
			t.Errorf("%s: marked %v input %s, want %v %v", c.params, req.Unsandboxed, req.Input, c.marked, c.input)
		}
	}
}

// Codex's home joins the protected paths, but not into an empty list
// and not when the workspace is inside it.
func TestWithCodexHome(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	if got := withCodexHome([]string{"/p"}, home, work); !reflect.DeepEqual(got, []string{"/p", home + "/"}) {
		t.Errorf("got %q", got)
	}
	if got := withCodexHome(nil, home, work); got != nil {
		t.Errorf("empty list: got %q", got)
	}
	for _, cwd := range []string{home, filepath.Join(home, "proj")} {
		if got := withCodexHome([]string{"/p"}, home, cwd); !reflect.DeepEqual(got, []string{"/p"}) {
			t.Errorf("workspace %s inside the home: got %q", cwd, got)
		}
	}
}
