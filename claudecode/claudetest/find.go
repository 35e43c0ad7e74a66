package claudetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/engine"
)

// FindCLI returns the claude CLI for tests, in the driver's order:
// $HARNESS_CLAUDE_BIN, claude on PATH, then node_modules/.bin/claude in the
// working directory or any parent (tests run in package directories, the
// pinned CLI is installed at the module root). It fails the test, naming
// every place tried, when there is none: tests that need the real CLI
// must not pass silently without it (`make cli` installs it).
func FindCLI(t testing.TB) string {
	t.Helper()
	p, err := LookupCLI()
	if err != nil {
		t.Fatalf("%v; run `make cli` to install the pinned CLI", err)
	}
	return p
}

// LookupCLI is FindCLI without a testing.TB.
func LookupCLI() (string, error) {
	var tried []string
	if env := os.Getenv(claudecode.EnvClaudeBin); env != "" {
		return claudecode.FindBinary(env)
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p, nil
	}
	tried = append(tried, "$"+claudecode.EnvClaudeBin, "claude on $PATH")
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		candidate := filepath.Join(dir, "node_modules", ".bin", "claude")
		tried = append(tried, candidate)
		if st, err := os.Stat(candidate); err == nil && !st.IsDir() {
			return candidate, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", &engine.BinaryNotFoundError{Name: "claude", Tried: compact(tried)}
}

func compact(paths []string) []string {
	if len(paths) <= 6 {
		return paths
	}
	return append(paths[:4:4], "… "+strings.TrimSpace(paths[len(paths)-1]))
}

// BaseEnv is the environment the real CLI needs to run in isolation: home
// (where it keeps its transcripts; --resume reads them from there), PATH
// for the tools it runs, and a UTF-8 locale. Add [FakeAPI.Env] to point it
// at a fake.
func BaseEnv(home string) []string {
	return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}
}

// ScratchEnv is BaseEnv with a fresh temporary home that t removes.
func ScratchEnv(t testing.TB) []string {
	t.Helper()
	return BaseEnv(t.TempDir())
}
