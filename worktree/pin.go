package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ErrTampered: a worktree's git pointer (its .git file) does not name a
// worktree directory of a repository; the harness runs no git there.
var ErrTampered = errors.New("worktree: the worktree's .git file does not name a repository's worktree directory")

// pinned is where git is told a worktree's repository is (see pin).
type pinned struct {
	top    string // the worktree's top directory (the work tree)
	gitDir string // its own git directory
	common string // the repository's common git directory
	// repaired says what pin put back (see Manager.OnRepair)
	repaired []string
}

// env is the environment that pins git to p, whatever the worktree's
// git directory says.
func (p pinned) env(extra ...string) []string {
	e := []string{"GIT_DIR=" + p.gitDir, "GIT_WORK_TREE=" + p.top}
	if p.common != p.gitDir {
		e = append(e, "GIT_COMMON_DIR="+p.common)
	}
	return append(e, extra...)
}

// pin finds the repository of the worktree at dir (or a directory inside
// it) by reading files only, and restores what a sandboxed agent may have
// rewritten in its worktree's own git directory (which it may write: see
// Grants). That directory's commondir names the repository git reads its
// configuration from, so an agent that pointed it at a repository of its
// own could have the harness's next git command run a textconv, filter,
// merge driver or external diff of its choosing, outside the sandbox.
// Every git command the harness runs in a worktree therefore has GIT_DIR,
// GIT_COMMON_DIR and GIT_WORK_TREE set (GIT_COMMON_DIR overrides the
// commondir file), and pin puts commondir and gitdir back to what git
// wrote (../.. and the worktree's .git file), so that the agent's own
// git and git worktree list/prune find the repository again.
func (m *Manager) pin(dir string) (pinned, error) {
	p, err := pin(dir, func(top, common string) bool {
		want, ok := m.expect.Load(top)
		return !ok || want.(string) == common
	})
	if err != nil {
		return p, err
	}
	m.report(p)
	return p, nil
}

// pin is Manager.pin with accept (nil: any) saying whether the worktree
// at top may be of the repository whose common git directory (real
// path) is common; one it refuses is ErrTampered, and nothing in its git
// directory is put back.
func pin(dir string, accept func(top, common string) bool) (pinned, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return pinned{}, err
	}
	for {
		fi, err := os.Lstat(filepath.Join(d, ".git"))
		if err == nil {
			if fi.IsDir() {
				// a main worktree; or a repository an agent made in its
				// linked worktree, which the record refuses
				g := filepath.Join(d, ".git")
				if accept != nil && !accept(d, realPath(g)) {
					return pinned{}, fmt.Errorf("%w: %s is not the session's repository", ErrTampered, g)
				}
				return pinned{top: d, gitDir: g, common: g}, nil
			}
			if !fi.Mode().IsRegular() {
				return pinned{}, fmt.Errorf("%w: %s", ErrTampered, filepath.Join(d, ".git"))
			}
			return pinFile(d, accept)
		}
		up := filepath.Dir(d)
		if up == d {
			return pinned{}, fmt.Errorf("%w: %s is not inside a git repository", ErrNotRepo, dir)
		}
		d = up
	}
}

// pinFile pins the linked worktree at top, whose .git is a file.
func pinFile(top string, accept func(top, common string) bool) (pinned, error) {
	dotGit := filepath.Join(top, ".git")
	b, err := readSmall(dotGit)
	if err != nil {
		return pinned{}, err
	}
	rest, ok := strings.CutPrefix(string(b), "gitdir: ")
	if !ok {
		return pinned{}, fmt.Errorf("%w: %s", ErrTampered, dotGit)
	}
	g := strings.TrimSpace(rest)
	if !filepath.IsAbs(g) {
		g = filepath.Join(top, g)
	}
	g = filepath.Clean(g)
	common := filepath.Dir(filepath.Dir(g))
	if filepath.Base(filepath.Dir(g)) != "worktrees" || inside(common, top) {
		return pinned{}, fmt.Errorf("%w: %s names %s", ErrTampered, dotGit, g)
	}
	for _, p := range []string{g, common, filepath.Join(common, "objects")} {
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
			return pinned{}, fmt.Errorf("%w: %s names %s", ErrTampered, dotGit, g)
		}
	}
	if accept != nil && !accept(top, realPath(common)) {
		return pinned{}, fmt.Errorf("%w: %s names %s, not the session's repository", ErrTampered, dotGit, g)
	}
	ownGitdir := pointsAt(filepath.Join(g, "gitdir"), dotGit)
	if !ownGitdir {
		// Another worktree's directory names its own worktree there (and
		// is not this agent's to write); this one's, a rewritten gitdir.
		// git names a worktree's directory after the worktree's (a number
		// added when taken): the harness's are session ids, unique.
		if !ownName(filepath.Base(g), filepath.Base(top)) {
			return pinned{}, fmt.Errorf("%w: %s names %s, the git directory of another worktree", ErrTampered, dotGit, g)
		}
	}
	var repaired []string
	for _, f := range [][2]string{{"gitdir", dotGit}, {"commondir", "../.."}} {
		if (f[0] != "gitdir" || !ownGitdir) && restore(filepath.Join(g, f[0]), f[1]) {
			repaired = append(repaired, f[0]+" rewritten: put back")
		}
	}
	// A repository with extensions.worktreeConfig on (git sparse-checkout
	// sets it) reads the worktree's config.worktree, here: the harness
	// writes none, so one is the agent's and is moved aside.
	if _, err := os.Lstat(filepath.Join(g, "config.worktree")); err == nil {
		_ = os.Rename(filepath.Join(g, "config.worktree"), filepath.Join(g, "config.worktree.moved-by-harness"))
		repaired = append(repaired, "config.worktree written: moved aside to config.worktree.moved-by-harness")
	}
	return pinned{top: top, gitDir: g, common: common, repaired: repaired}, nil
}

// ownName reports whether git may have named the git directory of a
// worktree whose directory is called base name: base itself, or base and
// a number.
func ownName(name, base string) bool {
	rest, ok := strings.CutPrefix(name, base)
	return ok && strings.Trim(rest, "0123456789") == ""
}

// inside reports whether p is dir or under it.
func inside(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// restore writes want (and a newline) to the file p unless it holds it
// already, and reports whether it did; a symbolic link there is
// replaced, not followed (and the new file is made under a fresh name:
// the directory is the agent's).
func restore(p, want string) bool {
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
		if b, err := readSmall(p); err == nil && strings.TrimSpace(string(b)) == want {
			return false
		}
	}
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".harness-*")
	if err != nil {
		return false
	}
	_, err = f.WriteString(want + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		_ = os.Chmod(f.Name(), 0o644)
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return false
	}
	return true
}

// readSmall reads at most 4 KiB of the regular file p.
func readSmall(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	_, err = io.Copy(&b, io.LimitReader(f, 4<<10))
	return b.Bytes(), err
}

// wgit runs git in the worktree at dir (or a directory inside it) pinned
// to its repository (see pin).
func (m *Manager) wgit(ctx context.Context, dir string, extraEnv []string, args ...string) ([]byte, error) {
	p, err := m.pin(dir)
	if err != nil {
		return nil, err
	}
	return m.r.git(ctx, dir, p.env(extraEnv...), args...)
}

// wout is wgit returning its output trimmed, as a string.
func (m *Manager) wout(ctx context.Context, dir string, args ...string) (string, error) {
	b, err := m.wgit(ctx, dir, nil, args...)
	return strings.TrimSpace(string(b)), err
}

// pointsAt reports whether the regular file p names the file target
// (through whatever symbolic links its path has).
func pointsAt(p, target string) bool {
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	b, err := readSmall(p)
	if err != nil {
		return false
	}
	a, err1 := os.Stat(strings.TrimSpace(string(b)))
	t, err2 := os.Stat(target)
	return err1 == nil && err2 == nil && os.SameFile(a, t)
}

// Expect checks that the worktree at dir (or a directory inside it) is
// one of the repository whose main worktree is top, by its .git file (see
// pin), and records it: every later git command of the Manager in that
// worktree fails with ErrTampered when its .git file names another
// repository. An agent may write its worktree's .git file, and a
// repository of its own outside the worktree (in a temporary directory)
// would pass pin's other checks; the harness calls Expect wherever it
// knows the session's repository. Create, Settle, Unmerged and Merge call
// it themselves.
func (m *Manager) Expect(ctx context.Context, top, dir string) error {
	common, err := m.r.out(ctx, top, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return err
	}
	want := realPath(common)
	return m.expectCommon(dir, func(c string) bool { return c == want })
}

// ExpectRepo is Expect for a worktree whose repository is not known:
// accept says whether the main worktree top (real path) the worktree's
// .git file leads to, that of a non-bare repository, is the right one
// (the harness checks it against the name of the worktree's directory,
// a hash of it).
func (m *Manager) ExpectRepo(dir string, accept func(top string) bool) error {
	return m.expectCommon(dir, func(common string) bool { return accept(filepath.Dir(common)) })
}

// expectCommon pins dir if accept takes the real path of its
// repository's common git directory, and records that.
func (m *Manager) expectCommon(dir string, accept func(common string) bool) error {
	p, err := pin(dir, func(_, common string) bool { return accept(common) })
	if err != nil {
		return err
	}
	m.report(p)
	m.expect.Store(p.top, realPath(p.common))
	return nil
}

// realPath is p cleaned with its symbolic links followed (p as it is
// when that fails).
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// report tells OnRepair what pin put back.
func (m *Manager) report(p pinned) {
	if m.OnRepair == nil {
		return
	}
	for _, r := range p.repaired {
		m.OnRepair(p.top, r)
	}
}
