package worktree

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// An agent's commits made with Grants' environment land in the
// worktree's private store, out of the repository's sight; AdoptObjects
// moves them in (loose and packed), and drops a forged loose object.
func TestGrantsAdoptObjects(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t)
	m := New(0)
	info := create(t, m, root, "s1")
	g, err := m.Grants(ctx, info.Dir, info.Branch)
	if err != nil {
		t.Fatal(err)
	}
	common := filepath.Join(root, ".git")
	gitDir := filepath.Join(common, "worktrees", "s1")
	want := []string{gitDir + "/", filepath.Join(common, "refs", "heads", "harness") + "/", filepath.Join(common, "logs", "refs", "heads", "harness", "s1")}
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

// A branch without a directory of its own gets no ref grant.
func TestGrantsTopLevelBranch(t *testing.T) {
	root := newRepo(t)
	m := New(0)
	info, err := m.Create(context.Background(), CreateOptions{ProjectRoot: root, Dir: filepath.Join(t.TempDir(), "w"), Branch: "topic"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.Grants(context.Background(), info.Dir, info.Branch)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Writable) != 1 || !strings.HasSuffix(g.Writable[0], filepath.Join("worktrees", "w")+"/") {
		t.Errorf("Writable %q, want the worktree's gitdir only", g.Writable)
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
// for its commit grants (one rev-parse, a few mkdirs, the reflog's open),
// and what AdoptObjects costs after a turn that wrote no object.
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
	b.Run("adopt-nothing", func(b *testing.B) {
		for b.Loop() {
			if err := m.AdoptObjects(ctx, info.Dir); err != nil {
				b.Fatal(err)
			}
		}
	})
}
