package worktree

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// Index entries the agent hid from `git add -A` (skip-worktree for a
// file it never wrote, assume-unchanged over a file it did not change)
// are compared with the files again: Diff and Commit take what the
// files hold, and the worktree's index says so afterwards.
func TestHiddenIndexEntries(t *testing.T) {
	ctx := context.Background()
	m := New(0)
	root := newRepo(t)
	info := create(t, m, root, "s1")
	blob := func(s string) string {
		out, err := m.r.gitIn(ctx, info.Dir, strings.NewReader(s), "hash-object", "-w", "--stdin")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	gitT(t, info.Dir, "update-index", "--add", "--cacheinfo", "100644,"+blob("hidden\n")+",.mcp.json")
	gitT(t, info.Dir, "update-index", "--skip-worktree", ".mcp.json")
	gitT(t, info.Dir, "update-index", "--cacheinfo", "100644,"+blob("other\n")+",a.txt")
	gitT(t, info.Dir, "update-index", "--assume-unchanged", "a.txt")
	write(t, filepath.Join(info.Dir, "b.txt"), "b\n")

	d, err := m.Diff(ctx, info.Dir, info.BaseCommit)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 || d.Files[0].Path != "b.txt" {
		t.Errorf("Diff lists %+v; want b.txt only", d.Files)
	}
	if _, err := m.Commit(ctx, info.Dir, "work"); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, info.Dir, "ls-tree", "-r", "--name-only", "HEAD"); got != "a.txt\nb.txt" {
		t.Errorf("committed %q; want a.txt and b.txt", got)
	}
	if got := gitT(t, info.Dir, "show", "HEAD:a.txt"); got != "one" {
		t.Errorf("committed a.txt %q; want the file's one", got)
	}
	if got := gitT(t, info.Dir, "ls-files", "-v"); got != "H a.txt\nH b.txt" {
		t.Errorf("the index after Commit: %q", got)
	}
}
