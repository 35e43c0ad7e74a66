package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/runner"
)

// Every goroutine a Core, a Keeper or their Harness starts has ended once
// the tests stopped them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// env is one Harness on the fake Messages API, offline, with a scratch
// HOME and project.
type env struct {
	t    *testing.T
	api  *claudetest.FakeAPI
	h    *harness.Harness
	root string
}

// newEnv makes an env; bin, when not "", is the claude binary.
func newEnv(t *testing.T, bin string) *env {
	t.Helper()
	return newEnvGrace(t, bin, time.Second)
}

// newEnvGrace is newEnv with the driver's InterruptGrace (its SIGINT and
// SIGTERM steps each wait that long).
func newEnvGrace(t *testing.T, bin string, interruptGrace time.Duration) *env {
	t.Helper()
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := harnessIn(t, api, root, t.TempDir(), bin, interruptGrace)
	return &env{t: t, api: api, h: h, root: root}
}

// harnessIn is a Harness of root on api with its state in state (a
// second one over the same state is the same server restarted); bin,
// when not "", is the claude binary.
func harnessIn(t *testing.T, api *claudetest.FakeAPI, root, state, bin string, interruptGrace time.Duration) *harness.Harness {
	t.Helper()
	h, err := harness.New(harness.Config{
		Roots: []string{root}, StateDir: state, ChildEnv: api.Env(),
		Engines: engines.Builtin(engines.Config{ClaudeBinary: bin, Env: claudetest.BaseEnv(t.TempDir()), ChildEnv: api.Env(),
			InterruptGrace: interruptGrace, KillGrace: 2 * time.Second}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		h.Shutdown(ctx)
	})
	return h
}

// core makes a Core of engine in the env's project.
func (e *env) core(engine string, mutate func(*runner.Config)) *runner.Core {
	e.t.Helper()
	cfg := runner.Config{Harness: e.h, ProjectRoot: e.root, Engine: engine, StopGrace: 3 * time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := runner.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// rec records a runner's callbacks.
type rec struct {
	mu     sync.Mutex
	msgs   []runner.Message
	exits  []int
	starts []runner.TurnStart
	ends   []runner.TurnEnd
}

func record(c *runner.Core) *rec {
	r := &rec{}
	c.OnMessage(func(m runner.Message) { r.mu.Lock(); r.msgs = append(r.msgs, m); r.mu.Unlock() })
	c.OnExit(func(code int) { r.mu.Lock(); r.exits = append(r.exits, code); r.mu.Unlock() })
	c.OnTurnStart(func(s runner.TurnStart) { r.mu.Lock(); r.starts = append(r.starts, s); r.mu.Unlock() })
	c.OnTurnEnd(func(e runner.TurnEnd) { r.mu.Lock(); r.ends = append(r.ends, e); r.mu.Unlock() })
	return r
}

func recordKeeper(k *runner.Keeper) *rec {
	r := &rec{}
	k.OnMessage(func(m runner.Message) { r.mu.Lock(); r.msgs = append(r.msgs, m); r.mu.Unlock() })
	k.OnExit(func(code int) { r.mu.Lock(); r.exits = append(r.exits, code); r.mu.Unlock() })
	k.OnTurnStart(func(s runner.TurnStart) { r.mu.Lock(); r.starts = append(r.starts, s); r.mu.Unlock() })
	k.OnTurnEnd(func(e runner.TurnEnd) { r.mu.Lock(); r.ends = append(r.ends, e); r.mu.Unlock() })
	return r
}

func (r *rec) snapshot() (msgs []runner.Message, exits []int, ends []runner.TurnEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]runner.Message(nil), r.msgs...), append([]int(nil), r.exits...), append([]runner.TurnEnd(nil), r.ends...)
}

func (r *rec) endCount() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.ends) }

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func stop(t *testing.T, r interface{ Stop(context.Context) error }) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.Stop(ctx); err != nil {
		t.Errorf("Stop = %v", err)
	}
}

// wrapper writes a claude binary that records its pid in pidFile and runs
// real, so a test can kill the agent from outside. With dieFirst, the first
// run exits 3 at once instead (a CLI that dies on start).
func wrapper(t *testing.T, real, pidFile string, dieFirst bool) string {
	t.Helper()
	dir := t.TempDir()
	// The driver runs `claude --version` once in the background: that run
	// is not the agent.
	script := "#!/bin/sh\n[ \"$1\" = --version ] && exec '" + real + "' --version\necho $$ > '" + pidFile + "'\n"
	if dieFirst {
		mark := filepath.Join(dir, "died")
		script += "if [ ! -e '" + mark + "' ]; then : > '" + mark + "'; exit 3; fi\n"
	}
	script += "exec '" + real + "' \"$@\"\n"
	p := filepath.Join(dir, "claude")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
