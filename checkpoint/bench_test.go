package checkpoint

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// walkFloor is the fastest of a few bare walks of root (WalkDir and an
// lstat of every entry): what any snapshot that walks the tree costs at
// least. Each benchmark reports it for its own tree, in the same run.
func walkFloor(b *testing.B, root string) time.Duration {
	b.Helper()
	var fastest time.Duration
	for i := range 5 {
		t0 := time.Now()
		n := 0
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if _, err := d.Info(); err != nil {
				return err
			}
			n++
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if d := time.Since(t0); i == 0 || d < fastest {
			fastest = d
		}
	}
	return fastest
}

// reportFloor reports the walk's time and the benchmark's mean and
// fastest times as fractions of it.
func reportFloor(b *testing.B, floor, fastest time.Duration) {
	b.ReportMetric(float64(floor.Microseconds())/1000, "walk-ms")
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(floor), "x-walk")
	if fastest > 0 {
		b.ReportMetric(float64(fastest.Microseconds())/1000, "min-ms")
	}
}

// The bare walk itself, as a benchmark of its own.
func BenchmarkWalkFloor10k(b *testing.B) {
	root := benchProject(b, 100, 100)
	b.ResetTimer()
	for range b.N {
		walkFloor(b, root)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/5/1e6, "ms/walk")
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
	floor := walkFloor(b, root)
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
	var fastest time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		for k := range 10 {
			p := filepath.Join(root, fmt.Sprintf("pkg%03d", (k*dirs/10+i)%dirs), fmt.Sprintf("file%03d.go", (k*7+i)%100))
			if err := os.WriteFile(p, []byte(fmt.Sprintf("// turn %d edit %d\n", i, k)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		t0 := time.Now()
		info, err := s.SnapshotInfo(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if d := time.Since(t0); i == 0 || d < fastest {
			fastest = d
		}
		if info.Full && !o.NoWatch {
			b.Fatalf("snapshot %d walked: %s", i, info.Why)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(diskUsage(b, store)-before)/float64(b.N), "disk-B/turn")
	// The fastest run: the cost with the least interference from other
	// work on a shared machine.
	reportFloor(b, floor, fastest)
}

// The first snapshot of the same project (every file read, hashed and
// stored), and what it takes on disk.
func BenchmarkSnapshotFirst10k(b *testing.B) {
	root := benchProject(b, 100, 100)
	floor := walkFloor(b, root)
	store := filepath.Join(root, filepath.FromSlash(Dir))
	ctx := context.Background()
	var disk int64
	var fastest time.Duration
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
		b.StartTimer()
		t0 := time.Now()
		if _, err := s.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		b.StopTimer()
		if fastest == 0 || d < fastest {
			fastest = d
		}
		s.Close()
		disk = diskUsage(b, store)
	}
	b.ReportMetric(float64(disk), "disk-B")
	reportFloor(b, floor, fastest)
}

// A snapshot when nothing changed (a turn that only read).
func BenchmarkSnapshotUnchanged10k(b *testing.B) {
	root := benchProject(b, 100, 100)
	floor := walkFloor(b, root)
	s, err := Open(root, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Snapshot(ctx); err != nil {
		b.Fatal(err)
	}
	var fastest time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		info, err := s.SnapshotInfo(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if d := time.Since(t0); i == 0 || d < fastest {
			fastest = d
		}
		if info.Full {
			b.Fatalf("snapshot %d walked: %s", i, info.Why)
		}
	}
	b.StopTimer()
	reportFloor(b, floor, fastest)
}
