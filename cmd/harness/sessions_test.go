package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/session"
)

// sessionEnv points the default state directory at a temporary one and
// returns a store on it and a project root.
func sessionEnv(t *testing.T) (*session.Store, string) {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	st, err := session.Open(session.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, t.TempDir()
}

func TestSessionsList(t *testing.T) {
	st, root := sessionEnv(t)
	a, _ := st.Create(root, "REVIEWER", "workbench")
	b, _ := st.Create(root, "", "pipeline")
	b.ConversationID = "claude-b"
	if err := st.Save(b); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(session.FilePath(root, "11111111-1111-4111-8111-111111111111"), []byte("{torn"), 0o600)

	code, out, errOut := runCmd(runSessions, "list", "--json", "--project-root", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got) != 2 || got[0]["id"] != b.ID || got[1]["id"] != a.ID {
		t.Fatalf("list = %v, want b then a", got)
	}
	for _, k := range []string{"schemaVersion", "id", "createdAt", "updatedAt", "projectRoot", "persona", "mode", "claudeSessionId"} {
		if _, ok := got[0][k]; !ok {
			t.Errorf("field %q missing", k)
		}
	}
	if got[0]["persona"] != nil || got[1]["claudeSessionId"] != nil {
		t.Errorf("unset fields must be null: %v", got)
	}
	if !strings.Contains(errOut, "11111111-1111-4111-8111-111111111111.json") || !strings.Contains(errOut, "warning") {
		t.Errorf("corrupt file not reported: %q", errOut)
	}

	code, out, _ = runCmd(runSessions, "list", "--project-root", root)
	if code != 0 || !strings.Contains(out, a.ID) || !strings.Contains(out, "claude-b") || !strings.Contains(out, "REVIEWER") {
		t.Errorf("text list (exit %d):\n%s", code, out)
	}
	code, out, _ = runCmd(runSessions, "list", "--json", "--project-root", t.TempDir())
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("empty project: exit %d %q", code, out)
	}
}

func TestSessionsShowAndRm(t *testing.T) {
	st, root := sessionEnv(t)
	s, _ := st.Create(root, "DECOMP", "direct")
	elsewhere := t.TempDir() // show works by ID alone, from any directory

	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"show by id", []string{"show", s.ID, "--project-root", elsewhere}, 0, "persona:       DECOMP", ""},
		{"show json", []string{"show", "--json", s.ID}, 0, `"mode": "direct"`, ""},
		{"show unknown", []string{"show", "0b8f3a2e-1c4d-4e5f-8a9b-0c1d2e3f4a5b", "--project-root", root}, 1, "", "not found"},
		{"show invalid id", []string{"show", "../../etc/passwd"}, 2, "", "invalid id"},
		{"show without id", []string{"show"}, 2, "", "missing ID"},
		{"rm invalid id", []string{"rm", "x"}, 2, "", "invalid id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(runSessions, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if !strings.Contains(out, tt.wantOut) || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stdout %q / stderr %q, want %q / %q", out, errOut, tt.wantOut, tt.wantErr)
			}
			if tt.wantCode == 1 && strings.Count(errOut, "\n") != 1 {
				t.Errorf("error is not one line: %q", errOut)
			}
		})
	}

	// The index entry is lost: show and rm fall back to --project-root.
	os.RemoveAll(filepath.Join(os.Getenv("XDG_STATE_HOME"), "harness", session.IndexDir, s.ID+".json"))
	if code, out, _ := runCmd(runSessions, "show", s.ID, "--project-root", root); code != 0 || !strings.Contains(out, s.ID) {
		t.Errorf("show via --project-root: exit %d", code)
	}
	if code, out, errOut := runCmd(runSessions, "rm", s.ID, "--project-root", root); code != 0 || !strings.Contains(out, "deleted session "+s.ID) {
		t.Errorf("rm: exit %d %q %q", code, out, errOut)
	}
	if _, err := os.Stat(session.FilePath(root, s.ID)); !os.IsNotExist(err) {
		t.Error("session file still exists after rm")
	}
	if code, _, errOut := runCmd(runSessions, "rm", s.ID, "--project-root", root); code != 1 || !strings.Contains(errOut, "not found") {
		t.Errorf("second rm: exit %d %q", code, errOut)
	}
}

func TestSessionsUsage(t *testing.T) {
	if code, _, _ := runCmd(runSessions); code != 2 {
		t.Errorf("no args: exit %d", code)
	}
	if code, _, errOut := runCmd(runSessions, "frob"); code != 2 || !strings.Contains(errOut, "unknown subcommand") {
		t.Errorf("unknown: exit %d %q", code, errOut)
	}
	if code, _, errOut := runCmd(runSessions, "list", "extra"); code != 2 || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("extra arg: exit %d %q", code, errOut)
	}
}
