package engines

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/acp/acptest"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/codex"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/native"
)

// exitEngine is one engine of the exit-code table: how to build it
// working and broken (its agent cannot start), and the messages that
// make a turn complete, fail and run long enough to be interrupted.
type exitEngine struct {
	name                 string
	working, broken      func(t *testing.T, d *Demo) engine.Engine
	complete, fail, slow string
}

// Issue 20: process:exit means one thing on every engine (engine.TurnExit,
// the README's event table): code 0 exactly when the turn completed and
// Err nil; a failed turn (the fake model or agent errs) a session:error
// and a non-zero code; an interrupted one a session:error of kind
// interrupted and a non-zero code (-1 exactly when a signal is named);
// an agent that cannot start an error from StartTurn that says so
// (engine.ErrUnavailable), or a stream ending session:error of kind
// start and a non-zero code. And one context rule (engine.Engine): a
// ctx cancelled right after StartTurn returned leaves the turn to
// complete; one done before it refuses the start and leaves nothing. Claude Code, the native loop and Codex run
// against the demo model (their real agents on the fake APIs); the ACP
// row is the fake ACP agent (acptest).
func TestExitCodeTable(t *testing.T) {
	d, err := StartDemo(DemoOptions{Project: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	rows := []exitEngine{
		{
			name: ClaudeCode, complete: "hello demo", fail: claudetest.DemoCommandError, slow: "a long answer please",
			working: func(t *testing.T, d *Demo) engine.Engine {
				return claudecode.NewEngine(claudecode.Config{Binary: claudetest.FindCLI(t), Env: base,
					InterruptGrace: time.Second, KillGrace: 2 * time.Second})
			},
			broken: func(t *testing.T, d *Demo) engine.Engine {
				return claudecode.NewEngine(claudecode.Config{Binary: "/nonexistent/claude", Env: base})
			},
		},
		{
			name: Anthropic, complete: "hello demo", fail: claudetest.DemoCommandError, slow: "a long answer please",
			working: func(t *testing.T, d *Demo) engine.Engine {
				return native.NewEngine(native.EngineConfig{APIKey: "demo", BaseURL: d.MessagesURL, MaxRetries: -1})
			},
			broken: func(t *testing.T, d *Demo) engine.Engine {
				return native.NewEngine(native.EngineConfig{}) // no key, no URL
			},
		},
		{
			name: Codex, complete: "hello demo", fail: claudetest.DemoCommandError, slow: "a long answer please",
			working: func(t *testing.T, d *Demo) engine.Engine {
				return codex.NewEngine(codex.Config{Binary: pinnedAgent(t, "codex"), Env: base})
			},
			broken: func(t *testing.T, d *Demo) engine.Engine {
				return codex.NewEngine(codex.Config{Binary: "/nonexistent/codex", Env: base})
			},
		},
		{
			name: "acp (acptest)", complete: "hello", fail: "crash", slow: "slow",
			working: func(t *testing.T, d *Demo) engine.Engine { return fakeACP(t, os.Args[0]) },
			broken:  func(t *testing.T, d *Demo) engine.Engine { return fakeACP(t, "/nonexistent/agent") },
		},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			eng := row.working(t, d)
			t.Cleanup(func() { shutdown(t, eng) })
			req := func(msg string) engine.Request {
				return engine.Request{SessionKey: "exit-" + strings.Fields(msg)[0], Message: msg, Cwd: d.Project,
					PermissionMode: "dontAsk", StateDir: t.TempDir(), Env: d.Env}
			}
			t.Run("complete", func(t *testing.T) {
				evs, err := runTurn(t, eng, req(row.complete), false)
				exit := lastExit(t, evs)
				if err != nil || exit.Code != 0 || find(evs, event.TypeSessionComplete) == nil || find(evs, event.TypeSessionError) != nil {
					t.Errorf("completed turn: code %d, Err %v, events %s", exit.Code, err, types(evs))
				}
			})
			t.Run("failed", func(t *testing.T) {
				evs, err := runTurn(t, eng, req(row.fail), false)
				exit := lastExit(t, evs)
				if err == nil || exit.Code == 0 || find(evs, event.TypeSessionError) == nil || find(evs, event.TypeSessionComplete) != nil {
					t.Errorf("failed turn: code %d, Err %v, events %s", exit.Code, err, types(evs))
				}
				checkSignal(t, exit)
			})
			t.Run("interrupted", func(t *testing.T) {
				evs, err := runTurn(t, eng, req(row.slow), true)
				exit := lastExit(t, evs)
				se := find(evs, event.TypeSessionError)
				if err == nil || exit.Code == 0 || se == nil || se.Error.Kind != event.ErrorInterrupted {
					t.Errorf("interrupted turn: code %d, Err %v, events %s, error %+v", exit.Code, err, types(evs), se)
				}
				checkSignal(t, exit)
			})
			// engine.Engine's context rule: ctx bounds the start only.
			t.Run("ctx cancelled after the start", func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				r := req(row.complete)
				r.SessionKey = "exit-ctx"
				tr, err := eng.StartTurn(ctx, r)
				if err != nil {
					cancel()
					t.Fatalf("StartTurn: %v", err)
				}
				cancel() // right after StartTurn returned: the turn goes on
				evs := drain(t, tr)
				exit := lastExit(t, evs)
				if tr.Err() != nil || exit.Code != 0 || find(evs, event.TypeSessionComplete) == nil || find(evs, event.TypeSessionError) != nil {
					t.Errorf("a turn whose start ctx was cancelled: code %d, Err %v, events %s; want it completed", exit.Code, tr.Err(), types(evs))
				}
			})
			t.Run("ctx done before the start", func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				r := req(row.complete)
				r.SessionKey = "exit-ctx-done"
				tr, err := eng.StartTurn(ctx, r)
				if err == nil {
					drain(t, tr)
					t.Fatal("StartTurn with a done ctx started a turn")
				}
				if !errors.Is(err, context.Canceled) {
					t.Errorf("StartTurn with a done ctx: %v, want context.Canceled", err)
				}
				// Nothing of it is left: the key starts a turn.
				tr, err = eng.StartTurn(context.Background(), r)
				if err != nil {
					t.Fatalf("the key after a refused start: %v", err)
				}
				if evs := drain(t, tr); lastExit(t, evs).Code != 0 {
					t.Errorf("the turn after a refused start: %s", types(evs))
				}
			})
			t.Run("start failure", func(t *testing.T) {
				broken := row.broken(t, d)
				defer shutdown(t, broken)
				tr, err := broken.StartTurn(context.Background(), req(row.complete))
				if err != nil {
					if !errors.Is(err, engine.ErrUnavailable) {
						t.Errorf("StartTurn: %v, want an error matching engine.ErrUnavailable", err)
					}
					return
				}
				evs := drain(t, tr)
				exit := lastExit(t, evs)
				se := find(evs, event.TypeSessionError)
				if tr.Err() == nil || exit.Code == 0 || se == nil || se.Error.Kind != event.ErrorStart {
					t.Errorf("start failure: code %d, Err %v, events %s, error %+v", exit.Code, tr.Err(), types(evs), se)
				}
				checkSignal(t, exit)
			})
		})
	}
}

// fakeACP is an ACP engine on the fake agent (the test binary; see
// TestMain) at bin.
func fakeACP(t *testing.T, bin string) engine.Engine {
	e, err := acp.NewEngine(acp.Config{
		Name: "fake", Command: []string{"fakeagent"}, Binary: bin,
		Env:       []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()},
		ExtraEnv:  []string{acptest.AgentEnv, "ACPTEST_STATE=" + t.TempDir()},
		StopGrace: 500 * time.Millisecond, InterruptGrace: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func shutdown(t *testing.T, e engine.Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Errorf("%s: shutdown: %v", e.Name(), err)
	}
}

// runTurn runs one turn to its end; with interrupt, it interrupts the
// turn at its first chat or thinking delta.
func runTurn(t *testing.T, e engine.Engine, req engine.Request, interrupt bool) ([]event.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tr, err := e.StartTurn(ctx, req)
	if err != nil {
		t.Fatalf("StartTurn: %v", err)
	}
	var evs []event.Event
	asked := false
	for tr.Next() {
		ev := tr.Event()
		evs = append(evs, ev)
		if interrupt && !asked && (ev.Type == event.TypeChatDelta || ev.Type == event.TypeThinkingDelta) {
			asked = true
			tr.Interrupt()
		}
	}
	tr.Close()
	if ctx.Err() != nil {
		t.Fatalf("the turn did not end in time: %s", types(evs))
	}
	if interrupt && !asked {
		t.Fatalf("no delta to interrupt at: %s", types(evs))
	}
	return evs, tr.Err()
}

func drain(t *testing.T, tr engine.Turn) []event.Event {
	t.Helper()
	defer tr.Close()
	var evs []event.Event
	for tr.Next() {
		evs = append(evs, tr.Event())
	}
	return evs
}

// lastExit is the stream's process:exit, which must be its last event
// and its only one.
func lastExit(t *testing.T, evs []event.Event) event.ProcessExit {
	t.Helper()
	for i, ev := range evs {
		if (ev.Type == event.TypeProcessExit) != (i == len(evs)-1) {
			t.Fatalf("process:exit at %d of %d: %s", i, len(evs), types(evs))
		}
	}
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	return *evs[len(evs)-1].Exit
}

// checkSignal: -1 exactly when a signal is named (engine.TurnExit).
func checkSignal(t *testing.T, exit event.ProcessExit) {
	t.Helper()
	t.Logf("process:exit %+v", exit)
	if (exit.Signal != "") != (exit.Code == -1) {
		t.Errorf("process:exit %+v: code -1 goes with a signal, and only with one", exit)
	}
}

func find(evs []event.Event, typ event.Type) *event.Event {
	for i := range evs {
		if evs[i].Type == typ {
			return &evs[i]
		}
	}
	return nil
}

func types(evs []event.Event) string {
	var s []string
	for _, ev := range evs {
		if len(s) == 0 || s[len(s)-1] != string(ev.Type) {
			s = append(s, string(ev.Type))
		}
	}
	return strings.Join(s, " ")
}
