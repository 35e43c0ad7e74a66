package checkpoint

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchProject writes a project of dirs×per files of about 500 bytes.
func benchProject(b *testing.B, dirs, per int) string {
	b.Helper()
	root := b.TempDir()
	line := strings.Repeat("some source text, ", 25) + "\n"
	for d := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("pkg%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range per {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%03d.go", f)), []byte(fmt.Sprintf("// %d %d\n%s", d, f, line)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return root
}

// diskUsage is the space the store takes on disk (allocated blocks).
func diskUsage(b *testing.B, dir string) int64 {
	b.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// meter times a benchmark's snapshots beside bare walks of the same
// tree (WalkDir and an lstat of every entry: what any snapshot that
// walks costs at least), one walk before each snapshot, outside the
// timer, so that both see the same load on a shared machine. It also
// counts the CPU time a snapshot takes (the process's and its git
// children's), which depends less on that load.
type meter struct {
	b                  *testing.B
	root               string
	n                  int
	snap, walk, cpu    time.Duration
	fastSnap, fastWalk time.Duration
}

func bareWalk(b *testing.B, root string) time.Duration {
	t0 := time.Now()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		_, err = d.Info()
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// measure walks the tree (timer off), then times snapshot (timer on).
func (m *meter) measure(snapshot func()) {
	m.b.StopTimer()
	w := bareWalk(m.b, m.root)
	runtime.GC() // the walk's garbage is not the snapshot's to collect
	m.b.StartTimer()
	c0, t0 := cpuTime(), time.Now()
	snapshot()
	d, c := time.Since(t0), cpuTime()-c0
	if m.n == 0 || d < m.fastSnap {
		m.fastSnap = d
	}
	if m.n == 0 || w < m.fastWalk {
		m.fastWalk = w
	}
	m.n++
	m.snap += d
	m.walk += w
	m.cpu += c
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// report: the snapshots' fastest time, the walks' mean and fastest, the
// snapshots' mean as a multiple of the walks' mean, CPU per snapshot.
func (m *meter) report() {
	n := time.Duration(m.n)
	m.b.ReportMetric(ms(m.fastSnap), "min-ms")
	m.b.ReportMetric(ms(m.walk/n), "walk-ms")
	m.b.ReportMetric(ms(m.fastWalk), "walk-min-ms")
	m.b.ReportMetric(float64(m.snap)/float64(m.walk), "x-walk")
	m.b.ReportMetric(ms(m.cpu/n), "cpu-ms")
}

// The bare walk itself, as a benchmark of its own.
func BenchmarkWalkFloor10k(b *testing.B) {
	root := benchProject(b, 100, 100)
	b.ResetTimer()
	for range b.N {
		bareWalk(b, root)
	}
}

// The snapshot before a turn: a 10k-file project (100 directories of 100
// files) of which the last turn changed 10, in 10 directories. Reports
// the store's growth on disk per snapshot.
func BenchmarkSnapshotTurn10k(b *testing.B) { benchTurn(b, 100, Options{}) }

// The same, walking the tree each time (no watcher: the fallback).
func BenchmarkSnapshotTurnWalk10k(b *testing.B) { benchTurn(b, 100, Options{NoWatch: true}) }

// The same in a project of 100k files (1,000 directories of 100).
func BenchmarkSnapshotTurn100k(b *testing.B) { benchTurn(b, 1000, Options{}) }

func benchTurn(b *testing.B, dirs int, o Options) {
	root := benchProject(b, dirs, 100)
	s, err := Open(root, o)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	defer s.Close()
	if _, err := s.Snapshot(ctx); err != nil {
		b.Fatal(err)
	}
	store := filepath.Join(root, filepath.FromSlash(Dir))
	before := diskUsage(b, store)
	m := &meter{b: b, root: root}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		for k := range 10 {
			p := filepath.Join(root, fmt.Sprintf("pkg%03d", (k*dirs/10+i)%dirs), fmt.Sprintf("file%03d.go", (k*7+i)%100))
			if err := os.WriteFile(p, []byte(fmt.Sprintf("// turn %d edit %d\n", i, k)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		m.measure(func() {
			info, err := s.SnapshotInfo(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if info.Full && !o.NoWatch {
				b.Fatalf("snapshot %d walked: %s", i, info.Why)
			}
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(diskUsage(b, store)-before)/float64(b.N), "disk-B/turn")
	m.report()
}

// The first snapshot of the same project (every file read, hashed and
// stored, the watcher started), and what it takes on disk.
func BenchmarkSnapshotFirst10k(b *testing.B) {
	root := benchProject(b, 100, 100)
	store := filepath.Join(root, filepath.FromSlash(Dir))
	ctx := context.Background()
	var disk int64
	m := &meter{b: b, root: root}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if err := os.RemoveAll(filepath.Join(root, ".chirality")); err != nil {
			b.Fatal(err)
		}
		s, err := Open(root, Options{})
		if err != nil {
			b.Fatal(err)
		}
		m.measure(func() {
			if _, err := s.Snapshot(ctx); err != nil {
				b.Fatal(err)
			}
		})
		b.StopTimer()
		s.Close()
		disk = diskUsage(b, store)
	}
	b.ReportMetric(float64(disk), "disk-B")
	m.report()
}

// A snapshot when nothing changed (a turn that only read).
func BenchmarkSnapshotUnchanged10k(b *testing.B) {
	root := benchProject(b, 100, 100)
	s, err := Open(root, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Snapshot(ctx); err != nil {
		b.Fatal(err)
	}
	m := &meter{b: b, root: root}
	b.ResetTimer()
	for i := range b.N {
		m.measure(func() {
			info, err := s.SnapshotInfo(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if info.Full {
				b.Fatalf("snapshot %d walked: %s", i, info.Why)
			}
		})
	}
	b.StopTimer()
	m.report()
}
