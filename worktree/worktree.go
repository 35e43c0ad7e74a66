package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chirality/harness/internal/keylock"
)

// Harness excludes its own state (a project's .chirality directories) from
// every diff and commit: it never becomes part of a session's branch.
const excludeState = ":(exclude,glob)**/.chirality/**"

// MaxPatch bounds Diff.Patch; a longer patch is cut and Diff.Truncated set.
const MaxPatch = 4 << 20

// Manager does the git work of worktree sessions. Operations that change
// a repository's refs or worktrees are serialised per repository; a
// Manager is safe for concurrent use.
type Manager struct {
	r     runner
	locks keylock.Map // by repository top-level directory
	// expect: the common git directory (real path) of each worktree
	// (by its top directory) whose repository the harness knows (Expect)
	expect sync.Map

	// OnRepair, when set (before the Manager is used), is told each
	// file of a worktree's git directory found changed and put back
	// (commondir, gitdir, config.worktree: see the package's doc).
	OnRepair func(worktree, what string)
}

// New returns a Manager whose git commands each run at most timeout (0 =
// DefaultTimeout).
func New(timeout time.Duration) *Manager {
	return &Manager{r: runner{timeout: timeout}}
}

// Info is where a session's worktree is.
type Info struct {
	// Top is the repository's top-level directory (the main worktree).
	Top string
	// Dir is the worktree's directory; Workdir is the project's directory
	// inside it (Dir itself unless the project is a subdirectory of its
	// repository).
	Dir, Workdir string
	// Branch is the new branch checked out there.
	Branch string
	// Base is the ref named (or the branch the project had checked out,
	// "HEAD" when detached); BaseCommit the commit it resolved to.
	Base, BaseCommit string
	// FetchError says why a remote base could not be fetched: the
	// worktree was then made from the remote-tracking ref as it was.
	FetchError string
}

// CreateOptions says what worktree to make.
type CreateOptions struct {
	// ProjectRoot is the project's directory (absolute, in a repository).
	ProjectRoot string
	// Dir is where the worktree goes; it must not exist.
	Dir string
	// Branch is the new branch's name; it must not exist.
	Branch string
	// Base is the commit-ish the branch starts at ("" = the project's
	// HEAD); a remote-tracking ref of a remote the repository has
	// (origin/main) is fetched first (see fetchBase).
	Base string
}

// Toplevel returns the top-level directory of the repository dir is in,
// or an error wrapping ErrNotRepo.
func (m *Manager) Toplevel(ctx context.Context, dir string) (string, error) {
	top, err := m.r.out(ctx, dir, "rev-parse", "--show-toplevel")
	if errors.Is(err, ErrNoGit) {
		return "", err
	}
	if err != nil || top == "" {
		return "", fmt.Errorf("%w: %s is not inside a git repository (run git init there, or create the session without isolation)", ErrNotRepo, dir)
	}
	if real, err := filepath.EvalSymlinks(top); err == nil {
		top = real
	}
	return top, nil
}

// Create makes a worktree on a new branch from the base. It fails with
// ErrNotRepo, ErrNoBase or ErrBadBranch before anything is written (but
// the remote-tracking ref of a remote base, fetched).
func (m *Manager) Create(ctx context.Context, o CreateOptions) (*Info, error) {
	root, err := filepath.EvalSymlinks(o.ProjectRoot)
	if err != nil {
		return nil, err
	}
	top, err := m.Toplevel(ctx, root)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(top, root)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("%w: %s is not inside %s", ErrNotRepo, root, top)
	}
	if err := m.checkNewBranch(ctx, top, o.Branch); err != nil {
		return nil, err
	}
	base, commit, fetchErr, err := m.resolveFetched(ctx, top, o.Base)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(o.Dir), 0o700); err != nil {
		return nil, err
	}
	unlock := m.locks.Lock(top)
	defer unlock()
	// Parallel checkout (a worker per core): the files are most of the
	// time, and git checks them out one by one by default (BENCHMARKS.md).
	if _, err := m.r.git(ctx, top, nil, "-c", "checkout.workers=0", "worktree", "add", "-q", "--no-track", "-b", o.Branch, o.Dir, commit); err != nil {
		return nil, err
	}
	wd := o.Dir
	if rel != "." {
		wd = filepath.Join(o.Dir, rel)
	}
	if err := m.Expect(ctx, top, o.Dir); err != nil {
		return nil, err
	}
	info := &Info{Top: top, Dir: o.Dir, Workdir: wd, Branch: o.Branch, Base: base, BaseCommit: commit}
	if fetchErr != nil {
		info.FetchError = fetchErr.Error()
	}
	return info, nil
}

// ResolveBase returns the name and commit of base in the repository
// dir is in ("" = its HEAD: the branch checked out, or "HEAD" when
// detached), a remote's ref fetched first as Create does. It fails with
// ErrNotRepo or ErrNoBase.
func (m *Manager) ResolveBase(ctx context.Context, dir, base string) (name, commit string, err error) {
	top, err := m.Toplevel(ctx, dir)
	if err != nil {
		return "", "", err
	}
	name, commit, _, err = m.resolveFetched(ctx, top, base)
	return name, commit, err
}

// resolveFetched is resolveBase after fetching a remote's ref. A fetch
// that failed (offline, credentials wanted) is fetchErr when the ref is
// known locally all the same; otherwise the error says both.
func (m *Manager) resolveFetched(ctx context.Context, top, base string) (name, commit string, fetchErr, err error) {
	_, ferr := m.fetchBase(ctx, top, base)
	if errors.Is(ferr, ErrNoBase) {
		return "", "", nil, ferr
	}
	name, commit, err = m.resolveBase(ctx, top, base)
	if err != nil && ferr != nil {
		return "", "", nil, fmt.Errorf("%w (and %v)", err, ferr)
	}
	return name, commit, ferr, err
}

func (m *Manager) resolveBase(ctx context.Context, top, base string) (name, commit string, err error) {
	if base == "" {
		base = "HEAD"
		if b, err := m.r.out(ctx, top, "symbolic-ref", "--short", "-q", "HEAD"); err == nil && b != "" {
			base = b
		}
	}
	if strings.HasPrefix(base, "-") || strings.ContainsAny(base, "\x00\n") {
		return "", "", fmt.Errorf("%w: %q", ErrNoBase, base)
	}
	commit, err = m.r.out(ctx, top, "rev-parse", "--verify", "-q", base+"^{commit}")
	if err != nil || commit == "" {
		return "", "", fmt.Errorf("%w: %q is not a commit of %s (a branch, tag, commit or remote ref such as origin/main; an empty repository has none: commit first)", ErrNoBase, base, top)
	}
	return base, commit, nil
}

func (m *Manager) checkNewBranch(ctx context.Context, top, branch string) error {
	if branch == "" || strings.HasPrefix(branch, "-") {
		return fmt.Errorf("%w: %q", ErrBadBranch, branch)
	}
	if _, err := m.r.git(ctx, top, nil, "check-ref-format", "--branch", branch); err != nil {
		return fmt.Errorf("%w: %q is not a valid branch name", ErrBadBranch, branch)
	}
	if _, err := m.r.git(ctx, top, nil, "rev-parse", "--verify", "-q", "refs/heads/"+branch); err == nil {
		return fmt.Errorf("%w: branch %s exists already; name another", ErrBadBranch, branch)
	}
	return nil
}

// FileChange is one file of a Diff.
type FileChange struct {
	Path string `json:"path" doc:"relative to the repository's top"`
	// Status is added, modified, deleted or typechange.
	Status    string `json:"status" oa:"enum=added|modified|deleted|typechange,open"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	// Binary is true when git counts no lines (additions and deletions 0).
	Binary bool `json:"binary,omitempty" doc:"git counts no lines for this file"`
}

// Diff is what a worktree changed since its base: commits, uncommitted
// and untracked files alike.
type Diff struct {
	Base      string       `json:"base"`
	Branch    string       `json:"branch"`
	Files     []FileChange `json:"files"`
	Patch     string       `json:"patch" doc:"unified diff since the base (committed, uncommitted and untracked changes), cut at 4 MiB"`
	Truncated bool         `json:"truncated,omitempty" doc:"the patch was cut"`
}

// Diff returns what the worktree at dir changed since baseCommit. It reads
// the worktree through a copy of its index, so the worktree's own index
// is left as it is.
func (m *Manager) Diff(ctx context.Context, dir, baseCommit string) (*Diff, error) {
	_ = m.AdoptObjects(ctx, dir) // a sandboxed agent's commits (Grants); git says what is missing
	idx, cleanup, err := m.tempIndex(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	envIdx := []string{"GIT_INDEX_FILE=" + idx}
	if err := m.unhide(ctx, dir, envIdx); err != nil {
		return nil, err
	}
	if _, err := m.wgit(ctx, dir, envIdx, "add", "-A", "--", ":/", excludeState); err != nil {
		return nil, err
	}
	args := []string{"diff", "--cached", "--no-renames", "--no-ext-diff", "--no-textconv", "-z"}
	status, err := m.wgit(ctx, dir, envIdx, append(args, "--name-status", baseCommit, "--")...)
	if err != nil {
		return nil, err
	}
	numstat, err := m.wgit(ctx, dir, envIdx, append(args, "--numstat", baseCommit, "--")...)
	if err != nil {
		return nil, err
	}
	patch, err := m.wgit(ctx, dir, envIdx, "diff", "--cached", "--no-renames", "--no-ext-diff", "--no-textconv", baseCommit, "--")
	if err != nil {
		return nil, err
	}
	d := &Diff{Base: baseCommit, Files: parseChanges(status, numstat)}
	if len(patch) > MaxPatch {
		patch, d.Truncated = patch[:MaxPatch], true
	}
	d.Patch = string(patch)
	return d, nil
}

// parseChanges joins `--name-status -z` and `--numstat -z` output.
func parseChanges(status, numstat []byte) []FileChange {
	files := []FileChange{}
	byPath := map[string]int{}
	f := bytes.Split(status, []byte{0})
	for i := 0; i+1 < len(f); i += 2 {
		s := string(f[i])
		if s == "" {
			break
		}
		name := map[byte]string{'A': "added", 'M': "modified", 'D': "deleted", 'T': "typechange"}[s[0]]
		if name == "" {
			name = "modified"
		}
		byPath[string(f[i+1])] = len(files)
		files = append(files, FileChange{Path: string(f[i+1]), Status: name})
	}
	for _, rec := range bytes.Split(numstat, []byte{0}) {
		parts := strings.SplitN(string(rec), "\t", 3)
		if len(parts) != 3 {
			continue
		}
		i, ok := byPath[parts[2]]
		if !ok {
			continue
		}
		if parts[0] == "-" {
			files[i].Binary = true
			continue
		}
		files[i].Additions, _ = strconv.Atoi(parts[0])
		files[i].Deletions, _ = strconv.Atoi(parts[1])
	}
	return files
}

// tempIndex copies dir's index to a temporary file (so git's stat cache
// spares rehashing unchanged files) and returns its path.
func (m *Manager) tempIndex(ctx context.Context, dir string) (string, func(), error) {
	pd, err := m.pin(dir)
	if err != nil {
		return "", nil, err
	}
	p := filepath.Join(pd.gitDir, "index")
	tmp, err := os.CreateTemp("", "harness-index-*")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.Remove(tmp.Name()) }
	src, err := os.Open(p)
	if err == nil {
		_, err = io.Copy(tmp, src)
		src.Close()
	} else if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return tmp.Name(), cleanup, nil
}

// Dirty reports whether the worktree at dir has uncommitted changes
// (untracked files included; the harness's .chirality aside).
func (m *Manager) Dirty(ctx context.Context, dir string) (bool, error) {
	out, err := m.wgit(ctx, dir, nil, "status", "--porcelain", "-z", "--untracked-files=all", "--", ":/", excludeState)
	if err != nil {
		return false, err
	}
	return len(out) > 0, nil
}

// Commit commits every change of the worktree at dir (untracked files
// included, .chirality aside) on its branch with message, and returns
// the new commit, or "" when there was nothing to commit. What is
// committed is what the files hold: an index entry the agent hid from
// `git add -A` (skip-worktree, assume-unchanged) is compared again.
func (m *Manager) Commit(ctx context.Context, dir, message string) (string, error) {
	_ = m.AdoptObjects(ctx, dir) // a sandboxed agent's commits (Grants); git says what is missing
	if err := m.unhide(ctx, dir, nil); err != nil {
		return "", err
	}
	if _, err := m.wgit(ctx, dir, nil, "add", "-A", "--", ":/", excludeState); err != nil {
		return "", err
	}
	if _, err := m.wgit(ctx, dir, nil, "diff", "--cached", "--quiet", "--no-ext-diff", "--no-textconv"); err == nil {
		return "", nil
	} else if exitCode(err) != 1 {
		return "", err
	}
	if message == "" {
		message = "harness: session changes"
	}
	if _, err := m.wgit(ctx, dir, nil, "commit", "-q", "--no-verify", "-m", message); err != nil {
		return "", err
	}
	return m.wout(ctx, dir, "rev-parse", "HEAD")
}
