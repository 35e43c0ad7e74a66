package checkpoint

import (
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// An index written here is one git reads (ls-files -s lists its
// entries), and reads back as written.
func TestIndexRoundTrip(t *testing.T) {
	s := open(t, t.TempDir(), Options{NoWatch: true})
	es := []indexEntry{
		{path: "z/deep/file", mode: modeFile, id: hashObject("blob", []byte("z\n")), st: stat{mtime: 1, size: 2}, size: 2},
		{path: "a.sh", mode: modeExec, id: hashObject("blob", nil)},
		{path: "link", mode: modeSymlink, id: hashObject("blob", []byte("a.sh"))},
		{path: "odd name\twith\ttabs " + strings.Repeat("long", 1100), mode: modeFile, id: hashObject("blob", []byte("x"))},
	}
	if err := writeIndex(s.index, slices.Clone(es)); err != nil {
		t.Fatal(err)
	}
	out, _, err := s.run(ctx(t), call{args: []string{"ls-files", "-s", "-z"}})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	var want []string
	for _, e := range es {
		want = append(want, fmt.Sprintf("%06o %s 0\t%s", e.mode, e.id, e.path))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("git ls-files -s:\n%q\nwant\n%q", got, want)
	}
	back, err := readIndex(s.index)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(es, func(a, b indexEntry) int { return strings.Compare(a.path, b.path) })
	if !reflect.DeepEqual(back, es) {
		t.Fatalf("read back %+v\nwant %+v", back, es)
	}
}

// readIndex never panics, and what it reads it writes back the same.
// The input is an index without its checksum (added here, so that the
// entries are what is explored).
func FuzzReadIndex(f *testing.F) {
	dir := f.TempDir()
	p := filepath.Join(dir, "index")
	if err := writeIndex(p, []indexEntry{{path: "a", mode: modeFile}, {path: "b/c", mode: modeSymlink, size: 3, st: stat{size: 3}}}); err != nil {
		f.Fatal(err)
	}
	seed, _ := os.ReadFile(p)
	f.Add(seed[:len(seed)-sha1.Size])
	f.Add(seed[:40])
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "index")
		sum := sha1.Sum(data)
		if err := os.WriteFile(p, append(data, sum[:]...), 0o600); err != nil {
			t.Fatal(err)
		}
		es, err := readIndex(p)
		if err != nil {
			return
		}
		if err := writeIndex(p, slices.Clone(es)); err != nil {
			t.Fatal(err)
		}
		back, err := readIndex(p)
		if err != nil {
			t.Fatalf("an index written from what was read: %v", err)
		}
		slices.SortStableFunc(es, func(a, b indexEntry) int { return strings.Compare(a.path, b.path) })
		if len(back) != len(es) {
			t.Fatalf("%d entries back, want %d", len(back), len(es))
		}
		for i := range es {
			if back[i].path != es[i].path || back[i].mode != es[i].mode || back[i].id != es[i].id || back[i].st != es[i].st {
				t.Fatalf("entry %d back %+v, want %+v", i, back[i], es[i])
			}
		}
	})
}
