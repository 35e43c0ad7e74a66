package claudecode

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// TestedCLIVersion is the Claude Code version this driver's contract tests
// run against (package.json pins it). Other versions work but are warned
// about: the stream format is not versioned.
const TestedCLIVersion = "2.1.329"

// EnvClaudeBin names the variable consulted for the CLI's path.
const EnvClaudeBin = "HARNESS_CLAUDE_BIN"

// FindBinary resolves the claude executable: explicit (a path or a name
// on PATH) when given, else $HARNESS_CLAUDE_BIN, else claude on PATH, else
// ./node_modules/.bin/claude. An explicit or configured path that does not
// exist is an error rather than a silent fallback. The error is a
// *BinaryNotFoundError naming every place tried.
func FindBinary(explicit string) (string, error) {
	var tried []string
	if explicit != "" {
		if p, ok := lookExecutable(explicit); ok {
			return p, nil
		}
		return "", &BinaryNotFoundError{Tried: []string{explicit + " (given)"}}
	}
	if env := os.Getenv(EnvClaudeBin); env != "" {
		if p, ok := lookExecutable(env); ok {
			return p, nil
		}
		return "", &BinaryNotFoundError{Tried: []string{env + " ($" + EnvClaudeBin + ")"}}
	}
	tried = append(tried, "$"+EnvClaudeBin+" (unset)")
	if p, err := exec.LookPath("claude"); err == nil {
		return p, nil
	}
	tried = append(tried, "claude on $PATH")
	local := filepath.Join("node_modules", ".bin", "claude")
	if abs, err := filepath.Abs(local); err == nil {
		local = abs
	}
	if p, ok := lookExecutable(local); ok {
		return p, nil
	}
	tried = append(tried, local)
	return "", &BinaryNotFoundError{Tried: tried}
}

func lookExecutable(p string) (string, bool) {
	if !strings.ContainsRune(p, os.PathSeparator) {
		found, err := exec.LookPath(p)
		return found, err == nil
	}
	st, err := os.Stat(p)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", false
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return p, true
}

var versionPattern = regexp.MustCompile(`\d+\.\d+\.\d+[0-9A-Za-z.+-]*`)

// CLIVersion runs `bin --version` (for at most 10 s) and returns the
// version number it prints ("2.1.329").
func CLIVersion(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = FilterEnv(os.Environ(), nil)
	out := &capped{max: 4096}
	cmd.Stdout = out
	if err := cmd.Run(); err != nil {
		return "", err
	}
	v := versionPattern.FindString(string(out.b))
	if v == "" {
		return "", errors.New("claudecode: no version in `claude --version` output: " + strings.TrimSpace(string(out.b)))
	}
	return v, nil
}

// capped keeps the first max bytes written to it and discards the rest.
type capped struct {
	b   []byte
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
