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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// userGit runs git for the test as a user would, in dir, with no config
// but the test's identity, and no GIT_* variable of the test's parent.
func userGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.com",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgSign=false"}, args...)...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func write(t *testing.T, root, rel, content string, mode fs.FileMode) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// files describes every entry under root but .git and .chirality: a
// file's mode and bytes, a symlink's target, a directory.
func files(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if rel == ".git" || rel == ".chirality" {
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			m[rel] = "symlink → " + target
		case fi.IsDir():
			m[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[rel] = fmt.Sprintf("%v %q", fi.Mode().Perm()&0o100, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameFiles(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %.80s, want %.80s", what, k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s = %.80s is extra", what, k, v)
		}
	}
}

// userState is what a user sees of their repository.
func userState(t *testing.T, root string) string {
	t.Helper()
	index, err := os.ReadFile(filepath.Join(root, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join([]string{
		userGit(t, root, "rev-parse", "HEAD"),
		userGit(t, root, "symbolic-ref", "HEAD"),
		userGit(t, root, "status", "--porcelain", "--untracked-files=all"),
		userGit(t, root, "stash", "list"),
		userGit(t, root, "branch", "-a", "-v"),
		userGit(t, root, "for-each-ref"),
		fmt.Sprintf("index %x", index),
	}, "\n---\n")
}

func open(t *testing.T, root string, o Options) *Store {
	t.Helper()
	s, err := Open(root, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func ops(cs []Change) map[string]string {
	m := map[string]string{}
	for _, c := range cs {
		m[c.Path] = c.Op
	}
	return m
}

func sameOps(t *testing.T, what string, got []Change, want map[string]string) {
	t.Helper()
	g := ops(got)
	if fmt.Sprint(g) != fmt.Sprint(want) {
		t.Errorf("%s: changes %v, want %v", what, g, want)
	}
}

var binary = "\x00\x01\xff\xfe bin \r\n\x00" + strings.Repeat("\x89PNG", 50)

// userRepo makes a project that is a git repository with a commit, a
// staged change, an untracked file, a stash entry and a second branch.
func userRepo(t *testing.T) string {
	root := t.TempDir()
	userGit(t, root, "init", "-q")
	write(t, root, "a.txt", "alpha\n", 0o644)
	write(t, root, "sub/b.txt", "beta\n", 0o644)
	write(t, root, "run.sh", "#!/bin/sh\necho hi\n", 0o755)
	write(t, root, "img.bin", binary, 0o644)
	write(t, root, "plain.txt", "plain\n", 0o644)
	userGit(t, root, "add", "-A")
	userGit(t, root, "commit", "-q", "-m", "first")
	userGit(t, root, "branch", "feature")
	write(t, root, "a.txt", "alpha stashed\n", 0o644)
	userGit(t, root, "stash", "-q")
	write(t, root, "sub/b.txt", "beta staged\n", 0o644)
	userGit(t, root, "add", "sub/b.txt")
	write(t, root, "notes.txt", "untracked\n", 0o644)
	return root
}

// turn changes the files the way an agent's turn would.
func turn(t *testing.T, root string) {
	t.Helper()
	write(t, root, "new.txt", "created\n", 0o644)
	write(t, root, "newdir/deep/c.txt", "in a new dir\n", 0o644)
	write(t, root, "a.txt", "alpha changed\n", 0o644)
	if err := os.Remove(filepath.Join(root, "sub", "b.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, root, "notes.txt", "untracked, changed\n", 0o644)
	if err := os.Chmod(filepath.Join(root, "run.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "plain.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, root, "img.bin", binary+"\x00\x00more", 0o644)
}

var turnOps = map[string]string{
	"a.txt": OpModified, "img.bin": OpModified, "new.txt": OpAdded, "newdir/deep/c.txt": OpAdded,
	"notes.txt": OpModified, "plain.txt": OpModified, "run.sh": OpModified, "sub/b.txt": OpDeleted,
}

// A turn creates, modifies and deletes files (tracked and untracked, an
// executable bit both ways, a binary file, a file in a new directory):
// Diff lists each, Restore puts every byte and mode back and removes the
// new directory, and the user's repository (HEAD, status, index bytes,
// stash, branches) is the same throughout, even with the caller's GIT_*
// variables pointing at it.
func TestRestoreUndoesATurn(t *testing.T) {
	root := userRepo(t)
	t.Setenv("GIT_DIR", filepath.Join(root, ".git"))
	t.Setenv("GIT_INDEX_FILE", filepath.Join(root, ".git", "index"))
	t.Setenv("GIT_WORK_TREE", root)
	before, state := files(t, root), userState(t, root)
	s := open(t, root, Options{})
	id, err := s.Snapshot(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := userState(t, root); got != state {
		t.Fatalf("snapshot changed the user's repository:\n%s\nwas\n%s", got, state)
	}
	if again, err := s.Snapshot(ctx(t)); err != nil || again != id {
		t.Fatalf("second snapshot of unchanged files = %s, %v; want %s", again, err, id)
	}
	turn(t, root)
	after := files(t, root)

	diff, err := s.Diff(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	sameOps(t, "diff", diff, turnOps)
	for _, c := range diff {
		if c.Patch == "" || c.Truncated {
			t.Errorf("%s: patch %q truncated=%v", c.Path, c.Patch, c.Truncated)
		}
		switch c.Path {
		case "a.txt":
			if !strings.Contains(c.Patch, "-alpha\n+alpha changed\n") {
				t.Errorf("a.txt patch:\n%s", c.Patch)
			}
		case "img.bin":
			if !strings.Contains(c.Patch, "Binary files") {
				t.Errorf("img.bin patch:\n%s", c.Patch)
			}
		case "run.sh":
			if !strings.Contains(c.Patch, "old mode 100755\nnew mode 100644") {
				t.Errorf("run.sh patch:\n%s", c.Patch)
			}
		}
	}
	sameFiles(t, "diff left the files", files(t, root), after)

	changes, err := s.Restore(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	sameOps(t, "restore", changes, turnOps)
	sameFiles(t, "restored", files(t, root), before)
	if got := userState(t, root); got != state {
		t.Fatalf("restore changed the user's repository:\n%s\nwas\n%s", got, state)
	}
	if d, err := s.Diff(ctx(t), id); err != nil || len(d) != 0 {
		t.Fatalf("diff after restore = %v, %v; want none", d, err)
	}
	// Restoring the same snapshot again changes nothing.
	if again, err := s.Restore(ctx(t), id); err != nil || len(again) != 0 {
		t.Fatalf("second restore = %v, %v", again, err)
	}
}

// A project that is no git repository works the same, and no .git
// appears in it.
func TestNotARepository(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.txt", "a\n", 0o644)
	write(t, root, "run.sh", "#!/bin/sh\n", 0o755)
	write(t, root, "sub/b.txt", "beta\n", 0o644)
	write(t, root, "plain.txt", "plain\n", 0o644)
	write(t, root, "img.bin", binary, 0o644)
	write(t, root, "notes.txt", "notes\n", 0o644)
	before := files(t, root)
	s := open(t, root, Options{})
	id, err := s.Snapshot(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	turn(t, root)
	changes, err := s.Restore(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	sameOps(t, "restore", changes, turnOps)
	sameFiles(t, "restored", files(t, root), before)
	if _, err := os.Lstat(filepath.Join(root, ".git")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf(".git in a project that had none: %v", err)
	}
}

// treeFiles lists the paths in snapshot id.
func treeFiles(t *testing.T, s *Store, id string) []string {
	t.Helper()
	out, _, err := s.run(ctx(t), call{args: []string{"ls-tree", "-r", "-z", "--name-only", id}})
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	slices.Sort(names)
	return names
}

// What .gitignore ignores is never snapshotted and never removed or
// overwritten by a restore, also when the turn stopped ignoring a file
// that existed (ignored) before it. .git and .chirality are never in a
// snapshot.
func TestGitignore(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".gitignore", "*.log\nbuild/\n", 0o644)
	write(t, root, "keep.txt", "keep\n", 0o644)
	write(t, root, "app.log", "log before\n", 0o644)
	write(t, root, "old.log", "an ignored file the turn will unignore\n", 0o644)
	write(t, root, "build/out.bin", "built\n", 0o644)
	write(t, root, ".chirality/sessions/x.json", "{}", 0o600)
	write(t, root, "sub/.chirality/y", "nested harness dir", 0o600)
	write(t, root, ".git/config", "not a repo really", 0o600)
	s := open(t, root, Options{})
	id, err := s.Snapshot(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := treeFiles(t, s, id); fmt.Sprint(got) != "[.gitignore keep.txt]" {
		t.Fatalf("snapshot holds %q, want .gitignore and keep.txt only", got)
	}
	write(t, root, "app.log", "log during the turn\n", 0o644)
	write(t, root, "build/new.o", "new build output\n", 0o644)
	write(t, root, ".gitignore", "build/\n", 0o644) // old.log is no longer ignored
	write(t, root, "keep.txt", "changed\n", 0o644)
	want := files(t, root)
	changes, err := s.Restore(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	// app.log was added (no longer ignored) but the snapshot's .gitignore
	// ignores it: kept, and not reported as removed.
	sameOps(t, "restore", changes, map[string]string{".gitignore": OpModified, "keep.txt": OpModified})
	want[".gitignore"] = fmt.Sprintf("%v %q", fs.FileMode(0), "*.log\nbuild/\n")
	want["keep.txt"] = fmt.Sprintf("%v %q", fs.FileMode(0), "keep\n")
	sameFiles(t, "after restore", files(t, root), want)
}

// A project over either limit fails with ErrTooLarge, a *LimitError
// naming the limit and the option that raises it, and stores nothing.
func TestTooLarge(t *testing.T) {
	root := t.TempDir()
	for i := range 10 {
		write(t, root, fmt.Sprintf("f%d.txt", i), strings.Repeat("x", 100), 0o644)
	}
	write(t, root, ".gitignore", "ignored/\n", 0o644)
	for i := range 50 {
		write(t, root, fmt.Sprintf("ignored/%d", i), "not counted", 0o644)
	}
	for _, tc := range []struct {
		o     Options
		limit string
		field string
	}{
		{Options{MaxFiles: 5}, "files", "MaxFiles"},
		{Options{MaxBytes: 500}, "bytes", "MaxBytes"},
	} {
		s := open(t, root, tc.o)
		_, err := s.Snapshot(ctx(t))
		var le *LimitError
		if !errors.Is(err, ErrTooLarge) || !errors.As(err, &le) || le.Limit != tc.limit {
			t.Fatalf("%+v: err = %v, want a %s LimitError", tc.o, err, tc.limit)
		}
		if msg := err.Error(); !strings.Contains(msg, tc.field) || !strings.Contains(msg, ".gitignore") {
			t.Errorf("message %q does not say how to raise the limit", msg)
		}
		objs, _ := os.ReadDir(filepath.Join(root, filepath.FromSlash(Dir), "objects"))
		for _, o := range objs {
			if o.Name() != "info" && o.Name() != "pack" {
				t.Errorf("an object directory %s was written", o.Name())
			}
		}
	}
	// Ignored files are not counted: 11 files fit a limit of 11.
	s := open(t, root, Options{MaxFiles: 11, MaxBytes: 1200})
	if _, err := s.Snapshot(ctx(t)); err != nil {
		t.Fatalf("within the limits: %v", err)
	}
	// The files the store holds count (from its index) with new ones.
	write(t, root, "one-more.txt", "x", 0o644)
	if _, err := s.Snapshot(ctx(t)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a 12th file: %v, want ErrTooLarge", err)
	}
	os.Remove(filepath.Join(root, "one-more.txt"))
	write(t, root, "big.txt", strings.Repeat("x", 200), 0o644)
	if _, err := s.Snapshot(ctx(t)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("bytes over the limit with the held files: %v, want ErrTooLarge", err)
	}
}

// The index reader agrees with git on the number of entries and their
// sizes, for names of every length modulo the 8-byte padding.
func TestIndexTotals(t *testing.T) {
	root := t.TempDir()
	var want int64
	for i := range 40 {
		content := strings.Repeat("y", i*37)
		write(t, root, strings.Repeat("n", i+1)+"/"+strings.Repeat("é", i%5)+"f", content, 0o644)
		want += int64(len(content))
	}
	if err := os.Symlink("some/target", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	want += int64(len("some/target"))
	s := open(t, root, Options{})
	if _, err := s.Snapshot(ctx(t)); err != nil {
		t.Fatal(err)
	}
	files, total, ok := indexTotals(s.index)
	if !ok || files != 41 || total != want {
		t.Fatalf("indexTotals = %d files, %d bytes, %v; want 41, %d", files, total, ok, want)
	}
	idx, err := os.ReadFile(s.index)
	if err != nil {
		t.Fatal(err)
	}
	v3 := append([]byte("DIRC\x00\x00\x00\x03"), idx[8:]...)
	for name, bad := range map[string][]byte{"text": []byte("not an index"), "v3": v3, "cut": idx[:len(idx)/2], "header": idx[:12+30]} {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := indexTotals(p); ok {
			t.Errorf("%s: read as an index", name)
		}
	}
	if files, total, ok := indexTotals(filepath.Join(root, "missing")); !ok || files != 0 || total != 0 {
		t.Fatalf("a missing index: %d %d %v", files, total, ok)
	}
}

// A deadline that ends a git call is an error that says so, and the store
// works afterwards (a killed git's index.lock is not left in the way).
func TestDeadline(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.txt", "a", 0o644)
	s := open(t, root, Options{Timeout: time.Nanosecond})
	if _, err := s.Snapshot(ctx(t)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if err := os.WriteFile(s.index+".lock", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := open(t, root, Options{}).Snapshot(ctx(t)); err != nil {
		t.Fatalf("after a deadline: %v", err)
	}
}

// Two stores of one project (two processes) snapshot at once: the lock
// file lets both finish with the same tree.
func TestConcurrentStores(t *testing.T) {
	root := t.TempDir()
	for i := range 30 {
		write(t, root, fmt.Sprintf("d%d/f.txt", i), fmt.Sprint(i), 0o644)
	}
	var wg sync.WaitGroup
	ids := make([]string, 4)
	errs := make([]error, 4)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = open(t, root, Options{}).Snapshot(ctx(t))
		}()
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("snapshot %d = %s, %v; first %s", i, ids[i], errs[i], ids[0])
		}
	}
}

// Diff cuts long patches at MaxPatchBytes and marks them; a diff over
// MaxDiffBytes marks the files whose patch did not fit.
func TestDiffBounds(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.txt", "a\n", 0o644)
	write(t, root, "b.txt", "b\n", 0o644)
	s := open(t, root, Options{MaxPatchBytes: 300, MaxDiffBytes: 2000})
	id, err := s.Snapshot(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, "a.txt", strings.Repeat("a long line\n", 100), 0o644)
	write(t, root, "b.txt", strings.Repeat("b long line\n", 1000), 0o644)
	d, err := s.Diff(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 2 {
		t.Fatalf("diff = %+v", d)
	}
	for _, c := range d {
		if !c.Truncated || len(c.Patch) > 300 {
			t.Errorf("%s: truncated=%v, %d bytes of patch", c.Path, c.Truncated, len(c.Patch))
		}
	}
	if !strings.HasPrefix(d[0].Patch, "diff --git a/a.txt b/a.txt\n") || !strings.HasSuffix(d[0].Patch, "\n") {
		t.Errorf("a.txt patch: %q", d[0].Patch)
	}
}

func TestUnknownSnapshot(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.txt", "a", 0o644)
	s := open(t, root, Options{})
	if _, err := s.Snapshot(ctx(t)); err != nil {
		t.Fatal(err)
	}
	blob, _, err := s.run(ctx(t), call{args: []string{"hash-object", "-w", "a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "HEAD", "--output=/tmp/x", "../../etc", strings.Repeat("0", 40),
		strings.TrimSpace(string(blob)), strings.Repeat("A", 40)} {
		if _, err := s.Restore(ctx(t), id); !errors.Is(err, ErrUnknownSnapshot) {
			t.Errorf("Restore(%q) = %v, want ErrUnknownSnapshot", id, err)
		}
		if _, err := s.Diff(ctx(t), id); !errors.Is(err, ErrUnknownSnapshot) {
			t.Errorf("Diff(%q) = %v, want ErrUnknownSnapshot", id, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "a" {
		t.Fatalf("a.txt = %q", b)
	}
}

func TestOpenNeedsGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := Open(t.TempDir(), Options{}); !errors.Is(err, ErrNoGit) {
		t.Fatalf("err = %v, want ErrNoGit", err)
	}
}

func TestNameStatus(t *testing.T) {
	got, err := parseNameStatus([]byte("A\x00new\nline\x00D\x00gone\x00M\x00m\x00T\x00t\x00"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{{Path: "new\nline", Op: OpAdded}, {Path: "gone", Op: OpDeleted}, {Path: "m", Op: OpModified}, {Path: "t", Op: OpModified}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v", got)
	}
	for _, bad := range []string{"A\x00", "X\x00p\x00"} {
		if _, err := parseNameStatus([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestPatchPath(t *testing.T) {
	for chunk, want := range map[string]string{
		"diff --git a/x y b/x y\n":                                      "x y",
		"diff --git a/a b/c b/a b/c\n":                                  "a b/c",
		`diff --git "a/q\"\\\n\t\303\251" "b/q\"\\\n\t\303\251"` + "\n": "q\"\\\n\té",
	} {
		if got, ok := patchPath(chunk); !ok || got != want {
			t.Errorf("patchPath(%q) = %q, %v; want %q", chunk, got, ok, want)
		}
	}
	for _, bad := range []string{"", "diff --git a/x b/y\n", `diff --git "a/x`, `diff --git "a/\9"`, "index 1..2\n"} {
		if p, ok := patchPath(bad); ok {
			t.Errorf("patchPath(%q) = %q, ok", bad, p)
		}
	}
}

func FuzzPatches(f *testing.F) {
	f.Add([]byte("diff --git a/x b/x\n+1\ndiff --git \"a/\\n\" \"b/\\n\"\n-2\n"), 300)
	f.Fuzz(func(t *testing.T, out []byte, limit int) {
		changes := []Change{{Path: "x", Op: OpModified}, {Path: "\n", Op: OpAdded}}
		attachPatches(changes, out, len(out)%2 == 0, limit%1000)
		for _, c := range changes {
			if limit%1000 >= 0 && len(c.Patch) > max(limit%1000, 0) {
				t.Fatalf("patch of %d bytes over %d", len(c.Patch), limit%1000)
			}
		}
		if !bytes.Contains(out, []byte("diff")) {
			for _, c := range changes {
				if c.Patch != "" {
					t.Fatalf("patch %q from output without a header", c.Patch)
				}
			}
		}
	})
}

// looseCount counts the store's loose objects.
func looseCount(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	dirs, _ := os.ReadDir(filepath.Join(s.gitDir, "objects"))
	for _, d := range dirs {
		if len(d.Name()) == 2 {
			objs, _ := os.ReadDir(filepath.Join(s.gitDir, "objects", d.Name()))
			n += len(objs)
		}
	}
	return n
}

// The first snapshot is packed (no loose object per file); every
// snapshot has a ref, so a repack keeps (and packs) older ones: an old
// snapshot restores after the objects were packed.
func TestPacked(t *testing.T) {
	root := t.TempDir()
	for i := range bulkFiles + 10 {
		write(t, root, fmt.Sprintf("d%d/f%d.txt", i%10, i), strings.Repeat(fmt.Sprint(i), 100), 0o644)
	}
	before := files(t, root)
	s := open(t, root, Options{})
	id, err := s.Snapshot(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if n := looseCount(t, s); n != 0 {
		t.Fatalf("%d loose objects after the first snapshot, want all packed", n)
	}
	packs0 := packs(filepath.Join(s.gitDir, "objects"))
	write(t, root, "d1/f1.txt", "changed", 0o644)
	id2, err := s.Snapshot(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if n, p := looseCount(t, s), packs(filepath.Join(s.gitDir, "objects")); n != 0 || p != packs0+1 {
		t.Fatalf("%d loose objects and %d packs after a one-file snapshot, want one pack more (the blob and its trees)", n, p)
	}
	// Pack everything (as the threshold would) and restore both.
	if _, _, err := s.run(ctx(t), call{args: []string{"repack", "-a", "-d", "-q"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.run(ctx(t), call{args: []string{"prune", "--expire=now"}}); err != nil {
		t.Fatal(err)
	}
	write(t, root, "d2/new.txt", "new", 0o644)
	if _, err := s.Restore(ctx(t), id2); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "d1", "f1.txt")); string(b) != "changed" {
		t.Fatalf("d1/f1.txt = %q", b)
	}
	if _, err := s.Restore(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "restored", files(t, root), before)
}
