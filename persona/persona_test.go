package persona

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseContent(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Persona // ID and SourceFile are filled in by the test
	}{
		{
			name: "no frontmatter means default tools",
			in:   "# Hello\nDo things.\n",
			want: Persona{Tools: []string{"default"}, Body: "# Hello\nDo things.\n"},
		},
		{
			name: "string tool lists",
			in:   "---\ntools: Read, Grep\ndisallowed_tools: \"Bash\"\nauto_approve_tools: Read\n---\nbody\n",
			want: Persona{Tools: []string{"Read", "Grep"}, DisallowedTools: []string{"Bash"}, AutoApproveTools: []string{"Read"}, Body: "body\n"},
		},
		{
			name: "list tool lists and every key",
			in: "---\ntools:\n  - Read\n  - Bash(git diff:*)\ndisallowed_tools: [Edit, Write]\nauto_approve_tools: []\n" +
				"max_turns: 7\nmodel: claude-sonnet-4-5\npermission_mode: acceptEdits\ndescription: A helper.\n---\nbody",
			want: Persona{Tools: []string{"Read", "Bash(git diff:*)"}, DisallowedTools: []string{"Edit", "Write"},
				AutoApproveTools: []string{}, MaxTurns: 7, Model: "claude-sonnet-4-5", PermissionMode: "acceptEdits",
				Description: "A helper.", Body: "body"},
		},
		{
			name: "commas inside parentheses stay in one rule",
			in:   "---\ntools: \"Read,Bash(git diff:*, git log:*),Grep\"\n---\n",
			want: Persona{Tools: []string{"Read", "Bash(git diff:*, git log:*)", "Grep"}},
		},
		{
			name: "empty tools string means no tools",
			in:   "---\ntools: \"\"\n---\nx\n",
			want: Persona{Tools: []string{}, Body: "x\n"},
		},
		{
			name: "frontmatter without tools leaves them unset",
			in:   "---\ndescription: d\n---\n",
			want: Persona{Description: "d"},
		},
		{
			name: "empty frontmatter",
			in:   "---\n---\nbody\n",
			want: Persona{Body: "body\n"},
		},
		{
			name: "BOM and CRLF",
			in:   "\ufeff---\r\ntools: Read\r\nmax_turns: 3\r\n---\r\nline one\r\nline two\r\n",
			want: Persona{Tools: []string{"Read"}, MaxTurns: 3, Body: "line one\nline two\n"},
		},
		{
			name: "a budget: max_cost_usd a number (an integer too), max_tokens an integer",
			in:   "---\nmax_cost_usd: 2.5\nmax_tokens: 400000\n---\n",
			want: Persona{MaxCostUSD: 2.5, MaxTokens: 400000},
		},
		{
			name: "max_cost_usd as an integer",
			in:   "---\nmax_cost_usd: 3\n---\n",
			want: Persona{MaxCostUSD: 3},
		},
		{
			name: "a later --- line belongs to the body",
			in:   "---\nmodel: m\n---\nabove\n---\nbelow\n",
			want: Persona{Model: "m", Body: "above\n---\nbelow\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseContent("X", "AGENT_X.md", []byte(tt.in))
			if err != nil {
				t.Fatalf("ParseContent: %v", err)
			}
			tt.want.ID, tt.want.SourceFile = "X", "AGENT_X.md"
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", *got, tt.want)
			}
		})
	}
}

func TestParseContentErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantLine int
		wantMsg  string
	}{
		{"unknown key", "---\ntools: Read\ncolour: red\n---\n", 3, `unknown key "colour"`},
		{"duplicate key", "---\nmodel: a\nmodel: b\n---\n", 3, `duplicate key "model"`},
		{"unclosed", "---\ntools: Read\n", 1, "never closed"},
		{"yaml syntax", "---\ntools: [Read\nmodel: x\n---\n", 0, "frontmatter:"},
		{"max_turns not an int", "---\nmax_turns: many\n---\n", 2, "max_turns: want an integer"},
		{"max_turns zero", "---\n\nmax_turns: 0\n---\n", 3, "positive integer"},
		{"max_cost_usd a string", "---\nmax_cost_usd: \"2.5\"\n---\n", 2, "max_cost_usd: want a number of US dollars"},
		{"max_cost_usd zero", "---\nmax_cost_usd: 0\n---\n", 2, "max_cost_usd: must be a positive number"},
		{"max_cost_usd negative", "---\nmax_cost_usd: -1.5\n---\n", 2, "must be a positive number"},
		{"max_cost_usd infinite", "---\nmax_cost_usd: .inf\n---\n", 2, "must be a positive number"},
		{"max_cost_usd not a number", "---\nmax_cost_usd: .nan\n---\n", 2, "must be a positive number"},
		{"max_tokens a float", "---\nmax_tokens: 1.5\n---\n", 2, "max_tokens: want an integer"},
		{"max_tokens negative", "---\nmax_tokens: -3\n---\n", 2, "max_tokens: must be a positive integer"},
		{"bad permission mode", "---\npermission_mode: yolo\n---\n", 2, `"yolo" is not one of`},
		{"tools a mapping", "---\ntools: {a: b}\n---\n", 2, "tools: want a string"},
		{"tools null", "---\ntools:\n---\n", 2, `use "" for no tools`},
		{"tools list with a number", "---\ntools:\n  - Read\n  - 3\n---\n", 4, "list item: want a tool name"},
		{"empty tool name", "---\ntools: Read,,Grep\n---\n", 2, "empty tool name"},
		{"not a mapping", "---\n- a\n- b\n---\n", 2, "must be a mapping"},
		{"model a list", "---\nmodel: [a]\n---\n", 2, "model: want a string, got a list"},
		{"CRLF keeps line numbers", "---\r\ntools: Read\r\n\r\nbogus: 1\r\n---\r\n", 4, `unknown key "bogus"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseContent("X", "agents/AGENT_X.md", []byte(tt.in))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *ParseError", err)
			}
			if !errors.Is(err, ErrInvalidPersona) {
				t.Errorf("errors.Is(err, ErrInvalidPersona) = false")
			}
			if pe.File != "agents/AGENT_X.md" {
				t.Errorf("File = %q", pe.File)
			}
			if tt.wantLine != 0 && pe.Line != tt.wantLine {
				t.Errorf("Line = %d, want %d (%v)", pe.Line, tt.wantLine, err)
			}
			if pe.Line == 0 && tt.wantLine == 0 && tt.name == "yaml syntax" {
				t.Errorf("yaml syntax error without a line: %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to contain %q", err, tt.wantMsg)
			}
			if tt.wantLine != 0 && !strings.HasPrefix(err.Error(), "agents/AGENT_X.md:") {
				t.Errorf("err = %q does not start with file:line", err)
			}
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// touch sets path's mtime to a distinct time, so a change is seen even on
// file systems with coarse timestamps.
func touch(t *testing.T, path string, d time.Duration) {
	t.Helper()
	mt := time.Now().Add(d)
	if err := os.Chtimes(path, mt, mt); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "agents", "AGENT_REVIEWER.md"), "---\nmodel: project-model\n---\nproject reviewer\n")
	writeFile(t, filepath.Join(root, "agents", "AGENT_MINE.md"), "mine\n")
	writeFile(t, filepath.Join(root, "agents", "AGENT_BROKEN.md"), "---\nnope: 1\n---\n")

	tests := []struct {
		id         string
		wantSource string
		wantErr    error
	}{
		{"REVIEWER", filepath.Join(root, "agents", "AGENT_REVIEWER.md"), nil}, // project wins
		{"MINE", filepath.Join(root, "agents", "AGENT_MINE.md"), nil},
		{"DECOMP", "embedded:agents/AGENT_DECOMP.md", nil},
		{"ORCHESTRATOR", "embedded:agents/AGENT_ORCHESTRATOR.md", nil},
		{"NOPE", "", ErrNotFound},
		{"BROKEN", "", ErrInvalidPersona},
		{"", "", ErrInvalidID},
		{"../REVIEWER", "", ErrInvalidID},
		{"../../etc/passwd", "", ErrInvalidID},
		{"a/b", "", ErrInvalidID},
		{`a\b`, "", ErrInvalidID},
		{"..", "", ErrInvalidID},
		{"X.md", "", ErrInvalidID},
		{"X\x00", "", ErrInvalidID},
		{"X\n", "", ErrInvalidID},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			p, err := Load(root, tt.id)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.ID != tt.id || p.SourceFile != tt.wantSource {
				t.Errorf("got ID %q source %q, want %q %q", p.ID, p.SourceFile, tt.id, tt.wantSource)
			}
		})
	}
	if _, err := Load(root, "NOPE"); err == nil || err.Error() != "persona NOPE not found" {
		t.Errorf("not-found message = %v", err)
	}
	p, _ := Load(root, "REVIEWER")
	if p.Model != "project-model" || p.Body != "project reviewer\n" {
		t.Errorf("project REVIEWER not used: %+v", p)
	}
}

func TestLoadReturnsCopies(t *testing.T) {
	p, err := Load(t.TempDir(), "REVIEWER")
	if err != nil {
		t.Fatal(err)
	}
	p.Tools[0] = "Mutated"
	q, _ := Load(t.TempDir(), "REVIEWER")
	if q.Tools[0] == "Mutated" {
		t.Fatal("Load shares slices with its cache")
	}
}

func TestBuiltinsParse(t *testing.T) {
	for _, id := range []string{"DECOMP", "ORCHESTRATOR", "REVIEWER"} {
		p, err := Load(t.TempDir(), id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if p.Description == "" || len(p.Tools) == 0 || p.MaxTurns == 0 || p.PermissionMode == "" || !strings.Contains(p.Body, "# Role") {
			t.Errorf("%s: incomplete built-in persona: %+v", id, p)
		}
	}
}

func TestList(t *testing.T) {
	root := t.TempDir()
	agents := filepath.Join(root, "agents")
	writeFile(t, filepath.Join(agents, "AGENT_A.md"), "---\ntools: Read\n---\na\n")
	writeFile(t, filepath.Join(agents, "AGENT_BROKEN.md"), "---\ntools: Read\nbad: x\n---\n")
	writeFile(t, filepath.Join(agents, "AGENT_REVIEWER.md"), "mine\n")
	writeFile(t, filepath.Join(agents, "AGENT_bad name.md"), "x\n")
	writeFile(t, filepath.Join(agents, "README.md"), "not a persona\n")
	if err := os.Mkdir(filepath.Join(agents, "AGENT_DIR.md"), 0o755); err != nil {
		t.Fatal(err)
	}

	entries, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id, source string
		ok         bool
	}
	var got []row
	for _, e := range entries {
		if (e.Persona == nil) == (e.Err == nil) {
			t.Errorf("%s: exactly one of Persona and Err must be set", e.ID)
		}
		got = append(got, row{e.ID, strings.TrimPrefix(e.SourceFile, root+string(filepath.Separator)), e.Err == nil})
	}
	want := []row{
		{"A", "agents/AGENT_A.md", true},
		{"BROKEN", "agents/AGENT_BROKEN.md", false},
		{"DECOMP", "embedded:agents/AGENT_DECOMP.md", true},
		{"ORCHESTRATOR", "embedded:agents/AGENT_ORCHESTRATOR.md", true},
		{"REVIEWER", "agents/AGENT_REVIEWER.md", true},
		{"bad name", "agents/AGENT_bad name.md", false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List:\n got %v\nwant %v", got, want)
	}
	for _, e := range entries {
		if e.ID == "BROKEN" && !strings.Contains(e.Err.Error(), "AGENT_BROKEN.md:3:") {
			t.Errorf("broken entry error %q does not name file and line", e.Err)
		}
	}
}

func TestListWithoutAgentsDir(t *testing.T) {
	entries, err := List(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Errorf("got %d entries, want the 3 built-ins", len(entries))
	}
}

func TestPersonaCacheInvalidation(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "agents", "AGENT_C.md")
	writeFile(t, path, "one\n")
	touch(t, path, -time.Hour)

	load := func() string {
		t.Helper()
		p, err := Load(root, "C")
		if err != nil {
			t.Fatal(err)
		}
		return p.Body
	}
	personaCache.mu.Lock()
	before := personaCache.reads
	personaCache.mu.Unlock()
	if got := load(); got != "one\n" {
		t.Fatalf("first load = %q", got)
	}
	if got := load(); got != "one\n" {
		t.Fatalf("second load = %q", got)
	}
	personaCache.mu.Lock()
	if n := personaCache.reads - before; n != 1 {
		t.Errorf("file read %d times for two unchanged loads, want 1", n)
	}
	personaCache.mu.Unlock()

	// Same size, new mtime: re-read.
	writeFile(t, path, "two\n")
	touch(t, path, 0)
	if got := load(); got != "two\n" {
		t.Errorf("after change = %q, want two", got)
	}
	// Broken now: the error is returned, not the stale persona.
	writeFile(t, path, "---\nx: 1\n---\n")
	touch(t, path, time.Hour)
	if _, err := Load(root, "C"); !errors.Is(err, ErrInvalidPersona) {
		t.Errorf("after breaking: err = %v", err)
	}
	// Removed: no longer found (no built-in C).
	os.Remove(path)
	if _, err := Load(root, "C"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after removal: err = %v", err)
	}
}
