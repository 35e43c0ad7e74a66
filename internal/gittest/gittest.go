// Package gittest runs git for tests as a person would, with none of the
// machine's configuration: a scratch HOME, no system config, a fixed
// author.
package gittest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Git runs git with args in dir and returns its output, trimmed; it fails
// the test when git does.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgSign=false",
		"-c", "core.hooksPath=/dev/null"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Init makes dir a repository on branch main with its files (.chirality
// aside) in one commit.
func Init(t testing.TB, dir string) {
	t.Helper()
	Git(t, dir, "init", "-q", "-b", "main")
	Git(t, dir, "add", "-A", "--", ".", ":(exclude).chirality")
	Git(t, dir, "commit", "-q", "-m", "first")
}
