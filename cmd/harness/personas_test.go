package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/persona"
)

// personaProject makes a project with a good, an overriding and a broken
// persona.
func personaProject(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"README.md":                "# CLI test project\n",
		"agents/AGENT_GOOD.md":     "---\ntools: [Read, Grep]\nmax_turns: 3\ndescription: A good one.\n---\nBe good.\n",
		"agents/AGENT_REVIEWER.md": "Project reviewer.\n",
		"agents/AGENT_BROKEN.md":   "---\ntools: Read\nmax_turn: 3\n---\n",
		"agents/not-a-persona.txt": "ignored",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func runCmd(fn func([]string, io.Writer, io.Writer) int, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = fn(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestPersonasList(t *testing.T) {
	root := personaProject(t)
	code, out, errOut := runCmd(runPersonas, "list", "--project-root", root, "--json")
	if code != 1 {
		t.Errorf("exit %d, want 1 because of the broken file", code)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	byID := map[string]map[string]any{}
	for _, p := range got {
		byID[p["id"].(string)] = p
	}
	if len(byID) != 5 {
		t.Fatalf("ids %v, want GOOD, REVIEWER, BROKEN, DECOMP, ORCHESTRATOR", byID)
	}
	wantKeys := []string{"id", "sourceFile", "tools", "disallowedTools", "autoApproveTools", "maxTurns", "model", "permissionMode", "description"}
	for _, k := range wantKeys {
		if _, ok := byID["GOOD"][k]; !ok {
			t.Errorf("JSON lacks field %q", k)
		}
	}
	if g := byID["GOOD"]; g["maxTurns"] != 3.0 || g["description"] != "A good one." || g["disallowedTools"] != nil {
		t.Errorf("GOOD = %v", g)
	}
	if tools := byID["REVIEWER"]["tools"].([]any); len(tools) != 1 || tools[0] != "default" {
		t.Errorf("project REVIEWER without frontmatter: tools = %v", tools)
	}
	if !strings.HasPrefix(byID["DECOMP"]["sourceFile"].(string), "embedded:") {
		t.Errorf("DECOMP source = %v", byID["DECOMP"]["sourceFile"])
	}
	brokenErr, _ := byID["BROKEN"]["error"].(string)
	if !strings.Contains(brokenErr, "AGENT_BROKEN.md:3:") || !strings.Contains(brokenErr, `"max_turn"`) {
		t.Errorf("broken error = %q, want file:line and the key", brokenErr)
	}
	if _, ok := byID["GOOD"]["error"]; ok {
		t.Error("good persona has an error field")
	}
	if !strings.Contains(errOut, "AGENT_BROKEN.md:3:") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("stderr = %q, want one line naming the broken file and line", errOut)
	}

	code, out, _ = runCmd(runPersonas, "list", "--project-root", root)
	if code != 1 || !strings.Contains(out, "GOOD") || !strings.Contains(out, "Read,Grep") || !strings.Contains(out, "BROKEN") {
		t.Errorf("text list (exit %d):\n%s", code, out)
	}
	code, _, _ = runCmd(runPersonas, "list", "--project-root", t.TempDir())
	if code != 0 {
		t.Errorf("list of a clean project: exit %d", code)
	}
}

func TestPersonasShow(t *testing.T) {
	root := personaProject(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"project persona", []string{"show", "GOOD", "--project-root", root}, 0, "Be good.", ""},
		{"flags first", []string{"show", "--project-root", root, "GOOD"}, 0, "max turns:           3", ""},
		{"built-in", []string{"show", "DECOMP", "--project-root", root}, 0, "embedded:agents/AGENT_DECOMP.md", ""},
		{"not found", []string{"show", "NOPE", "--project-root", root}, 1, "", "harness: persona NOPE not found\n"},
		{"broken", []string{"show", "BROKEN", "--project-root", root}, 1, "", "AGENT_BROKEN.md:3: unknown key \"max_turn\""},
		{"traversal", []string{"show", "../../etc/passwd", "--project-root", root}, 1, "", "invalid persona id"},
		{"missing id", []string{"show", "--project-root", root}, 2, "", "missing ID"},
		{"extra arg", []string{"show", "A", "B"}, 2, "", `unexpected argument "B"`},
		{"bad flag", []string{"show", "A", "--nope"}, 2, "", "unknown flag: --nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(runPersonas, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("stdout %q lacks %q", out, tt.wantOut)
			}
			if !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut, tt.wantErr)
			}
			if tt.wantCode == 1 && strings.Count(errOut, "\n") != 1 {
				t.Errorf("error is not one line: %q", errOut)
			}
		})
	}
	code, out, _ := runCmd(runPersonas, "show", "GOOD", "--json", "--project-root", root)
	var j map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &j) != nil || j["body"] != "Be good.\n" {
		t.Errorf("show --json: exit %d, %s", code, out)
	}
}

func TestPersonasPrompt(t *testing.T) {
	root := personaProject(t)
	code, out, errOut := runCmd(runPersonas, "prompt", "GOOD", "--mode", "pipeline", "--project-root", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	p, _ := persona.Load(root, "GOOD")
	want, _ := persona.BuildSystemPrompt(root, p, persona.ModePipeline)
	if out != want {
		t.Errorf("printed prompt differs from the assembled one:\n%s", out)
	}
	if !strings.Contains(out, "Pipeline execution mode.") || !strings.Contains(out, "Be good.") || !strings.Contains(out, "# CLI test project") {
		t.Errorf("prompt lacks a part:\n%s", out)
	}
	code, _, errOut = runCmd(runPersonas, "prompt", "GOOD", "--mode", "chat", "--project-root", root)
	if code != 2 || !strings.Contains(errOut, `invalid mode "chat"`) {
		t.Errorf("bad mode: exit %d, %q", code, errOut)
	}
	code, out, _ = runCmd(runPersonas, "prompt", "--project-root", root, "REVIEWER")
	if code != 0 || !strings.Contains(out, "Mode: workbench") || !strings.Contains(out, "Project reviewer.") {
		t.Errorf("default mode / project override: exit %d\n%s", code, out)
	}
	code, _, errOut = runCmd(runPersonas, "prompt", "NOPE", "--project-root", root)
	if code != 1 || errOut != "harness: persona NOPE not found\n" {
		t.Errorf("missing persona: exit %d %q", code, errOut)
	}
}

func TestPersonasUsage(t *testing.T) {
	if code, _, _ := runCmd(runPersonas); code != 2 {
		t.Errorf("no args: exit %d", code)
	}
	if code, _, errOut := runCmd(runPersonas, "frob"); code != 2 || !strings.Contains(errOut, `unknown subcommand "frob"`) {
		t.Errorf("unknown subcommand: exit %d %q", code, errOut)
	}
	if code, out, _ := runCmd(runPersonas, "--help"); code != 0 || !strings.Contains(out, "harness personas prompt") {
		t.Errorf("help: exit %d", code)
	}
	if code, _, _ := runCmd(runPersonas, "list", "-h"); code != 0 {
		t.Errorf("list -h: exit %d", code)
	}
}
