package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/lazyre"
)

// Dir is the store's directory, relative to the project root: a bare git
// repository of its own (objects, one index), never the project's .git.
const Dir = ".chirality/checkpoints"

// Defaults of Options.
const (
	DefaultMaxFiles      = 100_000
	DefaultMaxBytes      = int64(1 << 30) // 1 GiB
	DefaultTimeout       = time.Minute
	DefaultMaxPatchBytes = 64 << 10
	DefaultMaxDiffBytes  = 4 << 20
)

// Errors callers branch on (errors.Is).
var (
	// ErrTooLarge: the project has more files or bytes than the store's
	// limits; the error is a *LimitError that names the limit.
	ErrTooLarge = engine.NewError(engine.ErrCannot, "checkpoint: project too large to snapshot")
	// ErrNoGit: no git binary on PATH.
	ErrNoGit = engine.NewError(engine.ErrUnavailable, "checkpoint: git not found on PATH (file checkpoints need git)")
	// ErrUnknownSnapshot: the id is malformed or not a snapshot of this store.
	ErrUnknownSnapshot = errors.New("checkpoint: no such snapshot")
	// ErrUnsafeStore: the store's directory is a symlink or the project's
	// own .git; nothing was run.
	ErrUnsafeStore = engine.NewError(engine.ErrCannot, "checkpoint: unsafe store directory")
)

// LimitError says which limit a project exceeds and how to raise it.
type LimitError struct {
	Limit string // "files" or "bytes"
	Have  int64  // at least this many (counting stops past the limit)
	Max   int64
}

func (e *LimitError) Error() string {
	field := "MaxFiles"
	if e.Limit == "bytes" {
		field = "MaxBytes"
	}
	return fmt.Sprintf("%s: more than %d %s (%d counted; not ignored by .gitignore); "+
		"raise the limit (checkpoint.Options.%s) or list big directories in .gitignore",
		ErrTooLarge.Error(), e.Max, e.Limit, e.Have, field)
}

func (e *LimitError) Is(target error) bool { return errors.Is(ErrTooLarge, target) }

// Options bound a Store. Zero fields take the defaults.
type Options struct {
	// MaxFiles and MaxBytes bound the files a snapshot may hold (files
	// not ignored by .gitignore, and their total size): past them
	// Snapshot fails with ErrTooLarge before hashing anything.
	MaxFiles int
	MaxBytes int64
	// Timeout bounds each git call (0 = DefaultTimeout).
	Timeout time.Duration
	// MaxPatchBytes bounds one file's patch in Diff; MaxDiffBytes all of
	// them. A cut patch has Change.Truncated set.
	MaxPatchBytes int
	MaxDiffBytes  int
	// NoWatch walks the tree on every snapshot (git's stat cache) instead
	// of keeping a watcher that lists what changed.
	NoWatch bool
}

func (o Options) withDefaults() Options {
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxPatchBytes <= 0 {
		o.MaxPatchBytes = DefaultMaxPatchBytes
	}
	if o.MaxDiffBytes <= 0 {
		o.MaxDiffBytes = DefaultMaxDiffBytes
	}
	return o
}

// Ops of a Change, as from the snapshot to the files now.
const (
	OpAdded    = "added"    // not in the snapshot: Restore removes it
	OpModified = "modified" // content, mode or type changed: Restore writes the snapshot's
	OpDeleted  = "deleted"  // in the snapshot only: Restore re-creates it
)

// Change is one path that differs between a snapshot and the files now.
type Change struct {
	Path string `json:"path"` // slash-separated, relative to the root
	Op   string `json:"op"`   // OpAdded, OpModified or OpDeleted
	// Patch is a unified diff from the snapshot to now (Diff only; "Binary
	// files … differ" for binary files), cut at Options.MaxPatchBytes.
	Patch     string `json:"patch,omitempty"`
	Truncated bool   `json:"truncated,omitempty"` // Patch was cut (or left out: the diff was over MaxDiffBytes)
}

// Store keeps snapshots of one project's working tree. Its methods are
// safe for concurrent use: they run one at a time, also across processes
// (a lock file in the store).
type Store struct {
	root, gitDir, index, gitPath string
	o                            Options
	mu                           sync.Mutex

	// Under mu: the watcher and what the last snapshot holds.
	w       *watcher
	noWatch string   // why no watcher is started (for good)
	tr      *tracked // nil: the next snapshot walks
	trWhy   string   // why tr is nil
	trStale bool     // the index file does not hold tr (snapshots taken in process since)
	last    oid      // the last snapshot
	closed  bool
}

// Info says how a snapshot was taken.
type Info struct {
	ID string `json:"id"`
	// Full is set when the tree was walked (git's stat cache): the first
	// snapshot, or when the watcher could not vouch for its list of
	// changes; Why says which (e.g. "overflow").
	Full bool   `json:"full,omitempty"`
	Why  string `json:"why,omitempty"`
	// Changed is the number of paths the watcher listed (a snapshot that
	// did not walk).
	Changed int `json:"changed,omitempty"`
}

// Open returns the store of the project at root (made absolute), creating
// <root>/.chirality/checkpoints on first use. It runs no git command. It
// fails with ErrNoGit when git is not on PATH, ErrUnsafeStore when the
// store's directory is a symlink or the project's .git.
func Open(root string, o Options) (*Store, error) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return nil, ErrNoGit
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("checkpoint: %s is not a directory", abs)
	}
	gitDir := filepath.Join(abs, filepath.FromSlash(Dir))
	s := &Store{root: abs, gitDir: gitDir, index: filepath.Join(gitDir, "index"), gitPath: gitPath, o: o.withDefaults(),
		trWhy: "first snapshot"}
	if o.NoWatch {
		s.noWatch = "Options.NoWatch"
	}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	return s, nil
}

// Root returns the project root.
func (s *Store) Root() string { return s.root }

// The files the store rewrites before every operation when they differ:
// an agent can write into the project, so none of them is trusted.
var storeFiles = map[string]string{
	"HEAD": "ref: refs/heads/checkpoints\n",
	"config": "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tfilemode = true\n" +
		"\thooksPath = /dev/null\n\tfsmonitor = false\n[gc]\n\tauto = 0\n",
	// The project's own git never lists the store (git status stays as
	// it was).
	".gitignore": "# harness file checkpoints (a private object store)\n*\n",
	// Never snapshotted: the harness's own directory (sessions, logs,
	// this store) and `harness rpc`'s threads (.harness/threads: a
	// rollback must not rewind the history that records it), at any
	// depth. .git is never added by git itself.
	"info/exclude": "# harness checkpoints: never snapshotted\n.chirality/\n.harness/threads/\n",
	// Highest precedence over the project's .gitattributes: no filter,
	// line-ending, ident or encoding conversion, so bytes round-trip.
	"info/attributes": "* -text -filter -ident !eol !working-tree-encoding !diff !merge\n",
}

// prepare creates the store's directory and checks it is safe: each of
// .chirality and .chirality/checkpoints a real directory (not a symlink,
// which could lead git to the project's .git), and not the project's
// .git. Then it writes the store's own files where they differ.
func (s *Store) prepare() error {
	dir := s.root
	for _, part := range strings.Split(Dir, "/") {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("checkpoint: %w", err)
			}
			fi, err = os.Lstat(dir)
		}
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w: %s is not a plain directory", ErrUnsafeStore, dir)
		}
	}
	if fi, err := os.Stat(filepath.Join(s.root, ".git")); err == nil {
		gi, err := os.Stat(s.gitDir)
		if err == nil && os.SameFile(fi, gi) {
			return fmt.Errorf("%w: %s is the project's .git", ErrUnsafeStore, s.gitDir)
		}
	}
	for _, d := range []string{"objects", "refs", "info"} {
		if err := os.MkdirAll(filepath.Join(s.gitDir, d), 0o700); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	for name, want := range storeFiles {
		p := filepath.Join(s.gitDir, filepath.FromSlash(name))
		if got, err := os.ReadFile(p); err == nil && string(got) == want {
			continue
		}
		if err := replaceFile(p, want); err != nil {
			return err
		}
	}
	// Objects from elsewhere are never read.
	if err := os.Remove(filepath.Join(s.gitDir, "objects", "info", "alternates")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// replaceFile writes content to path through a temporary file of its own
// (another process may be writing the same file).
func replaceFile(path, content string) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err == nil {
		_, err = f.WriteString(content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), path)
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// begin takes the store's locks and re-checks its directory. The returned
// function releases them.
func (s *Store) begin(ctx context.Context) (func(), error) {
	s.mu.Lock()
	unlock, err := lockFile(ctx, filepath.Join(s.gitDir, "harness.lock"))
	if err == nil {
		err = s.prepare()
		if err != nil {
			unlock()
		}
	}
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	// We hold the lock, so an index.lock is left by a git call that was
	// killed at its deadline.
	_ = os.Remove(s.index + ".lock")
	return func() { unlock(); s.mu.Unlock() }, nil
}

// Snapshot records the project's files (tracked and untracked, less what
// .gitignore ignores, .git and .chirality) and returns the snapshot's id
// (a git tree id). The first snapshot starts a watcher (Linux, inotify)
// that lists the paths changed since; later snapshots read and hash
// those only. When the watcher cannot vouch for its list (see Info.Why)
// the tree is walked, and only files whose size or times changed since
// the last snapshot are read and hashed (git's index stat cache). A
// project over the limits fails with ErrTooLarge before anything is
// stored. Cancelling ctx stops the git call under way.
func (s *Store) Snapshot(ctx context.Context) (string, error) {
	info, err := s.SnapshotInfo(ctx)
	return info.ID, err
}

// SnapshotInfo is Snapshot, saying how the snapshot was taken.
func (s *Store) SnapshotInfo(ctx context.Context) (Info, error) {
	done, err := s.begin(ctx)
	if err != nil {
		return Info{}, err
	}
	defer done()
	return s.snapshot(ctx)
}

// Close stops the store's watcher (its goroutine and inotify file
// descriptor). Later snapshots walk the tree. Safe to call more than
// once.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.noWatch = "store closed"
	s.stopWatch("store closed")
	return nil
}

func (s *Store) stopWatch(why string) {
	if s.w != nil {
		s.w.close()
		s.w = nil
	}
	s.tr, s.trWhy = nil, why
}

// maxTouched bounds the watcher's list of changed paths: past it the
// next snapshot walks.
func (s *Store) maxTouched() int { return min(s.o.MaxFiles, 50_000) }

// snapshot takes a snapshot from the watcher's list when it can, else
// walks (and starts a new watcher first, so that what changes during the
// walk is listed for the next one).
func (s *Store) snapshot(ctx context.Context) (Info, error) {
	why := s.noWatch
	if s.w != nil {
		touched, wwhy := s.w.take(ctx)
		switch {
		case wwhy != "":
			why = wwhy
			s.stopWatch(wwhy)
		case s.tr == nil:
			why = s.trWhy
		default:
			info, err := s.incremental(ctx, touched)
			var wn *walkNeeded
			if !errors.As(err, &wn) {
				if err != nil {
					s.tr, s.trWhy = nil, "the last snapshot failed"
				}
				return info, err
			}
			why = wn.why
		}
	} else if why == "" {
		why = s.trWhy
	}
	if s.w == nil && s.noWatch == "" {
		s.w, s.noWatch = startWatcher(s.root, filepath.Join(s.gitDir, "sync"), s.maxTouched())
	}
	if s.tr != nil && s.trStale {
		// git's walk reads the index as its stat cache: it must hold
		// the files of the last snapshot.
		if err := writeIndex(s.index, s.tr.entries()); err != nil {
			return Info{}, err
		}
		s.trStale = false
	}
	s.tr = nil
	id, err := s.walk(ctx)
	if err != nil {
		s.trWhy = "the last snapshot failed"
		return Info{}, err
	}
	if s.w != nil {
		s.track(id)
	}
	return Info{ID: id, Full: true, Why: why}, nil
}

// track reads the index git just wrote (holding snapshot id) as the
// picture the next snapshots start from. It checks that the trees it
// computes from it are git's own; if not, the watcher is of no use and
// is stopped for good.
func (s *Store) track(id string) {
	es, err := readIndex(s.index)
	if err != nil {
		s.trWhy = err.Error()
		return
	}
	tr, err := newTracked(es)
	if errors.Is(err, errGitlink) {
		s.trWhy = "nested repository"
		return
	}
	got, err := tr.treeID(nil)
	if err != nil || got.String() != id {
		s.noWatch = "the trees computed in process differ from git's"
		s.stopWatch(s.noWatch)
		return
	}
	s.tr, s.trStale, s.last = tr, false, got
}

// walk has git walk the tree (add -A) and write its trees.
func (s *Store) walk(ctx context.Context) (string, error) {
	fresh, untracked, err := s.checkLimits(ctx)
	if err != nil {
		return "", err
	}
	add := []string{"add", "-A"}
	bulk := fresh >= bulkFiles
	complete := false
	if bulk {
		if c, err := s.prefill(ctx, untracked, fresh); err == nil {
			complete = c
			// Many new files (the first snapshot), hashed here into
			// one pack with the index entries that say so: git add -A
			// finds them clean (it still decides what the snapshot
			// holds), or is not needed at all when the index now holds
			// every file git listed and nothing else.
			bulk = false
		} else {
			// Else streamed into one pack by git as they are hashed,
			// not a loose object (a disk block) each.
			add = []string{"-c", "core.bigFileThreshold=1", "add", "-A"}
		}
	}
	if !complete {
		if _, _, err := s.run(ctx, call{args: add}); err != nil {
			return "", err
		}
	}
	out, _, err := s.run(ctx, call{args: []string{"write-tree"}})
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(out))
	if !validID.MatchString(id) {
		return "", fmt.Errorf("checkpoint: git write-tree said %q", id)
	}
	if err := s.keep(id); err != nil {
		return "", err
	}
	// Loose objects take a disk block each: after a bulk add (its
	// trees) and then every few thousand objects they are packed
	// (compressed and deltified into one file). Snapshots stay valid if
	// this fails.
	if bulk || s.looseObjects() > packThreshold {
		_, _, _ = s.run(ctx, call{args: []string{"repack", "-d", "-q"}})
	}
	return id, nil
}

// keep writes snapshot id's ref: a ref per snapshot keeps its objects
// reachable, so packing takes them too.
func (s *Store) keep(id string) error {
	ref := filepath.Join(s.gitDir, "refs", "snapshots", id)
	if _, err := os.Lstat(ref); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(ref), 0o700); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return replaceFile(ref, id+"\n")
}

// bulkFiles is the number of new files from which a snapshot streams
// them into a pack.
const bulkFiles = 256

// packThreshold is the estimated number of loose objects past which a
// snapshot packs them.
const packThreshold = 4096

// looseObjects estimates the store's loose objects as git gc --auto
// does: the entries of one of the 256 object directories, times 256.
func (s *Store) looseObjects() int {
	des, err := os.ReadDir(filepath.Join(s.gitDir, "objects", "17"))
	if err != nil {
		return 0
	}
	return len(des) * 256
}

// checkLimits counts what a snapshot would hold before anything is
// hashed: the files the store's index already has (their number and
// their sizes at the last snapshot, read from the index itself) and the
// untracked ones .gitignore does not ignore (listed by git, sized here).
// A file the store holds that grew since counts at its old size until
// the next snapshot.
func (s *Store) checkLimits(ctx context.Context) (fresh int, untracked []found, err error) {
	files, total, ok := indexTotals(s.index)
	if !ok {
		files, total = 0, 0
	}
	// A path is at most 4 KiB: a listing over this is over MaxFiles.
	limit := min(s.o.MaxFiles, 1<<22) * 4097
	args := []string{"ls-files", "-z", "-o", "--exclude-standard"}
	if !ok {
		args = []string{"ls-files", "-z", "-c", "-o", "--exclude-standard"} // an index of another format
	}
	out, capped, err := s.run(ctx, call{args: args, max: limit, capOK: true})
	if err != nil {
		return 0, nil, err
	}
	fresh = bytes.Count(out, []byte{0})
	files += int64(fresh)
	if capped || files > int64(s.o.MaxFiles) {
		return 0, nil, &LimitError{Limit: "files", Have: files, Max: int64(s.o.MaxFiles)}
	}
	if ok {
		untracked = make([]found, 0, fresh)
	}
	for len(out) > 0 {
		i := bytes.IndexByte(out, 0)
		if i < 0 {
			break
		}
		name := string(out[:i])
		out = out[i+1:]
		fi, err := os.Lstat(filepath.Join(s.root, filepath.FromSlash(name)))
		if err != nil || fi.IsDir() {
			continue // deleted since, or a nested repository (stored as a link only)
		}
		if ok {
			untracked = append(untracked, found{name, fi})
		}
		total += fi.Size()
		if total > s.o.MaxBytes {
			return 0, nil, &LimitError{Limit: "bytes", Have: total, Max: s.o.MaxBytes}
		}
	}
	if total > s.o.MaxBytes {
		return 0, nil, &LimitError{Limit: "bytes", Have: total, Max: s.o.MaxBytes}
	}
	return fresh, untracked, nil
}

// indexTotals reads the number of entries of a git index (version 2,
// SHA-1, as the store writes it) and the sum of their recorded sizes. A
// missing index is (0, 0, true); one it cannot read is ok false.
func indexTotals(path string) (files, total int64, ok bool) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, true
	}
	if err != nil || len(data) < 12 || string(data[:4]) != "DIRC" || be32(data[4:]) != 2 {
		return 0, 0, false
	}
	n := int64(be32(data[8:]))
	off := 12
	for range n {
		const fixed = 62 // times, dev, ino, mode, uid, gid, size, SHA-1, flags
		if off+fixed > len(data) {
			return 0, 0, false
		}
		total += int64(be32(data[off+36:]))
		end := bytes.IndexByte(data[off+fixed:], 0)
		if end < 0 {
			return 0, 0, false
		}
		off += (fixed + end + 8) &^ 7
	}
	return n, total, true
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// validID is a full git object id (SHA-1 or SHA-256), lower-case hex.
var validID = lazyre.New(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

// checkID fails with ErrUnknownSnapshot unless id is a tree in the store.
func (s *Store) checkID(ctx context.Context, id string) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("%w: %q is not a snapshot id", ErrUnknownSnapshot, id)
	}
	out, _, err := s.run(ctx, call{args: []string{"cat-file", "-t", id}, okCodes: []int{128}})
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(out)) != "tree" {
		return fmt.Errorf("%w: %s", ErrUnknownSnapshot, id)
	}
	return nil
}

// Diff returns what differs between snapshot id and the files now, each
// with a unified patch (bounded by Options.MaxPatchBytes and
// MaxDiffBytes), sorted by path. It snapshots the files now to compare
// (so ErrTooLarge is possible). A file listed as added that the
// snapshot's .gitignore ignores is kept by Restore.
func (s *Store) Diff(ctx context.Context, id string) ([]Change, error) {
	done, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	cur, changes, err := s.sinceSnapshot(ctx, id)
	if err != nil || len(changes) == 0 {
		return changes, err
	}
	out, capped, err := s.run(ctx, call{
		args: []string{"diff-tree", "-r", "-p", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color", id, cur},
		max:  s.o.MaxDiffBytes, capOK: true,
	})
	if err != nil {
		return nil, err
	}
	attachPatches(changes, out, capped, s.o.MaxPatchBytes)
	return changes, nil
}

// sinceSnapshot checks id, snapshots the files now (cur) and lists what
// changed from id to cur: what Diff shows and Restore undoes.
func (s *Store) sinceSnapshot(ctx context.Context, id string) (cur string, changes []Change, err error) {
	if err := s.checkID(ctx, id); err != nil {
		return "", nil, err
	}
	info, err := s.snapshot(ctx)
	if err != nil {
		return "", nil, err
	}
	cur = info.ID
	changes, err = s.changes(ctx, id, cur)
	return cur, changes, err
}

// changes lists the paths that differ from tree a to tree b.
func (s *Store) changes(ctx context.Context, a, b string) ([]Change, error) {
	if a == b {
		return nil, nil
	}
	out, _, err := s.run(ctx, call{
		args: []string{"diff-tree", "-r", "-z", "--no-renames", "--name-status", a, b},
		max:  (s.o.MaxFiles + 1) * 4100,
	})
	if err != nil {
		return nil, err
	}
	return parseNameStatus(out)
}

// Restore makes the project's files exactly as in snapshot id: files
// added since are removed (and directories left empty by that), modified
// ones get the snapshot's bytes and mode, deleted ones are re-created,
// symlinks are restored as symlinks and never followed for writing. Files
// .gitignore ignores are left alone, also an added file that the
// snapshot's .gitignore ignores. It returns what it changed, as Diff
// would list it before (without patches). It first snapshots the files
// now (so ErrTooLarge is possible, and nothing is changed then).
// Cancelling ctx may leave the restore half done; running it again
// completes it.
func (s *Store) Restore(ctx context.Context, id string) ([]Change, error) {
	done, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	cur, changes, err := s.sinceSnapshot(ctx, id)
	if err != nil || len(changes) == 0 {
		return changes, err
	}
	// The index holds the files now (just added, or written here from
	// the snapshot taken in process): a reset to id writes what differs
	// and removes what id lacks.
	if s.tr != nil {
		// Written even when not stale: another process's walk may have
		// rewritten the index since.
		if err := writeIndex(s.index, s.tr.entries()); err != nil {
			return nil, err
		}
		s.trStale = false
	}
	s.tr, s.trWhy = nil, "restored"
	if _, _, err := s.run(ctx, call{args: []string{"read-tree", "--reset", "-u", id}}); err != nil {
		return nil, err
	}
	if s.w != nil {
		// The index now holds id, and the watcher lists what git wrote.
		s.track(id)
	}
	var added []byte
	for _, c := range changes {
		if c.Op == OpAdded && !s.beyondLink(c.Path) {
			added = append(append(added, c.Path...), 0)
		}
	}
	if len(added) == 0 {
		return changes, nil
	}
	// Files the restored .gitignore ignores may have been there before,
	// unseen: put them back (from cur), outside the index.
	out, _, err := s.run(ctx, call{args: []string{"check-ignore", "-z", "--stdin", "--no-index"}, stdin: added,
		max: len(added) + 1, okCodes: []int{1}})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return changes, nil
	}
	tmp := s.index + ".keep"
	defer os.Remove(tmp)
	if _, _, err := s.run(ctx, call{args: []string{"read-tree", cur}, index: tmp}); err != nil {
		return nil, err
	}
	if _, _, err := s.run(ctx, call{args: []string{"checkout-index", "-f", "-z", "--stdin"}, stdin: out, index: tmp}); err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	for _, p := range bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
		kept[string(p)] = true
	}
	var res []Change
	for _, c := range changes {
		if !(c.Op == OpAdded && kept[c.Path]) {
			res = append(res, c)
		}
	}
	return res, nil
}

// beyondLink reports whether a leading directory of rel is now a symlink
// or a file (such a path cannot be put back).
func (s *Store) beyondLink(rel string) bool {
	dir := s.root
	parts := strings.Split(rel, "/")
	for _, p := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, p)
		fi, err := os.Lstat(dir)
		if err != nil {
			return false
		}
		if !fi.IsDir() {
			return true
		}
	}
	return false
}
