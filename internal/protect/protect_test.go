package protect

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	root := t.TempDir()
	state := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".chirality", "sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	// planted by an agent: links to protected places
	if err := os.Symlink(filepath.Join(root, ".chirality"), filepath.Join(root, "innocent")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(state, filepath.Join(root, "st")); err != nil {
		t.Fatal(err)
	}
	prot := Paths(root, state)
	in := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	for _, c := range []struct {
		name  string
		tool  string
		input json.RawMessage
		want  bool
	}{
		{"write chirality", "Write", in(map[string]any{"file_path": filepath.Join(root, ".chirality/x.json"), "content": "x"}), true},
		{"relative", "Edit", in(map[string]any{"file_path": ".chirality/sessions/a.json"}), true},
		{"dotdot", "Write", in(map[string]any{"file_path": "src/../.mcp.json"}), true},
		{"dotdot out and back", "Write", in(map[string]any{"file_path": "../" + filepath.Base(root) + "/agents/p.md"}), true},
		{"symlinked dir", "Write", in(map[string]any{"file_path": "innocent/sessions/new.json"}), true},
		{"state dir through a link", "Write", in(map[string]any{"file_path": "st/index.json"}), true},
		{"state dir", "MultiEdit", in(map[string]any{"file_path": filepath.Join(state, "x")}), true},
		{"claude settings", "Write", in(map[string]any{"file_path": ".claude/settings.local.json"}), true},
		{"claude other file", "Write", in(map[string]any{"file_path": ".claude/commands/x.md"}), false},
		{"codex config", "Write", in(map[string]any{"file_path": ".codex/config.toml"}), true},
		{"opencode", "edit", in(map[string]any{"filePath": filepath.Join(root, "opencode.jsonc")}), true},
		{"opencode dir", "write", in(map[string]any{"filePath": ".opencode/plugin/x.ts"}), true},
		{"notebook", "NotebookEdit", in(map[string]any{"notebook_path": "agents/x.ipynb"}), true},
		{"acp locations", "edit", in(map[string]any{"locations": []any{map[string]any{"path": filepath.Join(root, "src/a.go")}, map[string]any{"path": filepath.Join(root, ".mcp.json")}}}), true},
		{"codex changes list", "apply_patch", in(map[string]any{"changes": []any{map[string]any{"path": filepath.Join(root, ".codex/config.toml"), "kind": map[string]any{"type": "add"}}}}), true},
		{"codex changes map", "apply_patch", in(map[string]any{"changes": map[string]any{filepath.Join(root, "agents/a.md"): map[string]any{"type": "add"}}}), true},
		{"patch text", "apply_patch", in(map[string]any{"input": "*** Begin Patch\n*** Add File: src/ok.go\n+x\n*** Update File: opencode.json\n@@\n-a\n+b\n*** End Patch"}), true},
		{"patch move", "patch", in(map[string]any{"patchText": "*** Begin Patch\n*** Update File: src/a.go\n*** Move to: .chirality/a.go\n*** End Patch"}), true},
		{"mcp write tool", "mcp__fs__write_file", in(map[string]any{"path": filepath.Join(root, ".mcp.json")}), true},
		{"ordinary write", "Write", in(map[string]any{"file_path": "src/main.go", "content": ".chirality/x"}), false},
		{"read protected", "Read", in(map[string]any{"file_path": ".chirality/x.json"}), false},
		{"bash", "Bash", in(map[string]any{"command": "cat .mcp.json"}), false},
		{"lookalike", "Write", in(map[string]any{"file_path": ".chirality-notes/x"}), false},
		{"lookalike file", "Write", in(map[string]any{"file_path": ".mcp.json.bak"}), false},
		{"not json", "Write", json.RawMessage(`{`), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if p, got := Write(prot, root, c.tool, c.input); got != c.want {
				t.Fatalf("Write(%s %s) = %q %v, want %v", c.tool, c.input, p, got, c.want)
			}
		})
	}
}

func TestPathsFollowTheRootsLinks(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	// the agent names the real path; the session's root is the link
	if !Covers(Paths(link), "", filepath.Join(real, ".chirality", "x")) {
		t.Fatal("a path through the root's real name is not covered")
	}
	if !Covers(Paths(real), link, ".chirality/x") {
		t.Fatal("a path through a link to the root is not covered")
	}
}

func FuzzWritePaths(f *testing.F) {
	f.Add("apply_patch", `{"input":"*** Begin Patch\n*** Add File: a\n*** End Patch"}`)
	f.Add("edit", `{"locations":[{"path":"/x"}],"changes":{"/y":{}}}`)
	f.Add("Write", `{"file_path":"../../.chirality/x"}`)
	root := f.TempDir()
	prot := Paths(root)
	f.Fuzz(func(t *testing.T, tool, input string) {
		for _, p := range WritePaths(tool, json.RawMessage(input)) {
			_ = Covers(prot, root, p)
		}
	})
}
