// Package protect decides whether a tool use writes a protected path:
// the harness's own files in a project (.chirality/, agents/, .mcp.json),
// the agents' own project configuration (.claude/settings.json and
// .claude/settings.local.json, .codex/, opencode.json, opencode.jsonc,
// .opencode/, Copilot's .github/copilot/ and .github/hooks/) and the
// harness's state directory. Such a write is always put to a person,
// whatever the rules or the permission mode say; where no person can be
// asked (dontAsk), it is denied. An agent that could write them could
// widen its own permissions, or those of the next session.
//
// Only writes by a file tool are recognised (their names and inputs
// below); a shell command that writes a protected path is a shell
// command, asked or allowed by its own rules.
package protect

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// Dirs are the protected directories of a project, relative to its root:
// everything under them is protected.
var Dirs = []string{".chirality", "agents", ".codex", ".opencode", ".github/copilot", ".github/hooks"}

// Files are the protected files of a project, relative to its root.
var Files = []string{".mcp.json", ".claude/settings.json", ".claude/settings.local.json", "opencode.json", "opencode.jsonc"}

// Paths returns root's protected paths and extraDirs (the harness's state
// directory), absolute, cleaned and with the symlinks of their existing
// parts followed: a directory ends in a separator. Empty roots and dirs
// are left out.
func Paths(root string, extraDirs ...string) []string {
	var out []string
	if root != "" {
		r := Resolve("", root)
		for _, d := range Dirs {
			out = append(out, filepath.Join(r, filepath.FromSlash(d))+string(filepath.Separator))
		}
		for _, f := range Files {
			out = append(out, filepath.Join(r, filepath.FromSlash(f)))
		}
	}
	for _, d := range extraDirs {
		if d != "" {
			out = append(out, Resolve("", d)+string(filepath.Separator))
		}
	}
	return out
}

// Resolve makes p absolute (relative to dir), cleans it and follows the
// symlinks of its longest existing prefix: an agent may plant a symlink
// to a protected directory and write through it. What does not exist yet
// is appended as written.
func Resolve(dir, p string) string {
	if !filepath.IsAbs(p) {
		if dir == "" {
			if wd, err := os.Getwd(); err == nil {
				dir = wd
			}
		}
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	rest := ""
	for cur := p; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Covers reports whether path p (relative to dir when not absolute) is or
// is inside one of protected (Paths' form), with and without its
// symlinks followed.
func Covers(protected []string, dir, p string) bool {
	if p == "" {
		return false
	}
	lexical := p
	if !filepath.IsAbs(lexical) {
		lexical = filepath.Join(dir, lexical)
	}
	for _, c := range []string{filepath.Clean(lexical), Resolve(dir, p)} {
		for _, g := range protected {
			if d, ok := strings.CutSuffix(g, string(filepath.Separator)); ok {
				if c == d || strings.HasPrefix(c, g) {
					return true
				}
			} else if c == g {
				return true
			}
		}
	}
	return false
}

// Write returns the first protected path the tool use writes, and
// whether there is one. dir is the agent's working directory (relative
// paths are relative to it).
func Write(protected []string, dir, tool string, input json.RawMessage) (string, bool) {
	if len(protected) == 0 {
		return "", false
	}
	for _, p := range WritePaths(tool, input) {
		if Covers(protected, dir, p) {
			return p, true
		}
	}
	return "", false
}

// WritePaths returns the paths a tool use writes, as its input names
// them; nil for a tool that writes no file. Writing tools are Claude
// Code's Write, Edit, MultiEdit and NotebookEdit, the ACP kinds edit,
// delete and move (their input's paths and locations), Codex's
// apply_patch (its changes, or a patch's "*** Add/Update/Delete File:"
// and "*** Move to:" lines), and any tool (an MCP tool's own name counts)
// whose name says it writes, edits, creates, deletes, moves, renames or
// patches.
func WritePaths(tool string, input json.RawMessage) []string {
	if !writes(tool) {
		return nil
	}
	var v any
	if json.Unmarshal(input, &v) != nil {
		return nil
	}
	var out []string
	collect(v, "", &out, 0)
	return out
}

func writes(tool string) bool {
	name := strings.ToLower(tool)
	if i := strings.LastIndex(name, "__"); i >= 0 {
		name = name[i+2:] // mcp__server__tool
	}
	for _, w := range []string{"write", "edit", "create", "delete", "move", "rename", "patch", "remove", "replace", "insert", "mkdir", "copy"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// pathKeys are the input keys that name a file the tool writes.
var pathKeys = map[string]bool{
	"file_path": true, "filePath": true, "filepath": true, "path": true, "paths": true,
	"notebook_path": true, "notebookPath": true, "target": true, "destination": true,
	"source": true, "new_path": true, "newPath": true, "old_path": true, "oldPath": true,
	"move_path": true, "movePath": true, "file": true, "files": true, "uri": true,
}

// patchKeys are the input keys that may hold an apply_patch text.
var patchKeys = map[string]bool{"patch": true, "patchText": true, "input": true, "diff": true}

func collect(v any, key string, out *[]string, depth int) {
	if depth > 8 {
		return
	}
	switch x := v.(type) {
	case string:
		switch {
		case pathKeys[key]:
			*out = append(*out, strings.TrimPrefix(x, "file://"))
		case patchKeys[key]:
			*out = append(*out, patchPaths(x)...)
		}
	case []any:
		for _, e := range x {
			collect(e, key, out, depth+1)
		}
	case map[string]any:
		for k, e := range x {
			if key == "changes" {
				// Codex's fileChange map form: {path: change}
				*out = append(*out, k)
			}
			collect(e, k, out, depth+1)
		}
	}
}

// patchPaths are the files an apply_patch text adds, updates, deletes or
// moves to.
func patchPaths(patch string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(patch))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		for _, h := range []string{"*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:", "+++ ", "--- "} {
			if p, ok := strings.CutPrefix(line, h); ok {
				p = strings.TrimSpace(p)
				if h == "+++ " || h == "--- " {
					p = strings.TrimPrefix(strings.TrimPrefix(p, "a/"), "b/")
					if p == "/dev/null" {
						continue
					}
				}
				out = append(out, p)
			}
		}
	}
	return out
}

// Or is protected, or root's Paths when protected is nil (an engine run
// without the core).
func Or(protected []string, root string) []string {
	if protected == nil {
		return Paths(root)
	}
	return protected
}

// ClaudeAskRules are Claude Code permission rules that make the CLI ask
// before a file tool writes one of protected: Edit(//path) for a file,
// Edit(//path/**) for a directory (the CLI's absolute form; one Edit rule
// covers Edit, Write, MultiEdit and NotebookEdit). For the "ask" list of
// its settings (claudecode's --settings, claude-agent-acp's options).
func ClaudeAskRules(protected []string) []string {
	rules := make([]string, 0, len(protected))
	for _, p := range protected {
		if d, ok := strings.CutSuffix(p, string(filepath.Separator)); ok {
			rules = append(rules, "Edit(/"+filepath.ToSlash(d)+"/**)")
		} else {
			rules = append(rules, "Edit(/"+filepath.ToSlash(p)+")")
		}
	}
	return rules
}
