package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The test binary doubles as a tool runner for the permission cases: run
// as an unprivileged user (the suite runs as root in CI, and root reads
// everything), it executes one tool call and prints the answer.
func TestMain(m *testing.M) {
	if name := os.Getenv("TOOL_TEST_RUN"); name != "" {
		for _, t := range All("") {
			if t.Name() == name {
				out, _ := t.Execute(context.Background(), json.RawMessage(os.Getenv("TOOL_TEST_INPUT")))
				fmt.Print(out)
				os.Exit(0)
			}
		}
		os.Exit(3)
	}
	os.Exit(m.Run())
}

func fixture(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "five.txt"), []byte("one\ntwo\nthree\nfour\nfive\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, ".hidden"), []byte("secret sauce\n"), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "sub", "deep"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "sub", "a.go"), []byte("package a\nfunc Alpha() {}\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "sub", "deep", "b.go"), []byte("package b\nfunc Beta() {}\n"), 0o644))
	return dir
}

func call(t *testing.T, tl Tool, input string) (map[string]string, bool) {
	t.Helper()
	out, err := tl.Execute(context.Background(), json.RawMessage(input))
	var m map[string]string
	if jerr := json.Unmarshal([]byte(out), &m); jerr != nil || len(m) != 1 {
		t.Fatalf("%s %s: answer %q is not a one-field JSON object", tl.Name(), input, out)
	}
	_, isErr := m["error"]
	if isErr != (err != nil) {
		t.Fatalf("%s %s: error field %v but Go error %v", tl.Name(), input, isErr, err)
	}
	var te *Error
	if err != nil && !errors.As(err, &te) {
		t.Fatalf("%s: error %T is not a *tool.Error", tl.Name(), err)
	}
	return m, isErr
}

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestRead(t *testing.T) {
	dir := fixture(t)
	f := q(filepath.Join(dir, "five.txt"))
	for _, c := range []struct {
		name, input, want, err string
	}{
		{"whole file", `{"path":` + f + `}`, "one\ntwo\nthree\nfour\nfive\n", ""},
		{"start only, to the end", `{"path":` + f + `,"start_line":4}`, "four\nfive", ""},
		{"end only, from 1", `{"path":` + f + `,"end_line":2}`, "one\ntwo", ""},
		{"a range", `{"path":` + f + `,"start_line":2,"end_line":3}`, "two\nthree", ""},
		{"one line", `{"path":` + f + `,"start_line":5,"end_line":5}`, "five", ""},
		{"end past the file", `{"path":` + f + `,"start_line":4,"end_line":99}`, "four\nfive", ""},
		{"relative to the root", `{"path":"five.txt","end_line":1}`, "one", ""},
		{"not found", `{"path":` + q(filepath.Join(dir, "nope")) + `}`, "", "file not found"},
		{"a directory", `{"path":` + q(dir) + `}`, "", "path is a directory"},
		{"start below 1", `{"path":` + f + `,"start_line":0}`, "", "start_line must be at least 1"},
		{"start after end", `{"path":` + f + `,"start_line":3,"end_line":2}`, "", "start_line 3 is after end_line 2"},
		{"start beyond the file", `{"path":` + f + `,"start_line":6}`, "", "start_line 6 is beyond the end of the file (5 lines)"},
		{"malformed input", `{"path":` + f + `,"start_line":"x"}`, "", "invalid input"},
		{"unknown field", `{"path":` + f + `,"lines":3}`, "", "invalid input"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, isErr := call(t, Read{Root: dir}, c.input)
			if c.err != "" {
				if !isErr || !strings.HasPrefix(m["error"], c.err) {
					t.Fatalf("got %v, want error %q", m, c.err)
				}
				return
			}
			if isErr || m["content"] != c.want {
				t.Fatalf("got %v, want content %q", m, c.want)
			}
		})
	}
}

func TestListDir(t *testing.T) {
	dir := fixture(t)
	m, isErr := call(t, ListDir{Root: dir}, `{"path":`+q(dir)+`}`)
	want, _ := exec.Command("ls", "-al", "--", dir).Output()
	if isErr || m["entries"] != string(want) {
		t.Fatalf("got %q, want the raw ls -al output %q", m["entries"], want)
	}
	if !strings.Contains(m["entries"], ".hidden") || !strings.HasPrefix(m["entries"], "total ") {
		t.Fatalf("hidden files or the total line missing: %q", m["entries"])
	}
	for input, wantErr := range map[string]string{
		`{"path":` + q(filepath.Join(dir, "five.txt")) + `}`: "not a directory",
		`{"path":` + q(filepath.Join(dir, "missing")) + `}`:  "file not found",
		`{"path":"sub"}`: "",
	} {
		m, isErr := call(t, ListDir{Root: dir}, input)
		if wantErr == "" {
			if isErr || !strings.Contains(m["entries"], "a.go") {
				t.Errorf("%s: %v", input, m)
			}
		} else if !isErr || m["error"] != wantErr {
			t.Errorf("%s: %v, want %q", input, m, wantErr)
		}
	}
}

func TestGrep(t *testing.T) {
	dir := fixture(t)
	for _, c := range []struct {
		name, input, want, err string
	}{
		{"one file: line:content", `{"pattern":"t[wh]","path":"five.txt"}`, "2:two\n3:three\n", ""},
		{"BRE, not ERE: + is literal", `{"pattern":"o+","path":"five.txt"}`, "", ""},
		{"BRE interval", `{"pattern":"e\\{2\\}","path":"five.txt"}`, "3:three\n", ""},
		{"case-sensitive", `{"pattern":"ONE","path":"five.txt"}`, "", ""},
		{"no match is success", `{"pattern":"zebra","path":"five.txt"}`, "", ""},
		{"recursive: file:line:content", `{"pattern":"^func","path":"sub","recursive":true}`, "", ""},
		{"invalid regex", `{"pattern":"a\\{1","path":"five.txt"}`, "", "invalid pattern"},
		{"missing path", `{"pattern":"x","path":"nope"}`, "", "file not found"},
		{"empty pattern", `{"pattern":"","path":"five.txt"}`, "", "pattern is required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, isErr := call(t, Grep{Root: dir}, c.input)
			if c.err != "" {
				if !isErr || !strings.HasPrefix(m["error"], c.err) {
					t.Fatalf("got %v, want error %q", m, c.err)
				}
				return
			}
			if isErr {
				t.Fatalf("got error %v", m)
			}
			if strings.HasPrefix(c.name, "recursive") {
				got := strings.Split(strings.TrimSpace(m["matches"]), "\n")
				a, b := filepath.Join(dir, "sub", "a.go")+":2:func Alpha() {}", filepath.Join(dir, "sub", "deep", "b.go")+":2:func Beta() {}"
				if len(got) != 2 || !(got[0] == a && got[1] == b || got[0] == b && got[1] == a) {
					t.Fatalf("recursive matches %q", got)
				}
				return
			}
			if m["matches"] != c.want {
				t.Fatalf("matches %q, want %q", m["matches"], c.want)
			}
		})
	}
}

// A directory without recursive is searched, not refused as a pattern
// error ("invalid pattern: .: Is a directory"): the regular files directly
// in it, each line named file:line:content; its subdirectories and links
// are not searched.
func TestGrepDirectoryWithoutRecursive(t *testing.T) {
	dir := fixture(t)
	os.Symlink(filepath.Join(dir, "five.txt"), filepath.Join(dir, "link.txt"))
	for _, path := range []string{".", dir} {
		m, isErr := call(t, Grep{Root: dir}, `{"pattern":"^[a-z]*e$","path":`+q(path)+`}`)
		want := filepath.Join(dir, "five.txt") + ":1:one\n" + filepath.Join(dir, "five.txt") + ":3:three\n" + filepath.Join(dir, "five.txt") + ":5:five\n"
		if isErr || m["matches"] != want {
			t.Fatalf("path %s: %v, want matches %q", path, m, want)
		}
	}
	m, isErr := call(t, Grep{Root: dir}, `{"pattern":"sauce","path":"."}`)
	if isErr || m["matches"] != filepath.Join(dir, ".hidden")+":1:secret sauce\n" {
		t.Fatalf("hidden file: %v", m)
	}
	m, isErr = call(t, Grep{Root: dir}, `{"pattern":"^func","path":"sub"}`)
	if isErr || m["matches"] != filepath.Join(dir, "sub", "a.go")+":2:func Alpha() {}\n" {
		t.Fatalf("sub, not recursive: %v, want only sub/a.go (not sub/deep)", m)
	}
	m, isErr = call(t, Grep{Root: dir}, `{"pattern":"x","path":"sub/deep/.."}`)
	if isErr || m["matches"] != "" {
		t.Fatalf("no match: %v", m)
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if m, isErr := call(t, Grep{Root: dir}, `{"pattern":"x","path":"empty"}`); isErr || m["matches"] != "" {
		t.Fatalf("empty directory: %v", m)
	}
	if m, isErr := call(t, Grep{Root: dir}, `{"pattern":"a\\{1","path":"."}`); !isErr || !strings.HasPrefix(m["error"], "invalid pattern") {
		t.Fatalf("a bad pattern on a directory: %v", m)
	}
}

func TestConfinement(t *testing.T) {
	dir := fixture(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "x.txt"), []byte("outside\n"), 0o644)
	os.Symlink(outside, filepath.Join(dir, "link-out"))
	os.Symlink(filepath.Join(outside, "x.txt"), filepath.Join(dir, "file-out"))
	os.Symlink(filepath.Join(dir, "five.txt"), filepath.Join(dir, "link-in"))
	for _, tl := range All(dir) {
		for _, p := range []string{"../" + filepath.Base(outside), filepath.Join(outside, "x.txt"), "link-out", "link-out/x.txt", "file-out", "sub/../../x"} {
			input := `{"path":` + q(p) + `}`
			if tl.Name() == "grep" {
				input = `{"pattern":"o","path":` + q(p) + `}`
			}
			if m, isErr := call(t, tl, input); !isErr || m["error"] != ErrEscape.Error() {
				t.Errorf("%s %s: %v, want %q", tl.Name(), p, m, ErrEscape)
			}
		}
	}
	// A link that stays inside is fine; without a root, paths are free.
	if m, isErr := call(t, Read{Root: dir}, `{"path":"link-in","end_line":1}`); isErr || m["content"] != "one" {
		t.Errorf("inside link: %v", m)
	}
	if m, isErr := call(t, Read{}, `{"path":`+q(filepath.Join(outside, "x.txt"))+`}`); isErr || m["content"] != "outside\n" {
		t.Errorf("free path: %v", m)
	}
}

// TestPermissionDenied runs the tools as the unprivileged user nobody
// (uid 65534), in a copy of this test binary, on a file and a directory
// with mode 0: as root the check would pass vacuously.
func TestPermissionDenied(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Log("not root: running the tools in-process (the files are unreadable to this user too)")
	}
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // nobody must reach the files
	os.Chmod(dir, 0o755)
	locked := filepath.Join(dir, "locked.txt")
	os.WriteFile(locked, []byte("no\n"), 0o644)
	os.Chmod(locked, 0)
	lockedDir := filepath.Join(dir, "lockeddir")
	os.Mkdir(lockedDir, 0)
	bin := filepath.Join(dir, "tool.test")
	self, _ := os.Executable()
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bin, data, 0o755)

	runAs := func(name, input string) string {
		if os.Geteuid() != 0 {
			for _, tl := range All("") {
				if tl.Name() == name {
					out, _ := tl.Execute(context.Background(), json.RawMessage(input))
					return out
				}
			}
		}
		cmd := exec.Command(bin)
		cmd.Env = []string{"TOOL_TEST_RUN=" + name, "TOOL_TEST_INPUT=" + input, "PATH=/usr/bin:/bin"}
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s as nobody: %v", name, err)
		}
		return string(out)
	}
	for _, c := range []struct{ name, input string }{
		{"read", `{"path":` + q(locked) + `}`},
		{"list_dir", `{"path":` + q(lockedDir) + `}`},
		{"grep", `{"pattern":"no","path":` + q(locked) + `}`},
	} {
		if out := runAs(c.name, c.input); out != `{"error":"permission denied"}` {
			t.Errorf("%s on a mode-0 path: %s, want permission denied", c.name, out)
		}
	}
}

func TestSchemasAreJSON(t *testing.T) {
	for _, tl := range All("") {
		var s struct {
			Type     string         `json:"type"`
			Props    map[string]any `json:"properties"`
			Required []string       `json:"required"`
		}
		if err := json.Unmarshal(tl.InputSchema(), &s); err != nil || s.Type != "object" || len(s.Required) == 0 || tl.Description() == "" {
			t.Errorf("%s: schema %s (%v)", tl.Name(), tl.InputSchema(), err)
		}
	}
}
