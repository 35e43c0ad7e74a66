package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Paths a shell or a line-based parser would trip on round-trip: a
// newline, quotes, a backslash, a tab, a leading dash, non-ASCII, names
// that start with "..", and Diff finds the patch of each.
func TestHostileNames(t *testing.T) {
	root := t.TempDir()
	names := []string{"new\nline.txt", `quo"te's.txt`, `back\slash`, "tab\there", "-rf", "--output=x",
		"é ü 日本.txt", "..foo", "a/..b/c", "a/...", " lead space", "trail space "}
	for i, n := range names {
		write(t, root, n, fmt.Sprintf("content %d\n", i), 0o644)
	}
	before := files(t, root)
	s := open(t, root, Options{})
	id, err := s.Snapshot(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i, n := range names {
		if i%2 == 0 {
			write(t, root, n, fmt.Sprintf("changed %d\n", i), 0o644)
			want[n] = OpModified
		} else if err := os.Remove(filepath.Join(root, n)); err != nil {
			t.Fatal(err)
		} else {
			want[n] = OpDeleted
		}
		write(t, root, n+"\nnew", "new", 0o644)
		want[n+"\nnew"] = OpAdded
	}
	d, err := s.Diff(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	sameOps(t, "diff", d, want)
	for _, c := range d {
		if c.Patch == "" || c.Truncated {
			t.Errorf("%q: no patch", c.Path)
		}
	}
	changes, err := s.Restore(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	sameOps(t, "restore", changes, want)
	sameFiles(t, "restored", files(t, root), before)
}

// A symlink to a directory outside the project is snapshotted and
// restored as a symlink; a restore never writes through one: when the
// turn turned a directory into a symlink to the outside, the outside
// files stay as they were and the directory comes back.
func TestSymlinksOutside(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, "f.txt", "outside\n", 0o644)
	write(t, outside, "secret", "outside secret\n", 0o600)
	root := t.TempDir()
	write(t, root, "d/f.txt", "inside\n", 0o644)
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../etc/passwd", filepath.Join(root, "rel")); err != nil {
		t.Fatal(err)
	}
	before, outBefore := files(t, root), files(t, outside)
	s := open(t, root, Options{})
	id, err := s.Snapshot(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	// The turn: d becomes a symlink to the outside; out becomes a real
	// directory; rel is removed.
	if err := os.RemoveAll(filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	write(t, root, "out/secret", "inside now\n", 0o644)
	if err := os.Remove(filepath.Join(root, "rel")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Restore(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "restored", files(t, root), before)
	sameFiles(t, "outside", files(t, outside), outBefore)
	if target, err := os.Readlink(filepath.Join(root, "out")); err != nil || target != outside {
		t.Fatalf("out → %q, %v; want a symlink to %s", target, err, outside)
	}
}

// The project's .git/config sets hooks, an fsmonitor, a filter and a
// diff driver, its .gitattributes asks for them and for line-ending
// conversion, and a config planted in the store itself does the same:
// none of it runs, the user's git files are untouched, and every byte
// round-trips (CRLF and LF alike).
func TestRepoConfigNeverRuns(t *testing.T) {
	root := userRepo(t)
	marker := filepath.Join(t.TempDir(), "ran")
	hooks := t.TempDir()
	for _, h := range []string{"pre-commit", "post-checkout", "post-index-change", "fsmonitor-watchman", "reference-transaction"} {
		write(t, hooks, h, "#!/bin/sh\necho "+h+" >> "+marker+"\n", 0o755)
	}
	evil := "!sh -c 'echo ran >> " + marker + "; cat'"
	cfg := fmt.Sprintf("[core]\n\thooksPath = %s\n\tfsmonitor = %s/fsmonitor-watchman\n\tautocrlf = true\n"+
		"[filter \"evil\"]\n\tclean = %s\n\tsmudge = %s\n\trequired = true\n[diff \"evil\"]\n\ttextconv = %s\n\tcommand = %s\n",
		hooks, hooks, evil, evil, evil, evil)
	f, err := os.OpenFile(filepath.Join(root, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(cfg); err != nil {
		t.Fatal(err)
	}
	f.Close()
	write(t, root, ".gitattributes", "* text=auto eol=crlf filter=evil diff=evil ident\n", 0o644)
	write(t, root, "lf.txt", "one\ntwo $Id$\n", 0o644)
	write(t, root, "crlf.txt", "one\r\ntwo\r\n", 0o644)
	gitFiles := files(t, filepath.Join(root, ".git"))

	s := open(t, root, Options{})
	// The store's own config, planted after Open (an agent can write
	// there): rewritten before the next call.
	write(t, root, Dir+"/config", cfg, 0o600)
	write(t, root, Dir+"/info/attributes", "* filter=evil\n", 0o600)
	before := files(t, root)
	id, err := s.Snapshot(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, "lf.txt", "changed\n", 0o644)
	write(t, root, "crlf.txt", "changed\r\n", 0o644)
	write(t, root, Dir+"/config", cfg, 0o600)
	if _, err := s.Diff(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	write(t, root, Dir+"/config", cfg, 0o600)
	if _, err := s.Restore(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "restored", files(t, root), before)
	if b, err := os.ReadFile(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a hook, filter or fsmonitor ran: %q", b)
	}
	sameFiles(t, "the project's .git", files(t, filepath.Join(root, ".git")), gitFiles)
}

// A store directory that is a symlink (to the project's .git, or
// anywhere) is refused before git runs; so is a .chirality symlink.
func TestStoreSymlinkRefused(t *testing.T) {
	root := userRepo(t)
	state := userState(t, root)
	if err := os.MkdirAll(filepath.Join(root, ".chirality"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, ".git"), filepath.Join(root, filepath.FromSlash(Dir))); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root, Options{}); !errors.Is(err, ErrUnsafeStore) {
		t.Fatalf("Open with the store a symlink to .git: %v", err)
	}
	other := t.TempDir()
	if err := os.RemoveAll(filepath.Join(root, ".chirality")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(root, ".chirality")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root, Options{}); !errors.Is(err, ErrUnsafeStore) {
		t.Fatalf("Open with .chirality a symlink: %v", err)
	}
	// Swapped in after Open: the next call refuses too.
	if err := os.Remove(filepath.Join(root, ".chirality")); err != nil {
		t.Fatal(err)
	}
	s := open(t, root, Options{})
	if err := os.RemoveAll(filepath.Join(root, filepath.FromSlash(Dir))); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, ".git"), filepath.Join(root, filepath.FromSlash(Dir))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx(t)); !errors.Is(err, ErrUnsafeStore) {
		t.Fatalf("Snapshot with the store swapped for a symlink: %v", err)
	}
	if err := os.Remove(filepath.Join(root, filepath.FromSlash(Dir))); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(root, ".chirality"))
	if got := userState(t, root); got != state {
		t.Fatalf("the user's repository changed:\n%s\nwas\n%s", got, state)
	}
	if entries, _ := os.ReadDir(other); len(entries) != 0 {
		t.Fatalf("something was written through the .chirality symlink: %v", entries)
	}
}
