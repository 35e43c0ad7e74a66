package worktree

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// An agent's commits made with Grants' environment land in the
// worktree's private store, out of the repository's sight, on a detached
// HEAD (no ref of the repository is the agent's to write); AdoptObjects
// moves them in (loose and packed), and drops a forged loose object;
// Settle moves the branch to them.
func TestGrantsAdoptObjects(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t)
	m := New(0)
	info := create(t, m, root, "s1")
	g, err := m.Grants(ctx, info.Dir, info.Branch)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Detach(ctx, info.Dir); err != nil {
		t.Fatal(err)
	}
	common := filepath.Join(root, ".git")
	gitDir := filepath.Join(common, "worktrees", "s1")
	want := []string{gitDir + "/"}
	if !slices.Equal(g.Writable, want) {
		t.Errorf("Writable %q, want %q", g.Writable, want)
	}
	agent := func(args ...string) string {
		t.Helper()
		out, err := m.r.git(ctx, info.Dir, g.Env, args...)
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	write(t, filepath.Join(info.Dir, "a.txt"), "two\n")
	agent("commit", "-qam", "packed")
	agent("repack", "-q", "-d", "-l") // the private store's objects into a pack
	write(t, filepath.Join(info.Dir, "a.txt"), "three\n")
	agent("commit", "-qam", "loose")
	tip := agent("rev-parse", "HEAD")
	if _, err := m.r.git(ctx, root, nil, "cat-file", "-e", tip); err == nil {
		t.Fatal("the repository has the agent's commit before adoption: it was not written to the private store")
	}
	// a forged object: a valid name, other content
	forged := strings.Repeat("ab", 20)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write([]byte("blob 5\x00hello"))
	_ = zw.Close()
	write(t, filepath.Join(gitDir, "objects", forged[:2], forged[2:]), z.String())

	if err := m.AdoptObjects(ctx, info.Dir); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, root, "log", "--format=%s", info.Branch); got != "first" {
		t.Errorf("the branch moved before Settle: %q", got)
	}
	if moved, err := m.Settle(ctx, root, info.Dir, info.Branch); err != nil || moved != tip {
		t.Fatalf("Settle: %q, %v; want %s", moved, err, tip)
	}
	if got := gitT(t, info.Dir, "symbolic-ref", "HEAD"); got != "refs/heads/"+info.Branch {
		t.Errorf("the worktree's HEAD after Settle: %q", got)
	}
	if got := gitT(t, root, "log", "--format=%s", info.Branch); got != "loose\npacked\nfirst" {
		t.Errorf("the branch's log from the repository: %q", got)
	}
	gitT(t, root, "fsck", "--no-progress")
	if _, err := os.Stat(filepath.Join(common, "objects", forged[:2], forged[2:])); err == nil {
		t.Error("the forged object was adopted")
	}
	for _, sub := range []string{"pack", tip[:2]} {
		if ents, _ := os.ReadDir(filepath.Join(gitDir, "objects", sub)); len(ents) != 0 {
			t.Errorf("the private store's %s still holds %d entries", sub, len(ents))
		}
	}
	if err := m.AdoptObjects(ctx, info.Dir); err != nil { // nothing left: a no-op
		t.Fatal(err)
	}
}

// Settle moves a branch only forward: an agent's reset of its detached
// HEAD to an unrelated history, or to an earlier commit, leaves the
// branch where it was, and its files show as uncommitted changes; the
// worktree is on its branch again either way. A branch with no "/" in
// its name is committed to like any other. Before Settle, commits on the
// detached HEAD count as unmerged.
func TestSettleOnlyForward(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t)
	m := New(0)
	info, err := m.Create(ctx, CreateOptions{ProjectRoot: root, Dir: filepath.Join(t.TempDir(), "w"), Branch: "topic"})
	if err != nil {
		t.Fatal(err)
	}
	agentTurn := func(cmds ...[]string) {
		t.Helper()
		g, err := m.Grants(ctx, info.Dir, info.Branch)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Detach(ctx, info.Dir); err != nil {
			t.Fatal(err)
		}
		if _, err := m.r.git(ctx, info.Dir, nil, "symbolic-ref", "-q", "HEAD"); err == nil {
			t.Fatal("HEAD still on the branch after Grants")
		}
		for _, c := range cmds {
			if _, err := m.r.git(ctx, info.Dir, g.Env, c...); err != nil {
				t.Fatalf("git %v: %v", c, err)
			}
		}
	}
	write(t, filepath.Join(info.Dir, "a.txt"), "two\n")
	agentTurn([]string{"commit", "-qam", "two"})
	if un, err := m.Unmerged(ctx, root, info.Dir, info.Branch, info.Branch); err != nil || !un {
		t.Errorf("Unmerged with the agent's commit on the detached HEAD only: %v, %v; want true", un, err)
	}
	two, err := m.Settle(ctx, root, info.Dir, info.Branch)
	if err != nil || two == "" || gitT(t, root, "rev-parse", "topic") != two {
		t.Fatalf("Settle: %q, %v; topic at %s", two, err, gitT(t, root, "rev-parse", "topic"))
	}
	if moved, err := m.Settle(ctx, root, info.Dir, info.Branch); err != nil || moved != "" { // on its branch: nothing to do
		t.Fatalf("Settle again: %q, %v", moved, err)
	}

	// an unrelated history
	write(t, filepath.Join(info.Dir, "a.txt"), "other\n")
	agentTurn([]string{"checkout", "-q", "--orphan", "x"}, []string{"commit", "-qam", "unrelated"}, []string{"checkout", "-q", "--detach"})
	moved, err := m.Settle(ctx, root, info.Dir, info.Branch)
	if !errors.Is(err, ErrNotForward) || moved != "" {
		t.Fatalf("Settle after an unrelated history: %q, %v; want ErrNotForward", moved, err)
	}
	if got := gitT(t, root, "rev-parse", "topic"); got != two {
		t.Errorf("topic moved to %s, was %s", got, two)
	}
	if got := gitT(t, info.Dir, "symbolic-ref", "HEAD"); got != "refs/heads/topic" {
		t.Errorf("HEAD: %q", got)
	}
	if dirty, err := m.Dirty(ctx, info.Dir); err != nil || !dirty {
		t.Errorf("Dirty: %v, %v; want the agent's files as changes", dirty, err)
	}

	// back to an earlier commit
	gitT(t, info.Dir, "checkout", "-q", "-f", "topic")
	agentTurn([]string{"reset", "-q", "--hard", "HEAD~1"})
	if _, err := m.Settle(ctx, root, info.Dir, info.Branch); !errors.Is(err, ErrNotForward) {
		t.Fatalf("Settle after a reset back: %v; want ErrNotForward", err)
	}
	if got := gitT(t, root, "rev-parse", "topic"); got != two {
		t.Errorf("topic moved to %s, was %s", got, two)
	}
}

// FuzzLooseOK: any file is judged without a panic; compressed content is
// accepted under its SHA-1 exactly when it is a well-formed object, and
// never under another name.
func FuzzLooseOK(f *testing.F) {
	f.Add([]byte("blob 5\x00hello"), true)
	f.Add([]byte("tree 0\x00"), false)
	f.Add([]byte("nonsense"), true)
	f.Add([]byte("commit 99999999999999999999999999999999999"), true)
	f.Fuzz(func(t *testing.T, content []byte, compress bool) {
		p := filepath.Join(t.TempDir(), "o")
		data := content
		if compress {
			var z bytes.Buffer
			zw := zlib.NewWriter(&z)
			_, _ = zw.Write(content)
			_ = zw.Close()
			data = z.Bytes()
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if looseOK(p, strings.Repeat("0", 40)) || looseOK(p, strings.Repeat("0", 64)) {
			t.Fatal("accepted under a name that is not its hash")
		}
		if compress {
			sum := sha1.Sum(content)
			if got, want := looseOK(p, hex.EncodeToString(sum[:])), wellFormed(content); got != want {
				t.Fatalf("looseOK(%q) = %v, want %v", content, got, want)
			}
		}
	})
}

// wellFormed: "<blob|tree|commit|tag> <decimal size, no leading zero>\0"
// and exactly size bytes.
func wellFormed(b []byte) bool {
	head, body, ok := bytes.Cut(b, []byte{0})
	if !ok {
		return false
	}
	typ, size, ok := strings.Cut(string(head), " ")
	if !ok || !slices.Contains([]string{"blob", "tree", "commit", "tag"}, typ) || len(head)+1 > 32 {
		return false
	}
	n, err := strconv.Atoi(size)
	return err == nil && strconv.Itoa(n) == size && n == len(body)
}

// BenchmarkGrants is what a sandboxed worktree session's turn start pays
// for its commit grants (one rev-parse, a mkdir) and its detached HEAD
// (one git command), and what AdoptObjects costs after a turn that wrote
// no object.
func BenchmarkGrants(b *testing.B) {
	ctx := context.Background()
	root := newRepo(b)
	m := New(0)
	info, err := m.Create(ctx, CreateOptions{ProjectRoot: root, Dir: filepath.Join(b.TempDir(), "w"), Branch: "harness/w"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("grants", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.Grants(ctx, info.Dir, info.Branch); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("detach", func(b *testing.B) {
		for b.Loop() {
			if err := m.Detach(ctx, info.Dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("adopt-nothing", func(b *testing.B) {
		for b.Loop() {
			if err := m.AdoptObjects(ctx, info.Dir); err != nil {
				b.Fatal(err)
			}
		}
	})
}
