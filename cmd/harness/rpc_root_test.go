package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `harness rpc --root R` lets thread.create name a directory in R (issue
// 34.12): only --cwd and below were allowed, and the refusal named a
// --root flag rpc did not have. A directory outside both is still refused.
func TestRPCRoot(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	cwd, root, outside := t.TempDir(), t.TempDir(), t.TempDir()
	project := filepath.Join(root, "p")
	if code := run([]string{"rpc", "--root", "/does/not/exist"}, &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
		t.Errorf("--root on a missing directory: exit %d, want 2", code)
	}
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	in := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"thread.create","params":{"directory":%q}}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"thread.create","params":{"directory":%q}}`+"\n"+
		`{"jsonrpc":"2.0","id":3,"method":"thread.create","params":{}}`+"\n", project, outside)
	var out, errOut bytes.Buffer
	if code := rpcMain(strings.NewReader(in), []string{"--cwd", cwd, "--root", root}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	replies := map[float64]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if id, ok := m["id"].(float64); ok {
			replies[id] = m
		}
	}
	dirOf := func(id float64) string {
		res, _ := replies[id]["result"].(map[string]any)
		th, _ := res["thread"].(map[string]any)
		d, _ := th["directory"].(string)
		return d
	}
	if got, _ := filepath.EvalSymlinks(project); dirOf(1) != got {
		t.Errorf("a thread in the --root: %v", replies[1])
	}
	if e, _ := replies[2]["error"].(map[string]any); e == nil || !strings.Contains(fmt.Sprint(e["message"]), "outside the allowed roots") {
		t.Errorf("a thread outside every root: %v", replies[2])
	}
	if got, _ := filepath.EvalSymlinks(cwd); dirOf(3) != got {
		t.Errorf("a thread in --cwd (the default): %v", replies[3])
	}
}
