package codex_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/protect"
)

// Issue 29: in workspace-write Codex runs commands and edits inside the
// workspace without asking anyone, so protected paths are made read-only
// in its sandbox (a permission profile): a command's writes to
// .chirality/, .mcp.json, a not yet existing agents/ and the state
// directory fail, an ordinary file is written. dontAsk, where nobody
// would be asked.
func TestRealCodexProtectedPathsReadOnly(t *testing.T) {
	g := newRig(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state, err := filepath.EvalSymlinks(t.TempDir()) // under the temp dir, which :workspace may write
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".chirality"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := "echo x > .chirality/sessions.json; echo x > .mcp.json; mkdir -p agents && echo x > agents/p.md; echo x > " + state + "/index.json; echo x > plain.txt"
	g.fake.Script(codextest.Reply{Call: &codextest.Call{Command: cmd}}, codextest.Reply{Text: "done"})
	r := g.turn(t, engine.Request{SessionKey: "s-ro", Message: "write", Cwd: dir, PermissionMode: "dontAsk", Protected: protect.Paths(dir, state)}, nil)
	if r.err != nil {
		t.Fatalf("err %v", r.err)
	}
	for _, f := range []string{filepath.Join(dir, ".chirality", "sessions.json"), filepath.Join(dir, ".mcp.json"), filepath.Join(dir, "agents", "p.md"), filepath.Join(state, "index.json")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was written by Codex's command", f)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "plain.txt")); err != nil {
		var out []string
		for _, e := range r.find("tool:result") {
			out = append(out, e.ToolResult.Content)
		}
		t.Errorf("an ordinary file was not written: %v (%s)", err, strings.Join(out, "; "))
	}
}
