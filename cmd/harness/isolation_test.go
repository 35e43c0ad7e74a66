package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chirality/harness/internal/gittest"
)

// `agent serve --isolation worktree --base main --branch B` makes its
// session in a git worktree of its own on branch B, outside the
// project's tree, and says where; a base that does not exist is a usage
// error naming it.
func TestAgentServeIsolationWorktree(t *testing.T) {
	fakeAPIEnv(t)
	cwd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(cwd, "README.md"), []byte("# p\n"), 0o644)
	gittest.Init(t, cwd)

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
