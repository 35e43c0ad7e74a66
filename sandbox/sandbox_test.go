package sandbox_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/internal/gittest"
	"github.com/chirality/harness/internal/protect"
	"github.com/chirality/harness/sandbox"
)

// The test binary is its own sandbox entry.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

// project makes a workdir with protected entries, a source dir, a file at
// the top, a symlink planted to point outside, and a directory outside.
func project(t testing.TB) (wd, outside string) {
	t.Helper()
	root := t.TempDir()
	wd = filepath.Join(root, "proj")
	outside = filepath.Join(root, "outside")
	for _, d := range []string{wd, outside, filepath.Join(wd, ".chirality"), filepath.Join(wd, "agents"), filepath.Join(wd, "src"), filepath.Join(wd, ".claude")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"README.md", ".mcp.json", ".claude/settings.json", ".claude/notes.md"} {
		if err := os.WriteFile(filepath.Join(wd, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(wd, "link")); err != nil {
		t.Fatal(err)
	}
	return wd, outside
}

// sh runs script through the sandbox entry in wd and returns its output
// and error.
func sh(t *testing.T, wd, home, script string) (string, error) {
	t.Helper()
	c, err := sandbox.Wrap(sandbox.Spec{Workdir: wd, Protected: protect.Paths(wd), Writable: []string{filepath.Join(home, ".state") + "/"}}, []string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), c.Env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestSandboxWrites(t *testing.T) {
	wd, outside := project(t)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	denied := map[string]string{
		"parent":          "echo x > ../outside/a",
		"absolute":        "echo x > " + filepath.Join(outside, "b"),
		"chirality":       "echo x > .chirality/x",
		"agents":          "echo x > agents/x",
		"mcp.json":        "echo x > .mcp.json",
		"claude settings": "echo x > .claude/settings.json",
		"bashrc":          "echo x >> " + filepath.Join(home, ".bashrc"),
		"symlink":         "echo x > link/c",
		"grandchild":      "sh -c 'echo x > " + filepath.Join(outside, "d") + "'",
		"new top-level":   "echo x > new.txt",
		"rm protected":    "rm .mcp.json",
		"mkdir protected": "mkdir .chirality/sub",
	}
	for name, script := range denied {
		t.Run(name, func(t *testing.T) {
			out, err := sh(t, wd, home, script)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || !strings.Contains(strings.ToLower(out), "permission denied") {
				t.Errorf("%q: err %v, output %q; want a permission error", script, err, out)
			}
		})
	}
	allowed := []string{
		"echo x > src/in.txt && mkdir -p src/a/b && echo y > src/a/b/c && mv src/a/b/c src/moved && rm src/in.txt",
		"echo changed > README.md",
		"echo x > .claude/notes.md",
		"echo x > $TMPDIR/t && cat $TMPDIR/t",
		"mkdir -p " + filepath.Join(home, ".state", "s") + " && echo x > " + filepath.Join(home, ".state", "s", "f"),
		"echo x > /dev/null",
		"cat .chirality/../README.md >/dev/null",
	}
	for _, script := range allowed {
		if out, err := sh(t, wd, home, script); err != nil {
			t.Errorf("%q: %v\n%s", script, err, out)
		}
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 0 {
		t.Errorf("something was written outside: %v", ents)
	}
	for _, p := range []string{".chirality/x", "agents/x", "new.txt", ".chirality/sub"} {
		if _, err := os.Stat(filepath.Join(wd, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(wd, ".mcp.json")); string(b) != "x\n" {
		t.Errorf(".mcp.json = %q, want it untouched", b)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != "# rc\n" {
		t.Errorf(".bashrc = %q, want it untouched", b)
	}
	if b, _ := os.ReadFile(filepath.Join(wd, "README.md")); string(b) != "changed\n" {
		t.Errorf("README.md = %q, want the sandboxed write", b)
	}
	if b, _ := os.ReadFile(filepath.Join(wd, "src", "moved")); string(b) != "y\n" {
		t.Errorf("src/moved = %q", b)
	}
}

func TestWrapRefusesWritableAboveWorkdir(t *testing.T) {
	wd, _ := project(t)
	_, err := sandbox.Wrap(sandbox.Spec{Workdir: wd, Writable: []string{filepath.Dir(wd) + "/"}}, []string{"true"})
	if err == nil || !strings.Contains(err.Error(), "contains the workdir") {
		t.Errorf("err = %v, want a refusal", err)
	}
}

func TestEntryFailsClosed(t *testing.T) {
	exe, _ := os.Executable()
	// A workdir that does not exist: the entry must not run the command.
	out, err := exec.Command(exe, sandbox.Entry, "--workdir", filepath.Join(t.TempDir(), "missing"), "--", "sh", "-c", "echo ran").CombinedOutput()
	if err == nil || strings.Contains(string(out), "ran") {
		t.Errorf("err %v, output %q: the command ran", err, out)
	}
}

// A writable state dir that is, or holds, a protected path (HOME is the
// workdir) is left out: .claude/settings.json stays read-only.
func TestWritableNeverUnprotects(t *testing.T) {
	wd, _ := project(t)
	c, err := sandbox.Wrap(sandbox.Spec{Workdir: wd, Writable: []string{filepath.Join(wd, ".claude") + "/"}}, []string{"sh", "-c", "echo x > .claude/settings.json"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Dir = wd
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "ermission denied") {
		t.Errorf("err %v, output %q: want a permission error", err, out)
	}
}

// A kernel without Landlock: asking for the sandbox is ErrUnavailable,
// never a command that would run unsandboxed.
func TestNoLandlockRefuses(t *testing.T) {
	wd, _ := project(t)
	defer sandbox.NoLandlock()()
	c, err := sandbox.Wrap(sandbox.Spec{Workdir: wd}, []string{"true"})
	if !errors.Is(err, sandbox.ErrUnavailable) || c != nil {
		t.Errorf("Wrap = %v, %v; want ErrUnavailable", c, err)
	}
	if _, err := sandbox.Available(); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("Available: %v", err)
	}
}

// TestRepositoryReadOnly: the workdir's own .git stays read-only to a
// sandboxed agent. Its configuration and hooks run as the person's git,
// outside the sandbox: a core.fsmonitor or a hook written there runs at
// the person's next `git status` or commit, a smudge filter (with an
// attributes line) at the harness's next `git worktree add`. A worktree's
// .git file, which names the repository the harness's git commands
// trust, is kept the same way.
func TestRepositoryReadOnly(t *testing.T) {
	wd, _ := project(t)
	home := t.TempDir()
	gittest.Init(t, wd)
	denied := map[string]string{
		"config":     "printf '[core]\\n\\tfsmonitor = touch /tmp/escaped\\n' >> .git/config",
		"hook":       "mkdir -p .git/hooks && echo 'touch /tmp/escaped' > .git/hooks/pre-commit",
		"attributes": "mkdir -p .git/info && echo '* filter=x' > .git/info/attributes",
		"rm -r":      "rm -rf .git",
	}
	for name, script := range denied {
		t.Run(name, func(t *testing.T) {
			out, err := sh(t, wd, home, script)
			if err == nil {
				t.Errorf("%q: output %q; want it refused", script, out)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(wd, ".git", "config")); strings.Contains(string(b), "fsmonitor") {
		t.Errorf(".git/config was changed: %q", b)
	}
	for _, p := range []string{".git/hooks/pre-commit", ".git/info/attributes"} {
		if _, err := os.Stat(filepath.Join(wd, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	// the rest of the project stays writable
	if out, err := sh(t, wd, home, "echo y > src/new.txt && echo z > README.md"); err != nil {
		t.Errorf("a write to the project: %v\n%s", err, out)
	}

	// a worktree's .git file
	wt := filepath.Join(t.TempDir(), "wt")
	gittest.Git(t, wd, "worktree", "add", "-q", "-b", "w", wt)
	before, err := os.ReadFile(filepath.Join(wt, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := sh(t, wt, home, "echo 'gitdir: /tmp/elsewhere' > .git"); err == nil {
		t.Errorf("the worktree's .git file was rewritten: %q", out)
	}
	if after, _ := os.ReadFile(filepath.Join(wt, ".git")); string(after) != string(before) {
		t.Errorf("the worktree's .git = %q, want %q", after, before)
	}
}
