package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/session"
)

// BenchmarkWorktreeSession measures creating a session with isolation
// "worktree" on a repository of 10,000 files (one commit), beside the
// floor: a bare `git worktree add -b` of the same repository. Each
// iteration's worktree is removed outside the timer.
//
// The repository is packed (git gc) and its automatic gc turned off
// before anything is timed: a fresh commit of 10,000 files leaves them
// loose, which starts a background `git gc --auto` that repacks and
// prunes them for tens of seconds, through whichever half of the run
// comes first. "interleaved" creates one of each in turn (each first
// every other time) and reports their medians side by side
// (p50-floor-ms, p50-session-ms), so the load of a shared machine and
// the page cache weigh on both alike.
//
//	go test -run '^$' -bench WorktreeSession -benchtime 20x .
func BenchmarkWorktreeSession(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10_000 {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "file %d\n", i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	git := func(dir string, args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=B", "-c", "user.email=b@example.com", "-c", "core.hooksPath=/dev/null"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(root, "init", "-q", "-b", "main")
	git(root, "add", ".")
	git(root, "-c", "gc.auto=0", "-c", "maintenance.auto=false", "commit", "-q", "-m", "10k files")
	git(root, "config", "gc.auto", "0")
	git(root, "config", "maintenance.auto", "false")
	git(root, "gc", "-q")

	b.Run("git-worktree-add", func(b *testing.B) {
		dir := b.TempDir()
		for i := 0; b.Loop(); i++ {
			wt := filepath.Join(dir, fmt.Sprint(i))
			git(root, "worktree", "add", "-q", "--no-track", "-b", fmt.Sprintf("floor/%d", i), wt, "HEAD")
			b.StopTimer()
			git(root, "worktree", "remove", "--force", wt)
			git(root, "branch", "-D", "-q", fmt.Sprintf("floor/%d", i))
			b.StartTimer()
		}
	})
	b.Run("interleaved", func(b *testing.B) {
		h := benchHarness(b, root)
		dir := b.TempDir()
		var floor, sess []time.Duration
		for i := 0; b.Loop(); i++ {
			wt := filepath.Join(dir, fmt.Sprint(i))
			addFloor := func() {
				t0 := time.Now()
				git(root, "worktree", "add", "-q", "--no-track", "-b", fmt.Sprintf("floor2/%d", i), wt, "HEAD")
				floor = append(floor, time.Since(t0))
			}
			if i%2 == 0 { // each goes first every other time: the second finds the pack in the page cache
				addFloor()
			}
			t0 := time.Now()
			s, err := h.NewSession(SessionSpec{ProjectRoot: root, Mode: "direct", Isolation: session.IsolationWorktree})
			if err != nil {
				b.Fatal(err)
			}
			sess = append(sess, time.Since(t0))
			if i%2 == 1 {
				addFloor()
			}
			b.StopTimer()
			git(root, "worktree", "remove", "--force", wt)
			git(root, "branch", "-D", "-q", fmt.Sprintf("floor2/%d", i))
			if err := h.DeleteSessionWith(context.Background(), s.ID, DeleteOptions{Force: true}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(median(floor).Microseconds())/1000, "p50-floor-ms")
		b.ReportMetric(float64(median(sess).Microseconds())/1000, "p50-session-ms")
	})
	b.Run("session", func(b *testing.B) {
		h := benchHarness(b, root)
		for b.Loop() {
			s, err := h.NewSession(SessionSpec{ProjectRoot: root, Mode: "direct", Isolation: session.IsolationWorktree})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := h.DeleteSessionWith(context.Background(), s.ID, DeleteOptions{Force: true}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchHarness is a Harness on root with a scripted engine and no
// checkpoints, shut down at the benchmark's end.
func benchHarness(b *testing.B, root string) *Harness {
	b.Helper()
	h, err := New(Config{Roots: []string{root}, StateDir: b.TempDir(), Engines: []engine.Engine{&scriptEngine{}},
		Checkpoints: CheckpointConfig{Off: true}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Shutdown(context.Background()) })
	return h
}
