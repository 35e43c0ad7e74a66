package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/chirality/harness/internal/procgroup"
)

// overrides are set on every git call with -c: they win over any config
// file, so a config planted in the store (the agent can write into the
// project) cannot run a program (hooks, fsmonitor, filters), and the bytes
// git stores and writes back are the bytes on disk (no line-ending or
// attribute conversion).
var overrides = []string{
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.untrackedCache=false",
	"core.splitIndex=false",
	"core.sparseCheckout=false",
	"core.autocrlf=false",
	"core.safecrlf=false",
	"core.symlinks=true",
	"core.fileMode=true",
	"core.ignoreCase=false",
	"core.precomposeUnicode=false",
	"core.protectNTFS=true",
	"core.quotePath=false",
	"core.attributesFile=/dev/null",
	"core.excludesFile=/dev/null",
	"core.bare=true",
	"diff.noprefix=false",
	"diff.mnemonicPrefix=false",
	"diff.relative=false",
	"gc.auto=0",
	"maintenance.auto=false",
	"index.version=2",
	"index.sparse=false",
	"feature.manyFiles=false",
	"advice.addIgnoredFile=false",
	"advice.addEmbeddedRepo=false",
	"color.ui=false",
}

// env is the whole environment of every git call: nothing from the
// parent but PATH, so no GIT_* variable of the caller (GIT_DIR,
// GIT_INDEX_FILE, GIT_CONFIG_*) can point git at the user's repository,
// and no user or system config is read.
func (s *Store) env(index string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + s.gitDir,
		"XDG_CONFIG_HOME=" + s.gitDir,
		"LC_ALL=C",
		"GIT_DIR=" + s.gitDir,
		"GIT_WORK_TREE=" + s.root,
		"GIT_INDEX_FILE=" + index,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_PAGER=cat",
	}
}

// errCapped is returned by a capBuffer's Write once its limit is reached.
var errCapped = errors.New("checkpoint: output limit reached")

// capBuffer keeps at most max bytes; a write past it fails, which makes
// os/exec close the pipe and the child stop (SIGPIPE).
type capBuffer struct {
	buf    bytes.Buffer
	max    int
	capped bool
}

func (b *capBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); len(p) > room {
		b.buf.Write(p[:max(room, 0)])
		b.capped = true
		return max(room, 0), errCapped
	}
	return b.buf.Write(p)
}

// tailBuffer keeps the last max bytes written (git's stderr).
type tailBuffer struct {
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// GitError is a git call that failed: its subcommand, how it ended and
// the end of what it said on stderr.
type GitError struct {
	Command string // "add", "write-tree", …
	Err     error  // the exit status, or the context's error on a deadline
	Stderr  string // the last KiB of stderr, trimmed
}

func (e *GitError) Error() string {
	msg := "checkpoint: git " + e.Command + ": " + e.Err.Error()
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *GitError) Unwrap() error { return e.Err }

// call is one git invocation.
type call struct {
	args    []string
	stdin   []byte
	index   string // GIT_INDEX_FILE ("" = the store's)
	max     int    // stdout bytes kept (0 = 1 MiB)
	capOK   bool   // reaching max is not an error (the output is cut)
	okCodes []int  // exit codes that are success besides 0
}

// run runs git with the store's environment under the store's deadline.
// It returns stdout and whether it was cut at c.max.
func (s *Store) run(ctx context.Context, c call) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	args := make([]string, 0, 2*len(overrides)+len(c.args))
	for _, o := range overrides {
		args = append(args, "-c", o)
	}
	args = append(args, c.args...)
	cmd := exec.CommandContext(ctx, s.gitPath, args...)
	cmd.Dir = s.root
	index := c.index
	if index == "" {
		index = s.index
	}
	cmd.Env = s.env(index)
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	max := c.max
	if max <= 0 {
		max = 1 << 20
	}
	out := &capBuffer{max: max}
	errTail := &tailBuffer{max: 1024}
	cmd.Stdout, cmd.Stderr = out, errTail
	procgroup.Set(cmd)
	cmd.Cancel = func() error { return procgroup.Signal(cmd.Process.Pid, procgroup.Kill) }
	cmd.WaitDelay = time.Second
	name := c.args[0] // the subcommand, after any -c
	for i := 0; i+2 < len(c.args) && c.args[i] == "-c"; i += 2 {
		name = c.args[i+2]
	}
	err := cmd.Run()
	if out.capped {
		if c.capOK {
			return out.buf.Bytes(), true, nil
		}
		return nil, true, &GitError{Command: name, Err: fmt.Errorf("output over %d bytes", max)}
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			for _, ok := range c.okCodes {
				if ee.ExitCode() == ok {
					return out.buf.Bytes(), false, nil
				}
			}
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (after %v)", ctx.Err(), s.o.Timeout)
		}
		return nil, false, &GitError{Command: name, Err: err, Stderr: strings.TrimSpace(string(errTail.b))}
	}
	return out.buf.Bytes(), false, nil
}
