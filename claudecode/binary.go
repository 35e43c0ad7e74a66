package claudecode

import (
	"context"

	"errors"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/lazyre"
	"github.com/chirality/harness/internal/secrets"
)

// TestedCLIVersion is the Claude Code version this driver's contract tests
// run against (package.json pins it). Other versions work but are warned
// about: the stream format is not versioned.
const TestedCLIVersion = "2.1.329"

// EnvClaudeBin names the variable consulted for the CLI's path.
const EnvClaudeBin = "HARNESS_CLAUDE_BIN"

// FindBinary resolves the claude executable with the one search every
// command and engine uses (engine.FindBinary): explicit (a path or a name
// on PATH) when given, else $HARNESS_CLAUDE_BIN, else claude on PATH, else
// ./node_modules/.bin/claude, else node_modules/.bin/claude beside the
// running executable (a checkout's bin/harness finds the CLI its `make
// cli` pinned, from any directory). An explicit or configured path that
// does not exist is an error rather than a silent fallback. The error is a
// *engine.BinaryNotFoundError naming every place tried (it matches
// engine.ErrBinaryNotFound and engine.ErrUnavailable).
func FindBinary(explicit string) (string, error) {
	return engine.FindBinary(engine.Binary{Name: "claude", Explicit: explicit, EnvVar: EnvClaudeBin,
		Install: "`make cli` in a harness checkout, or `npm install @anthropic-ai/claude-code@" + TestedCLIVersion + "`"})
}

var versionPattern = lazyre.New(`\d+\.\d+\.\d+[0-9A-Za-z.+-]*`)

// CLIVersion runs `bin --version` (for at most 10 s) and returns the
// version number it prints ("2.1.329").
func CLIVersion(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = secrets.FilterEnv(os.Environ(), nil)
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
