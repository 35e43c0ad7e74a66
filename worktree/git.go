// Package worktree gives a harness session a git worktree of its own: a
// new branch checked out outside the project's tree, the diff of what the
// session changed since its base, and the merge of that branch back.
//
// Every operation runs the real git binary, bounded by a deadline, with
// hooks off (core.hooksPath=/dev/null), no system or global configuration
// (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null), no terminal prompt
// and no GIT_DIR-like variable inherited from the caller, so neither the
// user's configuration nor a repository's hooks run on the harness's
// behalf. Commits the harness makes are authored "harness".
//
// A worktree's git files are not trusted. An agent may write its
// worktree's .git file (not when sandboxed: package sandbox keeps a
// workdir's .git) and a sandboxed one its worktree's own git directory
// (.git/worktrees/<name>/, see Manager.Grants), whose commondir names the
// repository git takes its configuration from: pointed at a repository
// of the agent's, with a .gitattributes naming its textconv, filter,
// merge driver or external diff, it would have the harness's next git
// command in the worktree run that outside the sandbox. So every git
// command the harness runs in a worktree has GIT_DIR, GIT_COMMON_DIR and
// GIT_WORK_TREE set (GIT_COMMON_DIR overrides the commondir file: the
// tests prove it on the real binary), found by reading the .git file,
// which must name a directory worktrees/<name> of a repository outside
// the worktree whose gitdir names that .git file (or be the worktree's
// own, by git's naming); commondir and gitdir are written back as git
// wrote them, and a config.worktree (read when the repository has
// extensions.worktreeConfig on) is moved aside, as the harness writes
// none (Manager.OnRepair is told; the harness logs a warning).
// Manager.Expect checks the .git file (or a .git directory put in its
// place) names the session's repository, before anything is put back,
// and records it, so that later commands fail with ErrTampered when it
// is changed; Create, Settle, Unmerged and Merge call it, and the
// harness does before Diff and Grants, and ExpectRepo for an orphan's
// worktree. Diffs pass --no-ext-diff and --no-textconv all the same.
package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// DefaultTimeout bounds one git command.
const DefaultTimeout = 2 * time.Minute

// MaxMessage bounds a merge's commit message (it is passed to git as an
// argument, and an argument is limited to 128 KiB).
const MaxMessage = 64 << 10

// maxOutput bounds what is kept of one git command's standard output.
const maxOutput = 64 << 20

// Errors callers branch on (errors.Is).
var (
	// ErrNoGit: no git binary on PATH.
	ErrNoGit = errors.New("worktree: git not found on PATH")
	// ErrNotRepo: the project is not inside a git repository.
	ErrNotRepo = errors.New("not a git repository")
	// ErrNoBase: the base named is not a commit of the repository.
	ErrNoBase = errors.New("base not found")
	// ErrBadBranch: the branch name is not a valid git branch name or
	// exists already.
	ErrBadBranch = errors.New("invalid branch")
	// ErrDirty: the target's working tree has uncommitted changes.
	ErrDirty = errors.New("target working tree has uncommitted changes")
	// ErrConflict: the merge conflicts; the error is a *ConflictError.
	ErrConflict = errors.New("merge conflicts")
	// ErrUnmerged: the worktree has changes that are not merged.
	ErrUnmerged = errors.New("unmerged changes")
	// ErrBadStrategy: the strategy is not squash, merge or rebase.
	ErrBadStrategy = errors.New("invalid merge strategy: want squash, merge or rebase")
	// ErrBadMessage: the commit message is over MaxMessage or holds a NUL.
	ErrBadMessage = errors.New("invalid commit message")
)

// ConflictError names the paths a merge conflicts on.
type ConflictError struct {
	Paths []string
}

func (e *ConflictError) Error() string {
	return "merge conflicts in " + strings.Join(e.Paths, ", ") + "; the target branch was left untouched"
}

func (e *ConflictError) Is(t error) bool { return t == ErrConflict }

// gitError is a git command that failed: its arguments (no secret is ever
// an argument) and the end of its standard error.
type gitError struct {
	args   []string
	code   int
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if len(msg) > 2000 {
		msg = msg[len(msg)-2000:]
	}
	if msg == "" {
		msg = e.err.Error()
	}
	return "git " + strings.Join(e.args, " ") + ": " + msg
}

func (e *gitError) Unwrap() error { return e.err }

// exitCode returns the exit status of a failed git command, -1 if it did
// not run to an exit.
func exitCode(err error) int {
	var ge *gitError
	if errors.As(err, &ge) {
		return ge.code
	}
	return -1
}

// env is the environment of every git command: the caller's without
// variables that would redirect git or load a user's configuration.
func env(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || k == "LANG" || strings.HasPrefix(k, "LC_") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=harness", "GIT_AUTHOR_EMAIL=harness@localhost",
		"GIT_COMMITTER_NAME=harness", "GIT_COMMITTER_EMAIL=harness@localhost",
		"LC_ALL=C")
	return append(out, extra...)
}

// runner runs git commands with one deadline each.
type runner struct {
	timeout time.Duration
}

// git runs git in dir with args and returns its standard output. extraEnv
// adds variables (GIT_INDEX_FILE).
func (r runner) git(ctx context.Context, dir string, extraEnv []string, args ...string) ([]byte, error) {
	return r.run(ctx, dir, extraEnv, nil, args...)
}

// gitIn is git with stdin as the command's standard input.
func (r runner) gitIn(ctx context.Context, dir string, stdin io.Reader, args ...string) ([]byte, error) {
	return r.run(ctx, dir, nil, stdin, args...)
}

func (r runner) run(ctx context.Context, dir string, extraEnv []string, stdin io.Reader, args ...string) ([]byte, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, ErrNoGit
	}
	t := r.timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	full := append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
		"-c", "commit.gpgSign=false", "-c", "core.quotePath=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = env(extraEnv...)
	cmd.WaitDelay = 5 * time.Second
	var stdout limitedBuffer
	stdout.max = maxOutput
	var stderr limitedBuffer
	stderr.max = 64 << 10
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (after %s)", ctx.Err(), t)
		}
		return stdout.Bytes(), &gitError{args: args, code: code, stderr: stderr.String(), err: err}
	}
	if stdout.over {
		return nil, fmt.Errorf("git %s: output over %d bytes", strings.Join(args, " "), maxOutput)
	}
	return stdout.Bytes(), nil
}

// out is git returning its output trimmed, as a string.
func (r runner) out(ctx context.Context, dir string, args ...string) (string, error) {
	b, err := r.git(ctx, dir, nil, args...)
	return strings.TrimSpace(string(b)), err
}

// limitedBuffer keeps at most max bytes and notes that it dropped some.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room < len(p) {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
