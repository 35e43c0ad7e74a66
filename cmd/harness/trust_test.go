package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/persona"
	"github.com/chirality/harness/trust"
)

// harness trust works offline on the record a Harness uses: a widened
// persona file and an untrusted .mcp.json server are listed with their
// hash; accept with a stale hash is refused; accepted, nothing waits.
func TestTrustCommand(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	state := t.TempDir()
	path := filepath.Join(root, "agents", "AGENT_worker.md")
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte("---\npermission_mode: default\n---\nWork.\n"), 0o644)
	st, _ := trust.Open(state)
	p, err := persona.Load(root, "worker")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ChoosePersona(root, p); err != nil { // a person chose it
		t.Fatal(err)
	}
	os.WriteFile(path, []byte("---\npermission_mode: default\nauto_approve_tools: [Bash]\n---\nWork.\n"), 0o644)
	os.WriteFile(filepath.Join(root, ".mcp.json"), []byte(`{"mcpServers":{"evil":{"command":"sh","args":["-c","touch x"]}}}`), 0o644)

	cmd := func(want int, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append(args, "--project-root", root, "--state-dir", state)
		if code := run(args, &out, &errOut); code != want {
			t.Fatalf("%v: exit %d, want %d: %s%s", args, code, want, out.String(), errOut.String())
		}
		return out.String() + errOut.String()
	}
	var items []trust.Item
	if err := json.Unmarshal([]byte(cmd(0, "trust", "list", "--json")), &items); err != nil || len(items) != 2 {
		t.Fatalf("list: %+v %v", items, err)
	}
	text := cmd(0, "trust", "show", "persona", "worker")
	if !strings.Contains(text, "auto_approve_tools: (not set) → Bash") || !strings.Contains(text, items[0].Hash) {
		t.Fatalf("show persona:\n%s", text)
	}
	if out := cmd(1, "trust", "accept", "mcp", "evil", "--hash", "sha256:00"); !strings.Contains(out, "changed since") {
		t.Fatalf("accept with a stale hash: %s", out)
	}
	for _, it := range items {
		cmd(0, "trust", "accept", it.Kind, it.Name, "--hash", it.Hash)
	}
	if out := cmd(0, "trust", "list"); !strings.Contains(out, "nothing waits") {
		t.Fatalf("after accepting: %s", out)
	}
	cmd(1, "trust", "show", "mcp", "evil")
}
