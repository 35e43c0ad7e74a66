package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
)

// `agent serve --isolation worktree --base main --branch B` makes its
// session in a git worktree of its own on branch B, outside the
// project's tree, and says where; a base that does not exist is a usage
// error naming it.
func TestAgentServeIsolationWorktree(t *testing.T) {
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	t.Setenv("ANTHROPIC_BASE_URL", api.URL)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-fake-for-tests")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	cwd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(cwd, "README.md"), []byte("# p\n"), 0o644)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "README.md"},
		{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgSign=false", "commit", "-q", "-m", "base"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = cwd
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}

	var out, errOut strings.Builder
	if code := run([]string{"agent", "serve", "--cwd", cwd, "--isolation", "worktree", "--base", "no-such-ref"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `"no-such-ref" is not a commit`) {
		t.Errorf("a missing base: exit %d, stderr %q", code, errOut.String())
	}

	a := startAgentServe(t, "--cwd", cwd, "--engine", "anthropic", "--warm", "0", "--isolation", "worktree", "--base", "main", "--branch", "feature/one")
	m := regexp.MustCompile(`harness agent: worktree (\S+) on branch feature/one \(from main\)`).FindStringSubmatch(a.out.String())
	if m == nil {
		t.Fatalf("no worktree line: %s", a.out.String())
	}
	wd := m[1]
	if wd == cwd || strings.HasPrefix(wd, cwd+string(filepath.Separator)) {
		t.Fatalf("the worktree %s is inside the project %s", wd, cwd)
	}
	if _, err := os.Stat(filepath.Join(wd, "README.md")); err != nil {
		t.Fatalf("the worktree lacks the base's file: %v", err)
	}
	head, err := exec.Command("git", "-C", wd, "symbolic-ref", "--short", "HEAD").Output()
	if err != nil || strings.TrimSpace(string(head)) != "feature/one" {
		t.Fatalf("the worktree's branch: %q %v", head, err)
	}
}
