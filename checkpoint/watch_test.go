//go:build linux

package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/goleak"
)

func mv(t *testing.T, root, from, to string) {
	t.Helper()
	if err := os.Rename(filepath.Join(root, from), filepath.Join(root, to)); err != nil {
		t.Fatal(err)
	}
}

func rm(t *testing.T, root, rel string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(root, rel)); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, root, rel string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(filepath.Join(root, rel), mode); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, root, target, rel string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(root, rel)); err != nil {
		t.Fatal(err)
	}
}

// A step changes the files between two snapshots; walk names why the
// watched store must walk for it ("" = it must not).
type step struct {
	name   string
	change func(t *testing.T, root string)
	walk   string
}

var steps = []step{
	{"edit", func(t *testing.T, r string) {
		write(t, r, "a.txt", "alpha 2\n", 0o644)
		write(t, r, "sub/b.txt", "beta 2\n", 0o644)
	}, ""},
	{"nothing", func(t *testing.T, r string) {}, ""},
	{"same size, same second", func(t *testing.T, r string) { write(t, r, "a.txt", "alpha 3\n", 0o644) }, ""},
	{"create, nested dirs", func(t *testing.T, r string) {
		write(t, r, "n1/n2/n3/deep.txt", "deep\n", 0o644)
		write(t, r, "n1/top.txt", "top\n", 0o644)
		if err := os.MkdirAll(filepath.Join(r, "empty", "dir"), 0o755); err != nil {
			t.Fatal(err)
		}
	}, ""},
	{"a file in a directory made last step", func(t *testing.T, r string) {
		write(t, r, "empty/dir/late.txt", "late\n", 0o644)
		write(t, r, "n1/n2/n3/n4/deeper.txt", "deeper\n", 0o644)
	}, ""},
	{"chmod both ways", func(t *testing.T, r string) {
		chmod(t, r, "run.sh", 0o644)
		chmod(t, r, "a.txt", 0o755)
	}, ""},
	{"rename a file, delete one", func(t *testing.T, r string) {
		mv(t, r, "sub/b.txt", "sub/b-renamed.txt")
		rm(t, r, "n1/top.txt")
	}, ""},
	{"symlinks", func(t *testing.T, r string) {
		symlink(t, r, "a.txt", "link-a")
		symlink(t, r, "/etc", "link-out")
	}, ""},
	{"file becomes directory, directory becomes file", func(t *testing.T, r string) {
		rm(t, r, "c.txt")
		write(t, r, "c.txt/inside.txt", "now a dir\n", 0o644)
		rm(t, r, "n1/n2")
		write(t, r, "n1/n2", "now a file\n", 0o644)
	}, ""},
	{"names that sort near a directory", func(t *testing.T, r string) {
		write(t, r, "sub.txt", "x\n", 0o644)
		write(t, r, "sub-", "x\n", 0o644)
		write(t, r, "sub0", "x\n", 0o644)
		write(t, r, "sub/x y\tz\n", "odd name\n", 0o644)
		write(t, r, "ünï/çødé.txt", "utf-8\n", 0o644)
	}, ""},
	{"ignored and never-snapshotted paths", func(t *testing.T, r string) {
		write(t, r, "build/out.o", "ignored\n", 0o644)
		write(t, r, "x.log", "ignored\n", 0o644)
		write(t, r, "sub/.chirality/y", "never\n", 0o644)
		write(t, r, ".harness/threads/t.jsonl", "never\n", 0o644)
		write(t, r, ".harness/kept.txt", "kept\n", 0o644)
	}, ""},
	{"a tracked file goes on changing", func(t *testing.T, r string) { write(t, r, "a.txt", "alpha 4, longer\n", 0o755) }, ""},
	{"a directory is renamed", func(t *testing.T, r string) { mv(t, r, "n1", "n1-moved") }, "a directory was renamed"},
	{"after the walk, in the moved directory", func(t *testing.T, r string) {
		write(t, r, "n1-moved/after.txt", "after\n", 0o644)
	}, ""},
	{"a directory tree is removed", func(t *testing.T, r string) { rm(t, r, "n1-moved") }, ""},
	{".gitignore changes", func(t *testing.T, r string) { write(t, r, ".gitignore", "build/\n", 0o644) }, ".gitignore changed"},
	{"a directory moved in from outside", func(t *testing.T, r string) {
		out := t.TempDir()
		write(t, out, "moved/in.txt", "from outside\n", 0o644)
		write(t, out, "moved/deep/er.txt", "from outside\n", 0o644)
		if err := os.Rename(filepath.Join(out, "moved"), filepath.Join(r, "moved")); err != nil {
			t.Fatal(err)
		}
	}, ""},
	{"everything goes", func(t *testing.T, r string) {
		des, _ := os.ReadDir(r)
		for _, de := range des {
			if de.Name() != ".chirality" && de.Name() != ".gitignore" {
				rm(t, r, de.Name())
			}
		}
	}, ""},
	{"and comes back", func(t *testing.T, r string) { write(t, r, "again/a.txt", "again\n", 0o644) }, ""},
}

func watchedProject(t *testing.T) string {
	root := t.TempDir()
	write(t, root, "a.txt", "alpha\n", 0o644)
	write(t, root, "c.txt", "gamma\n", 0o644)
	write(t, root, "run.sh", "#!/bin/sh\n", 0o755)
	write(t, root, "sub/b.txt", "beta\n", 0o644)
	write(t, root, ".gitignore", "build/\n*.log\n", 0o644)
	return root
}

// Snapshots taken from the watcher's list are the snapshots a walk by
// git takes of the same files, after every kind of change (writes,
// renames, deletes, chmods, nested and late directories, symlinks, type
// changes, ignored paths); they walk only when they must, and say why;
// every one of them restores byte for byte.
func TestWatchedSnapshotsMatchWalk(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	testWatched(t, false)
}

// The same while the watcher overflows before every snapshot (its list
// is lost): each snapshot walks, says so, and is still exact.
func TestWatchedSnapshotsOverflow(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	testWatched(t, true)
}

func testWatched(t *testing.T, overflow bool) {
	root := watchedProject(t)
	c := ctx(t)
	s := open(t, root, Options{})
	defer s.Close()
	walker := open(t, root, Options{NoWatch: true})
	info, err := s.SnapshotInfo(c)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Full || info.Why != "first snapshot" {
		t.Fatalf("first snapshot: %+v, want a walk", info)
	}
	type taken struct {
		name, id string
		files    map[string]string
	}
	history := []taken{{"start", info.ID, files(t, root)}}
	for _, st := range steps {
		st.change(t, root)
		if overflow {
			s.mu.Lock()
			w := s.w
			s.mu.Unlock()
			w.inject <- fsnotify.ErrEventOverflow
		}
		info, err := s.SnapshotInfo(c)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		want, err := walker.Snapshot(c)
		if err != nil {
			t.Fatal(err)
		}
		if info.ID != want {
			t.Errorf("%s: snapshot %s (%+v), a walk says %s", st.name, info.ID, info, want)
		}
		wantWhy := st.walk
		if overflow && (wantWhy == "" || info.Why == "overflow") {
			wantWhy = "overflow" // (or the step's own reason, whichever was read first)
		}
		if info.Full != (wantWhy != "") || info.Why != wantWhy {
			t.Errorf("%s: full %v why %q, want why %q", st.name, info.Full, info.Why, wantWhy)
		}
		history = append(history, taken{st.name, info.ID, files(t, root)})
	}
	// Back to each snapshot, newest first, then forward again: byte for
	// byte each time, and the snapshot after a restore is the one
	// restored, taken without a walk.
	order := make([]taken, 0, 2*len(history))
	for i := len(history) - 1; i >= 0; i-- {
		order = append(order, history[i])
	}
	order = append(order, history[1:]...)
	never := func(k string) bool { // ignored, or never snapshotted
		return strings.HasPrefix(k, "build") || strings.HasSuffix(k, ".log") ||
			strings.Contains(k, ".chirality") || strings.HasPrefix(k, ".harness/threads")
	}
	for _, h := range order {
		if _, err := s.Restore(c, h.id); err != nil {
			t.Fatalf("restore %s: %v", h.name, err)
		}
		got := files(t, root)
		for k := range got { // what the restored .gitignore ignores stays
			if never(k) {
				delete(got, k)
			}
		}
		want := map[string]string{}
		for k, v := range h.files {
			if !never(k) {
				want[k] = v
			}
		}
		for k := range want { // empty directories are not snapshotted
			if want[k] == "dir" {
				delete(want, k)
			}
		}
		for k := range got {
			if got[k] == "dir" {
				delete(got, k)
			}
		}
		sameFiles(t, "restore "+h.name, got, want)
		info, err := s.SnapshotInfo(c)
		if err != nil {
			t.Fatal(err)
		}
		if info.ID != h.id || (info.Full && info.Why != ".gitignore changed") {
			t.Errorf("snapshot after restoring %s: %+v, want %s without a walk", h.name, info, h.id)
		}
	}
}

// Snapshots taken from the watcher's list write a pack each; past
// maxPacks they are merged, and every snapshot still restores.
func TestPacksMerged(t *testing.T) {
	defer func(n int) { maxPacks = n }(maxPacks)
	maxPacks = 4
	root := watchedProject(t)
	c := ctx(t)
	s := open(t, root, Options{})
	defer s.Close()
	var ids []string
	var want []map[string]string
	for i := range 3 * maxPacks {
		write(t, root, fmt.Sprintf("f%d.txt", i%3), fmt.Sprintf("version %d\n", i), 0o644)
		info, err := s.SnapshotInfo(c)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && info.Full {
			t.Fatalf("snapshot %d walked: %s", i, info.Why)
		}
		if n := packs(filepath.Join(s.gitDir, "objects")); n > maxPacks+1 {
			t.Fatalf("%d packs after snapshot %d, want at most %d", n, i, maxPacks+1)
		}
		ids, want = append(ids, info.ID), append(want, files(t, root))
	}
	// git reads the packs written in process as its own.
	if _, _, err := s.run(c, call{args: []string{"fsck", "--full", "--strict", "--no-dangling"}}); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if _, err := s.Restore(c, id); err != nil {
			t.Fatal(err)
		}
		sameFiles(t, fmt.Sprint("restore ", i), files(t, root), want[i])
	}
}

// Many new files (the first snapshot) are hashed in process before git
// add -A runs, or instead of it when git listed nothing else: the
// snapshot is the tree git alone makes of the same files, with symlinks
// and an executable, and with or without a file too big to be read here,
// an ignored directory and a nested repository.
func TestPrefillMatchesGit(t *testing.T) {
	for _, odd := range []bool{false, true} {
		t.Run(fmt.Sprint("odd=", odd), func(t *testing.T) { testPrefill(t, odd) })
	}
}

func testPrefill(t *testing.T, odd bool) {
	root := t.TempDir()
	for i := range bulkFiles + 44 {
		write(t, root, fmt.Sprintf("d%d/f%d.txt", i%7, i), strings.Repeat(fmt.Sprint(i), i), 0o644)
	}
	write(t, root, "run.sh", "#!/bin/sh\n", 0o755)
	symlink(t, root, "d1", "link-dir")
	symlink(t, root, "missing", "link-dangling")
	if odd {
		write(t, root, "big.bin", strings.Repeat("big\x00", 600_000), 0o644)
		write(t, root, ".gitignore", "ignored/\n", 0o644)
		write(t, root, "ignored/x.txt", "not snapshotted\n", 0o644)
		write(t, root, "nested/file.txt", "in a nested repository\n", 0o644)
		userGit(t, filepath.Join(root, "nested"), "init", "-q")
		userGit(t, filepath.Join(root, "nested"), "add", "-A")
		userGit(t, filepath.Join(root, "nested"), "commit", "-q", "-m", "nested")
	}
	// Files older than the index, as most are: git trusts the entries
	// written here (none is "racily clean", which git would re-read).
	old := time.Now().Add(-time.Hour)
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			err = os.Chtimes(p, old, old)
		}
		return err
	})
	s := open(t, root, Options{})
	defer s.Close()
	c := ctx(t)
	before := files(t, root)
	info, err := s.SnapshotInfo(c)
	if err != nil {
		t.Fatal(err)
	}
	first := info.ID
	fresh := filepath.Join(t.TempDir(), "index")
	if _, _, err := s.run(c, call{args: []string{"add", "-A"}, index: fresh}); err != nil {
		t.Fatal(err)
	}
	out, _, err := s.run(c, call{args: []string{"write-tree"}, index: fresh})
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(out)); info.ID != want {
		t.Fatalf("snapshot %s, git alone %s", info.ID, want)
	}
	if _, _, err := s.run(c, call{args: []string{"fsck", "--full", "--strict", "--no-dangling"}}); err != nil {
		t.Fatal(err)
	}
	// And the next snapshot, from the watcher's list, starts from it.
	write(t, root, "d1/f1.txt", "changed\n", 0o644)
	info, err = s.SnapshotInfo(c)
	if err != nil {
		t.Fatal(err)
	}
	if want, err := open(t, root, Options{NoWatch: true}).Snapshot(c); err != nil || info.ID != want {
		t.Fatalf("next snapshot %s, a walk says %s (%v)", info.ID, want, err)
	}
	// The first snapshot, read and packed here, restores byte for byte.
	if _, err := s.Restore(c, first); err != nil {
		t.Fatal(err)
	}
	// (A nested repository's own .git is git's there: not compared.)
	after := files(t, root)
	for _, m := range []map[string]string{before, after} {
		for k := range m {
			if strings.HasPrefix(k, filepath.Join("nested", ".git")) {
				delete(m, k)
			}
		}
	}
	sameFiles(t, "restored", after, before)
}

// Two watching stores on one project (a server and a CLI) share the
// store's index and sync directory: each one's snapshots stay those of a
// walk while the other snapshots and restores.
func TestTwoWatchingStores(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	root := watchedProject(t)
	c := ctx(t)
	a, b := open(t, root, Options{}), open(t, root, Options{})
	defer a.Close()
	defer b.Close()
	walker := open(t, root, Options{NoWatch: true})
	first, err := a.Snapshot(c)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range steps[:8] {
		st.change(t, root)
		want, err := walker.Snapshot(c)
		if err != nil {
			t.Fatal(err)
		}
		for name, s := range map[string]*Store{"a": a, "b": b} {
			got, err := s.Snapshot(c)
			if err != nil || got != want {
				t.Fatalf("%s: store %s snapshot %s, %v; a walk says %s", st.name, name, got, err, want)
			}
		}
		if i == 4 {
			if _, err := a.Restore(c, first); err != nil {
				t.Fatal(err)
			}
			for name, s := range map[string]*Store{"a": a, "b": b} {
				if got, err := s.Snapshot(c); err != nil || got != first {
					t.Fatalf("after a's restore, store %s snapshot %s, %v; want %s", name, got, err, first)
				}
			}
		}
	}
}

// A watcher error (not an overflow) makes the next snapshot walk and say
// so; after Close the store keeps no goroutine and every snapshot walks.
func TestWatcherErrorAndClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	root := watchedProject(t)
	c := ctx(t)
	s := open(t, root, Options{})
	if _, err := s.Snapshot(c); err != nil {
		t.Fatal(err)
	}
	write(t, root, "a.txt", "changed\n", 0o644)
	s.mu.Lock()
	w := s.w
	s.mu.Unlock()
	w.inject <- errors.New("injected")
	info, err := s.SnapshotInfo(c)
	if err != nil || !info.Full || info.Why != "watcher error: injected" {
		t.Fatalf("after a watcher error: %+v, %v", info, err)
	}
	write(t, root, "a.txt", "changed again\n", 0o644)
	if info, err := s.SnapshotInfo(c); err != nil || info.Full {
		t.Fatalf("with the new watcher: %+v, %v", info, err)
	}
	s.Close()
	s.Close()
	write(t, root, "b.txt", "after close\n", 0o644)
	info, err = s.SnapshotInfo(c)
	if err != nil || !info.Full || info.Why != "store closed" {
		t.Fatalf("after Close: %+v, %v", info, err)
	}
	want, err := open(t, root, Options{NoWatch: true}).Snapshot(c)
	if err != nil || info.ID != want {
		t.Fatalf("after Close: %s, a walk says %s (%v)", info.ID, want, err)
	}
}

// A watcher syncs with one file of its own, renamed at each snapshot (no
// file created per turn), removed when the store closes (and, left by a
// killed process, when the next watcher starts); a sync file someone
// removed is made again, and the snapshot still comes from the watcher's
// list.
func TestWatcherSyncFile(t *testing.T) {
	root := watchedProject(t)
	c := ctx(t)
	s := open(t, root, Options{})
	syncDir := filepath.Join(s.gitDir, "sync")
	names := func() []string {
		t.Helper()
		ents, err := os.ReadDir(syncDir)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, e := range ents {
			n = append(n, e.Name())
		}
		return n
	}
	inode := func(name string) uint64 {
		t.Helper()
		fi, err := os.Stat(filepath.Join(syncDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	// What processes now gone left: removed when a watcher starts. (No
	// process has an ID over the kernel's pid_max, 4194304 at most.)
	if err := os.MkdirAll(syncDir, 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, syncDir, "999999999-1-7", "", 0o600)
	if _, err := s.Snapshot(c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(syncDir, "999999999-1-7")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a dead process's sync file: %v, want it removed", err)
	}
	var ino uint64
	for i := range 4 {
		write(t, root, "a.txt", fmt.Sprintf("turn %d\n", i), 0o644)
		info, err := s.SnapshotInfo(c)
		if err != nil || info.Full {
			t.Fatalf("snapshot %d: %+v, %v; want one from the watcher's list", i, info, err)
		}
		n := names()
		if len(n) != 1 {
			t.Fatalf("snapshot %d: sync files %q, want one", i, n)
		}
		if i == 0 {
			ino = inode(n[0])
		} else if got := inode(n[0]); got != ino {
			t.Fatalf("snapshot %d: the sync file is a new file (inode %d, was %d)", i, got, ino)
		}
	}
	if err := os.Remove(filepath.Join(syncDir, names()[0])); err != nil {
		t.Fatal(err)
	}
	write(t, root, "a.txt", "after the sync file went\n", 0o644)
	if info, err := s.SnapshotInfo(c); err != nil || info.Full {
		t.Fatalf("after the sync file was removed: %+v, %v; want one from the watcher's list", info, err)
	}
	if n := names(); len(n) != 1 {
		t.Fatalf("sync files %q, want one", n)
	}
	s.Close()
	if n := names(); len(n) != 0 {
		t.Fatalf("after Close: sync files %q, want none", n)
	}
}
