package worktree

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Grants is what a sandboxed agent needs to commit in its worktree, and
// no more (see Manager.Grants).
type Grants struct {
	// Writable are the paths the sandbox lets the agent write (package
	// sandbox's Spec.Writable form: a directory ends in a separator).
	Writable []string
	// Env are the variables that send the agent's new git objects to the
	// worktree's own object directory, the repository's read through it.
	Env []string
}

// Grants returns what the agent in the worktree at dir (on branch) may
// write so that `git commit` works there with the repository's .git
// read-only to it, once Detach has put the worktree on a detached HEAD:
// the agent's commits then move only that HEAD, which lives in the
// worktree's own git directory, and Settle brings them onto the branch.
//
//   - the worktree's own git directory (.git/worktrees/<name>/: its HEAD,
//     index, logs, and objects/, the worktree's private object store);
//   - GIT_OBJECT_DIRECTORY (the private store) and
//     GIT_ALTERNATE_OBJECT_DIRECTORIES (the repository's objects) in its
//     environment: the shared object store stays read-only, so no object
//     of another branch can be removed or rewritten. AdoptObjects moves
//     what the agent wrote into the repository, checked.
//
// Not granted: .git/config, hooks/, packed-refs, the main HEAD and every
// ref and reflog under .git/refs and .git/logs/refs, its own branch's
// among them; so `git gc`, `git pack-refs`, a change of configuration or
// hooks, or a move of any branch (another session's harness/* too) fail.
func (m *Manager) Grants(ctx context.Context, dir, branch string) (*Grants, error) {
	gitDir, common, err := m.gitDirs(ctx, dir)
	if err != nil {
		return nil, err
	}
	if gitDir == common {
		return nil, fmt.Errorf("worktree: %s is the repository's main worktree", dir)
	}
	objects := filepath.Join(gitDir, "objects")
	if err := os.MkdirAll(filepath.Join(objects, "pack"), 0o755); err != nil {
		return nil, err
	}
	return &Grants{
		Writable: []string{gitDir + string(filepath.Separator)},
		Env:      []string{"GIT_OBJECT_DIRECTORY=" + objects, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(common, "objects")},
	}, nil
}

// Detach puts the worktree at dir on a detached HEAD at the commit its
// HEAD names (its branch's, or the agent's own when a turn ended without
// Settle): the state a sandboxed agent's turn starts in (see Grants).
// One git command.
func (m *Manager) Detach(ctx context.Context, dir string) error {
	_, err := m.wgit(ctx, dir, nil, "update-ref", "--no-deref", "-m", "harness: sandboxed turn", "HEAD", "HEAD")
	return err
}

// ErrNotForward: a sandboxed agent left its worktree on a commit that
// does not descend from its branch's; Settle did not move the branch.
var ErrNotForward = errors.New("the worktree's HEAD does not descend from its branch")

// Settle ends a sandboxed agent's hold on the worktree at dir of the
// repository top (see Grants): it adopts the agent's objects, moves
// refs/heads/<branch> forward to the worktree's HEAD when that descends
// from the branch's commit, and checks the branch out again in the
// worktree (its HEAD only: files and index stay as the agent left them).
// It returns the branch's new commit ("" when it did not move). A HEAD
// that does not descend from the branch (a reset to an earlier or an
// unrelated commit, another branch checked out) does not move it: the
// branch only ever moves forward by an agent's hand, and what the agent
// left in the files shows as the session's uncommitted changes; the
// error is ErrNotForward. A worktree on its branch already is left as it
// is (one git command).
func (m *Manager) Settle(ctx context.Context, top, dir, branch string) (string, error) {
	if err := m.Expect(ctx, top, dir); err != nil {
		return "", err
	}
	adoptErr := m.AdoptObjects(ctx, dir)
	ref := "refs/heads/" + branch
	sym, err := m.wout(ctx, dir, "symbolic-ref", "-q", "HEAD")
	if err == nil && sym == ref {
		return "", adoptErr
	} else if err != nil && exitCode(err) != 1 {
		return "", err
	}
	tip, err := m.r.out(ctx, top, "rev-parse", "--verify", "-q", ref+"^{commit}")
	if err != nil {
		return "", errors.Join(adoptErr, err)
	}
	var moved string
	var fwdErr error
	// HEAD is the agent's to write: anything there that is not a commit
	// of the repository descending from the branch leaves the branch be.
	head, err := m.wout(ctx, dir, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	switch {
	case err != nil:
		fwdErr = fmt.Errorf("%w: %s is at %s, the worktree's HEAD is not a commit", ErrNotForward, branch, tip)
	case head == tip:
	default:
		if _, err := m.r.git(ctx, top, nil, "merge-base", "--is-ancestor", tip, head); err != nil {
			fwdErr = fmt.Errorf("%w: %s is at %s, the worktree at %s", ErrNotForward, branch, tip, head)
			break
		}
		if _, err := m.r.git(ctx, top, nil, "update-ref", "-m", "harness: the sandboxed agent's commits", ref, head, tip); err != nil {
			return "", errors.Join(adoptErr, err)
		}
		moved = head
	}
	if _, err := m.wgit(ctx, dir, nil, "symbolic-ref", "-m", "harness: end of a sandboxed turn", "HEAD", ref); err != nil {
		return moved, errors.Join(adoptErr, fwdErr, err)
	}
	return moved, errors.Join(adoptErr, fwdErr)
}

// gitDirs are the worktree's own git directory and the repository's
// common one, absolute.
func (m *Manager) gitDirs(ctx context.Context, dir string) (gitDir, common string, err error) {
	p, err := m.pin(dir)
	if err != nil {
		return "", "", err
	}
	return p.gitDir, p.common, nil
}

// AdoptObjects moves the objects a sandboxed agent wrote to the private
// store of the worktree at dir (see Grants) into the repository's: each
// loose object whose content hashes to its name (others are dropped: the
// agent may have written anything there), and each pack through `git
// index-pack`, which checks every object. Temporary files of a git still
// writing are left. Nothing to adopt is cheap: one rev-parse and a read
// of a directory.
func (m *Manager) AdoptObjects(ctx context.Context, dir string) error {
	gitDir, common, err := m.gitDirs(ctx, dir)
	if err != nil || gitDir == common {
		return err
	}
	src, dst := filepath.Join(gitDir, "objects"), filepath.Join(common, "objects")
	fans, err := os.ReadDir(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	var errs []error
	for _, fan := range fans {
		name := fan.Name()
		switch {
		case name == "pack":
			errs = append(errs, m.adoptPacks(ctx, common, filepath.Join(src, name)))
		case len(name) == 2 && fan.IsDir() && isHex(name):
			errs = append(errs, adoptLoose(filepath.Join(src, name), filepath.Join(dst, name), name))
		}
	}
	return errors.Join(errs...)
}

// adoptLoose moves the loose objects of one fan-out directory.
func adoptLoose(src, dst, prefix string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		rest := e.Name()
		if !e.Type().IsRegular() || !isHex(rest) || (len(rest) != 38 && len(rest) != 62) {
			continue // a temporary file, or not an object
		}
		p := filepath.Join(src, rest)
		if _, err := os.Stat(filepath.Join(dst, rest)); err == nil {
			_ = os.Remove(p) // the repository has it already
			continue
		}
		if !looseOK(p, prefix+rest) {
			_ = os.Remove(p)
			continue
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		tmp, err := os.CreateTemp(dst, "tmp_obj_harness_")
		if err != nil {
			return err
		}
		_, err = tmp.Write(b)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			_ = os.Chmod(tmp.Name(), 0o444)
			err = os.Rename(tmp.Name(), filepath.Join(dst, rest))
		}
		if err != nil {
			_ = os.Remove(tmp.Name())
			return err
		}
		_ = os.Remove(p)
	}
	return nil
}

// looseOK reports whether the loose object file p inflates to a git
// object ("<type> <size>\0<size bytes>", of a known type) whose hash
// (SHA-1, or SHA-256 for a 64-digit name) is id.
func looseOK(p, id string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	z, err := zlib.NewReader(io.LimitReader(f, 1<<30))
	if err != nil {
		return false
	}
	var h hash.Hash = sha1.New()
	if len(id) == 64 {
		h = sha256.New()
	}
	head := make([]byte, 0, 32)
	buf := make([]byte, 1)
	for len(head) < 32 { // "<type> <size>\0"
		if _, err := io.ReadFull(z, buf); err != nil {
			return false
		}
		head = append(head, buf[0])
		if buf[0] == 0 {
			break
		}
	}
	typ, size, ok := bytes.Cut(head, []byte(" "))
	if !ok || head[len(head)-1] != 0 {
		return false
	}
	switch string(typ) {
	case "blob", "tree", "commit", "tag":
	default:
		return false
	}
	n, err := strconv.ParseInt(string(size[:len(size)-1]), 10, 64)
	if err != nil || n < 0 || string(size[:len(size)-1]) != strconv.FormatInt(n, 10) {
		return false
	}
	h.Write(head)
	got, err := io.Copy(h, z)
	if err != nil || got != n {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == id
}

// adoptPacks indexes each finished pack of the private store into the
// repository (`git index-pack --stdin` checks its objects) and removes it.
func (m *Manager) adoptPacks(ctx context.Context, common, dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "pack-") || !strings.HasSuffix(e.Name(), ".pack") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if _, err := os.Stat(strings.TrimSuffix(p, ".pack") + ".idx"); err != nil {
			continue // still being written
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = m.r.gitIn(ctx, common, f, "--git-dir="+common, "index-pack", "--stdin")
		f.Close()
		if err != nil {
			return err
		}
		base := strings.TrimSuffix(p, ".pack")
		for _, ext := range []string{".pack", ".idx", ".rev", ".keep", ".bitmap"} {
			_ = os.Remove(base + ext)
		}
	}
	return nil
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}
