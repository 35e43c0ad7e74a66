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

// Grants is what a sandboxed agent needs to commit on its worktree's
// branch, and no more (see Manager.Grants).
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
// otherwise read-only to it:
//
//   - the worktree's own git directory (.git/worktrees/<name>/: its HEAD,
//     index, logs, and objects/, the worktree's private object store);
//   - the directory of the branch's loose ref (.git/refs/heads/harness/
//     for harness/<id>: git writes <ref>.lock there and renames it), and
//     the branch's reflog file;
//   - GIT_OBJECT_DIRECTORY (the private store) and
//     GIT_ALTERNATE_OBJECT_DIRECTORIES (the repository's objects) in its
//     environment: the shared object store stays read-only, so no object
//     of another branch can be removed or rewritten. AdoptObjects moves
//     what the agent wrote into the repository, checked.
//
// Not granted: .git/config, hooks/, packed-refs, HEAD and the other refs;
// so `git gc`, `git pack-refs`, a change of configuration or hooks, or a
// move of another top-level branch fail. A branch with no directory of
// its own (a name without "/") gets no ref directory: the agent cannot
// commit on it. Branches that share its directory (harness/*) share the
// grant: an agent could move another session's branch there (the
// sandbox cannot grant one file's creation in a directory).
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
	g := &Grants{
		Writable: []string{gitDir + string(filepath.Separator)},
		Env:      []string{"GIT_OBJECT_DIRECTORY=" + objects, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(common, "objects")},
	}
	if parent := filepath.Dir(filepath.FromSlash(branch)); branch != "" && parent != "." {
		refDir := filepath.Join(common, "refs", "heads", parent)
		if err := os.MkdirAll(refDir, 0o755); err != nil {
			return nil, err
		}
		reflog := filepath.Join(common, "logs", "refs", "heads", filepath.FromSlash(branch))
		if err := os.MkdirAll(filepath.Dir(reflog), 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(reflog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		_ = f.Close()
		g.Writable = append(g.Writable, refDir+string(filepath.Separator), reflog)
	}
	return g, nil
}

// gitDirs are the worktree's own git directory and the repository's
// common one, absolute.
func (m *Manager) gitDirs(ctx context.Context, dir string) (gitDir, common string, err error) {
	out, err := m.r.out(ctx, dir, "rev-parse", "--path-format=absolute", "--absolute-git-dir", "--git-common-dir")
	if err != nil {
		return "", "", err
	}
	gitDir, common, ok := strings.Cut(out, "\n")
	if !ok {
		return "", "", fmt.Errorf("worktree: rev-parse: %q", out)
	}
	return filepath.Clean(gitDir), filepath.Clean(strings.TrimSpace(common)), nil
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
