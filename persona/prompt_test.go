package persona

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// checkGolden compares got with testdata/<name>, or rewrites it with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("prompt differs from %s (run go test -update after checking):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

// lines returns n numbered lines, so cuts are easy to see in golden files.
func lines(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(prefix)
		b.WriteString(" line ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString("\n")
	}
	return b.String()
}

func TestBuildSystemPromptGolden(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string // relative to the project root
		persona string            // "" for none
		mode    Mode
		budget  int
	}{
		{
			name:   "no_persona_workbench",
			files:  map[string]string{"README.md": "# Demo\nA demo project.\n", "AGENTS.md": "Run `go test ./...`.\n"},
			mode:   ModeWorkbench,
			budget: MaxPromptChars,
		},
		{
			name:    "project_persona_pipeline",
			files:   map[string]string{"README.md": "# Demo\r\nCRLF readme\r\n", "agents/AGENT_BUILDER.md": "---\ntools: Read,Bash\n---\nYou build things.\nAlways run the tests.\n"},
			persona: "BUILDER",
			mode:    ModePipeline,
			budget:  MaxPromptChars,
		},
		{
			name:    "builtin_persona_direct_no_context",
			persona: "REVIEWER",
			mode:    ModeDirect,
			budget:  MaxPromptChars,
		},
		{
			name:   "context_files_capped",
			files:  map[string]string{"README.md": lines("readme", 700), "AGENTS.md": "short agents file"},
			mode:   ModeWorkbench,
			budget: MaxPromptChars,
		},
		{
			name:    "budget_cuts_persona",
			files:   map[string]string{"README.md": "# Demo\n", "agents/AGENT_LONG.md": lines("persona", 100)},
			persona: "LONG",
			mode:    ModePipeline,
			budget:  1200,
		},
		{
			name:    "budget_cuts_persona_then_context",
			files:   map[string]string{"README.md": lines("readme", 40), "AGENTS.md": lines("agents", 40), "agents/AGENT_LONG.md": lines("persona", 100)},
			persona: "LONG",
			mode:    ModeWorkbench,
			budget:  1400,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for name, content := range tt.files {
				writeFile(t, filepath.Join(root, name), content)
			}
			var p *Persona
			if tt.persona != "" {
				var err error
				if p, err = Load(root, tt.persona); err != nil {
					t.Fatal(err)
				}
			}
			got, err := buildSystemPrompt(root, p, tt.mode, tt.budget)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > tt.budget {
				t.Errorf("prompt is %d bytes, budget %d", len(got), tt.budget)
			}
			checkGolden(t, "golden/"+tt.name+".txt", strings.ReplaceAll(got, root, "<ROOT>"))
		})
	}
}

func TestBuildSystemPromptBudgetEdges(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "README.md"), lines("readme", 30))
	writeFile(t, filepath.Join(root, "AGENTS.md"), lines("agents", 30))
	// Multi-byte runes everywhere, so a cut in the wrong place would show.
	p := &Persona{ID: "P", Body: strings.Repeat("persona ünïcødé 世界\n", 60)}

	full, err := buildSystemPrompt(root, p, ModeDirect, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	noPersona, _ := buildSystemPrompt(root, nil, ModeDirect, 1<<20)
	if strings.Contains(full, "truncated") {
		t.Fatal("uncut prompt has a truncation marker")
	}

	t.Run("exactly at budget is not cut", func(t *testing.T) {
		got, _ := buildSystemPrompt(root, p, ModeDirect, len(full))
		if got != full {
			t.Error("prompt of exactly the budget was changed")
		}
	})
	t.Run("one byte over cuts the persona only", func(t *testing.T) {
		got, _ := buildSystemPrompt(root, p, ModeDirect, len(full)-1)
		if len(got) > len(full)-1 {
			t.Errorf("len %d over budget %d", len(got), len(full)-1)
		}
		if !strings.Contains(got, "[harness: persona instructions truncated") {
			t.Error("no persona cut marker")
		}
		if strings.Contains(got, "project context file") {
			t.Error("project context cut although cutting the persona was enough")
		}
	})

	base := "<base_identity>\nYou are operating within the Chirality Command Center.\nProject root: " + root + "\nMode: direct\n</base_identity>\n"
	mode := "<mode_instructions>\n" + modeInstructions[ModeDirect] + "\n</mode_instructions>\n"
	// Every budget from "nothing fits" to "everything fits".
	for budget := 0; budget <= len(full)+10; budget += 7 {
		got, err := buildSystemPrompt(root, p, ModeDirect, budget)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got, base) || !strings.HasSuffix(got, mode) {
			t.Fatalf("budget %d: base identity or mode instructions were cut", budget)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("budget %d: invalid UTF-8 (a rune was split)", budget)
		}
		minimal := len(base) + len(mode)
		if budget >= minimal+600 && len(got) > budget { // room for the markers
			t.Fatalf("budget %d: prompt is %d bytes", budget, len(got))
		}
		contextCut := strings.Contains(got, "[harness: project context file")
		personaCut := strings.Contains(got, "[harness: persona instructions truncated")
		if contextCut && !strings.Contains(got, "truncated to fit the "+itoa(budget/CharsPerToken)+"-token prompt budget: 0 of") {
			t.Fatalf("budget %d: project context cut before the persona was emptied", budget)
		}
		if budget < len(full) && !personaCut {
			t.Fatalf("budget %d: over budget but persona not marked as cut", budget)
		}
		if budget >= len(noPersona)+400 && contextCut {
			t.Fatalf("budget %d: context cut although it fits without the persona", budget)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestBuildSystemPromptRealBudget(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "README.md"), strings.Repeat("r", 10000))
	writeFile(t, filepath.Join(root, "AGENTS.md"), strings.Repeat("a", 10000))
	p := &Persona{ID: "BIG", Body: strings.Repeat("p", 100000)}
	got, err := BuildSystemPrompt(root, p, ModeWorkbench)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > MaxPromptChars || len(got) < MaxPromptChars-200 {
		t.Errorf("len = %d, want just under %d", len(got), MaxPromptChars)
	}
	if strings.Count(got, "r") < ContextFileCap || strings.Count(got, "a") < ContextFileCap {
		t.Error("context files cut although the persona alone was over budget")
	}
}

func TestBuildSystemPromptInvalidMode(t *testing.T) {
	if _, err := BuildSystemPrompt(t.TempDir(), nil, "chat"); !errors.Is(err, ErrInvalidMode) {
		t.Errorf("err = %v, want ErrInvalidMode", err)
	}
}

func TestModes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{{"workbench", true}, {"pipeline", true}, {"direct", true}, {"", false}, {"Workbench", false}, {"chat", false}} {
		if got := ValidMode(tt.in); got != tt.want {
			t.Errorf("ValidMode(%q) = %v", tt.in, got)
		}
		if _, err := ParseMode(tt.in); (err == nil) != tt.want {
			t.Errorf("ParseMode(%q) err = %v", tt.in, err)
		}
	}
}

func TestContextCacheInvalidation(t *testing.T) {
	root := t.TempDir()
	readme := filepath.Join(root, "README.md")
	writeFile(t, readme, "version one\n")
	touch(t, readme, -time.Hour)
	first, _ := BuildSystemPrompt(root, nil, ModeDirect)
	contextCache.mu.Lock()
	before := contextCache.reads
	contextCache.mu.Unlock()
	again, _ := BuildSystemPrompt(root, nil, ModeDirect)
	contextCache.mu.Lock()
	if contextCache.reads != before {
		t.Error("unchanged README.md was read again")
	}
	contextCache.mu.Unlock()
	if again != first {
		t.Error("prompt changed without a file change")
	}
	writeFile(t, readme, "version two\n")
	touch(t, readme, 0)
	got, _ := BuildSystemPrompt(root, nil, ModeDirect)
	if !strings.Contains(got, "version two") || strings.Contains(got, "version one") {
		t.Errorf("changed README.md not re-read:\n%s", got)
	}
	os.Remove(readme)
	got, _ = BuildSystemPrompt(root, nil, ModeDirect)
	if strings.Contains(got, "<project_context>") {
		t.Error("removed README.md still in the prompt")
	}
}

func TestSavePrompt(t *testing.T) {
	root := t.TempDir()
	const id = "0b8f3a2e-1c4d-4e5f-8a9b-0c1d2e3f4a5b"
	path, err := SavePrompt(root, id, "first")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, ".chirality", "prompts", id+"-system.txt"); path != want {
		t.Errorf("path = %s, want %s", path, want)
	}
	if _, err := SavePrompt(root, id, "second turn"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "second turn" {
		t.Errorf("content = %q, want the last turn's prompt", data)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(filepath.Dir(path))
	if di.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %v, want 0700", di.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("prompts dir has %d entries, want 1 (temp files left?)", len(entries))
	}
	for _, bad := range []string{"", "../x", "a/b", "..", "x y"} {
		if _, err := SavePrompt(root, bad, "p"); err == nil {
			t.Errorf("SavePrompt(%q) succeeded", bad)
		}
	}
}
