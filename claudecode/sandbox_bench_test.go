package claudecode_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// BenchmarkSandboxTurnStart is a real CLI turn's start, from StartTurn to
// its session:init, unsandboxed and sandboxed (the re-exec of the test
// binary as the sandbox entry, the ruleset, then the CLI's own start),
// with its TCP limited (the default) or open, against the fake API with a
// scratch HOME.
func BenchmarkSandboxTurnStart(b *testing.B) {
	bin := claudetest.FindCLI(b)
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		b.Fatal(err)
	}
	defer api.Close()
	home, cwd := b.TempDir(), b.TempDir()
	for _, d := range []string{".chirality", "agents", "src", "docs"} {
		if err := os.Mkdir(filepath.Join(cwd, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	mgr := claudecode.NewManager(claudecode.Config{Binary: bin, Env: append(claudetest.BaseEnv(home), api.Env()...),
		InterruptGrace: time.Second, KillGrace: 2 * time.Second})
	for _, v := range []struct {
		name               string
		sandboxed, openNet bool
	}{{"plain", false, false}, {"sandboxed", true, false}, {"sandboxed-open-network", true, true}} {
		sandboxed, name := v.sandboxed, v.name
		b.Run(name, func(b *testing.B) {
			var total time.Duration
			n := 0
			for b.Loop() {
				api.Script(claudetest.TextReply("hi"))
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				start := time.Now()
				tr, err := mgr.StartTurn(ctx, "bench", "hello", claudecode.TurnOpts{Cwd: cwd, Sandbox: sandboxed, OpenNetwork: v.openNet})
				if err != nil {
					b.Fatal(err)
				}
				var initAt time.Duration
				for tr.Next() {
					if tr.Event().Type == event.TypeSessionInit && initAt == 0 {
						initAt = time.Since(start)
					}
				}
				if tr.Err() != nil {
					b.Fatal(tr.Err())
				}
				_ = tr.Close()
				cancel()
				total += initAt
				n++
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms-to-init")
		})
	}
}
