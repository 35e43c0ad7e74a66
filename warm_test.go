package harness

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/logging"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func warmEnv(t *testing.T, n int, idle time.Duration) (*testEnv, *lockedBuf) {
	buf := &lockedBuf{}
	log := zerolog.New(buf)
	return newTestEnv(t, func(c *Config) { c.WarmTurns, c.WarmIdle, c.Logger = n, idle, &log }), buf
}

// waitWarm waits until session id has a warm agent and returns its pid.
func (e *testEnv) waitWarm(id string) int {
	e.t.Helper()
	var pid int
	waitFor(e.t, "a warm agent for "+id, func() bool {
		pid = e.h.WarmPids()[id]
		return pid > 0
	})
	return pid
}

func waitNoProcess(t *testing.T, pid int) {
	t.Helper()
	waitFor(t, "the process group to go", func() bool { return !processAlive(pid) })
}

func shapes(evs []stored) []string {
	var out []string
	for _, e := range evs {
		s := string(e.Type) + ":" + e.Text
		if e.ToolStart != nil {
			s += e.ToolStart.Name
		}
		out = append(out, s)
	}
	return out
}

func TestWarmTurns(t *testing.T) {
	reply := func(e *testEnv) {
		e.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Thinking("let me think"), claudetest.Text("the same answer")}})
	}
	cold := newTestEnv(t, nil)
	cs, _ := cold.h.NewSession(SessionSpec{ProjectRoot: cold.root, Mode: "direct"})
	reply(cold)
	coldEvs, _ := cold.turn(cs.ID, "hello")

	e, logs := warmEnv(t, 2, time.Minute)
	writeFile(t, filepath.Join(e.root, "agents", "AGENT_W.md"), "---\ndescription: w\n---\nCodeword: APRICOT.\n")
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Persona: "W", Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	pid := e.waitWarm(s.ID) // created → started ahead
	reply(e)
	evs, tr := e.turn(s.ID, "hello")
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"pid":`+itoa(pid)+`,"message":"warm turn used"`) {
		t.Fatalf("the turn did not run on the warm agent %d:\n%s", pid, logs.String())
	}
	if got, want := shapes(evs), shapes(coldEvs); !slices.Equal(got, want) {
		t.Fatalf("warm events differ from a cold turn's:\n warm %q\n cold %q", got, want)
	}
	// the warm agent's process:spawn and process:exit are in harness.log,
	// as a cold turn's are (they went to the server's log only)
	hl, err := os.ReadFile(logging.Path(e.root))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{logging.EventProcessSpawn, logging.EventProcessExit} {
		want := `"sessionId":"` + s.ID + `","level":"info","event":"` + ev + `"`
		found := false
		for line := range strings.Lines(string(hl)) {
			found = found || (strings.Contains(line, want) && strings.Contains(line, `"pid":`+itoa(pid)))
		}
		if !found {
			t.Errorf("harness.log has no %s of the warm agent %d:\n%s", ev, pid, hl)
		}
	}

	t.Run("a persona edit goes cold", func(t *testing.T) {
		// (A new session: on --resume CLI 2.1.329 keeps the system prompt
		// of the conversation's first turn whatever file it is given, so
		// only a first turn shows the edit reaching the model.)
		writeFile(t, filepath.Join(e.root, "agents", "AGENT_V.md"), "---\ndescription: v\n---\nCodeword: APRICOT.\n")
		s2, _ := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Persona: "V", Mode: "direct"})
		pid := e.waitWarm(s2.ID)
		writeFile(t, filepath.Join(e.root, "agents", "AGENT_V.md"), "---\ndescription: v\n---\nCodeword: BLUEBERRY.\n")
		e.api.Script(claudetest.TextReply("second"))
		e.turn(s2.ID, "again")
		reqs := e.api.Requests()
		if sys := reqs[len(reqs)-1].SystemText(); !strings.Contains(sys, "BLUEBERRY") {
			t.Fatal("the edited persona did not reach the model")
		}
		if !strings.Contains(logs.String(), "system prompt changed") {
			t.Fatal("the stale warm agent was not discarded for the change")
		}
		waitNoProcess(t, pid)
	})

	t.Run("killed while waiting", func(t *testing.T) {
		pid := e.waitWarm(s.ID)
		syscall.Kill(-pid, syscall.SIGKILL)
		waitNoProcess(t, pid)
		e.api.Script(claudetest.TextReply("still here"))
		evs, tr := e.turn(s.ID, "are you there?")
		if tr.Err() != nil || text(evs) != "still here" {
			t.Fatalf("turn after the warm agent died: %v %q", tr.Err(), text(evs))
		}
	})

	t.Run("delete and shutdown leave no process", func(t *testing.T) {
		pid := e.waitWarm(s.ID)
		if err := e.h.DeleteSession(context.Background(), s.ID); err != nil {
			t.Fatal(err)
		}
		waitNoProcess(t, pid)
		s2, _ := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
		pid2 := e.waitWarm(s2.ID)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.h.Shutdown(ctx)
		waitNoProcess(t, pid2)
	})
}

func TestWarmBoundsAndIdle(t *testing.T) {
	e, logs := warmEnv(t, 2, time.Minute)
	var ids []string
	var pids []int
	for range 3 {
		s, _ := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
		ids = append(ids, s.ID)
		if len(ids) <= 2 {
			pids = append(pids, e.waitWarm(s.ID))
		}
	}
	// Every slot is taken: the third session's creation started none.
	if _, ok := e.h.WarmPids()[ids[2]]; ok || len(e.h.WarmPids()) != 2 {
		t.Fatalf("warm agents %v: a create beyond --warm started one", e.h.WarmPids())
	}
	// Opened in a client, it takes the least recently used one's slot.
	e.h.Prewarm(ids[2])
	pids = append(pids, e.waitWarm(ids[2]))
	if n := len(e.h.WarmPids()); n != 2 {
		t.Fatalf("%d warm agents, want at most 2", n)
	}
	if _, ok := e.h.WarmPids()[ids[0]]; ok {
		t.Fatal("the least recently used warm agent was not the one out")
	}
	waitNoProcess(t, pids[0])
	if !strings.Contains(logs.String(), "least recently used") {
		t.Fatal("eviction not logged")
	}
	// Interrupting a session that runs nothing stops its warm agent.
	if err := e.h.Interrupt(ids[1]); err == nil {
		t.Fatal("Interrupt of nothing succeeded")
	}
	waitNoProcess(t, pids[1])

	idle, _ := warmEnv(t, 1, 300*time.Millisecond)
	s, _ := idle.h.NewSession(SessionSpec{ProjectRoot: idle.root, Mode: "direct"})
	pid := idle.waitWarm(s.ID)
	waitFor(t, "idle expiry", func() bool { return len(idle.h.WarmPids()) == 0 })
	waitNoProcess(t, pid)
}

// With approvals on, the warm agent is started with the prompt tool and
// still asks.
func TestWarmTurnAsks(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.WarmTurns, c.Approvals, c.PermissionMode, c.ApprovalTimeout = 1, true, "default", time.Minute
	})
	evs := runApprovalWarm(t, e)
	if len(ofType(evs, event.TypeApprovalResolved)) != 1 {
		t.Fatal("the warm turn did not ask")
	}
}

func runApprovalWarm(t *testing.T, e *testEnv) []stored {
	s, _ := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	e.waitWarm(s.ID)
	e.api.SetResponder(touchResponder(1))
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "make a marker"})
	if err != nil {
		t.Fatal(err)
	}
	req := e.pending(s.ID)
	if err := e.h.Approve(s.ID, req.RequestID, ApprovalAnswer{Decision: "deny"}); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	return e.follow(e.h, s.ID, tr.StartSeq)
}

func itoa(n int) string { return strconv.Itoa(n) }

// childPids lists the live processes whose parent is this test process
// (the CLIs the harness spawned: each runs in its own process group, but
// its parent is still us). A zombie (dead, not yet reaped) is not alive,
// and the driver's version probe is not an agent.
func childPids(t *testing.T) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	self, _ := os.Readlink("/proc/self/exe")
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(me) && f[0] != "Z" && f[0] != "X" {
			// A child between fork and exec still shows this test's
			// binary and arguments, so what it will be (an agent, or the
			// driver's one-off `claude --version` probe) cannot be told
			// yet: only exec'ed children count. (Counting them made a
			// probe forked during the storm look like a third agent
			// under load.) The probe itself is no agent either.
			if exe, _ := os.Readlink(filepath.Join("/proc", d.Name(), "exe")); exe == self {
				continue
			}
			if cmd, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline")); !bytes.Contains(cmd, []byte("\x00--version")) {
				out = append(out, pid)
			}
		}
	}
	return out
}

// Issue 24.3: the pool bounds processes before they start. 100 concurrent
// creates with --warm 2 spawn at most 2 CLIs (before, each create spawned
// one and the bound applied only once it had started: up to 100 alive),
// and a storm of client opens (Prewarm, which may evict) stays within the
// bound too.
func TestWarmBoundsProcessesBeforeStart(t *testing.T) {
	if n := len(childPids(t)); n != 0 {
		t.Fatalf("%d child processes before the test", n)
	}
	const warm = 2
	e, logs := warmEnv(t, warm, time.Minute)
	stop := make(chan struct{})
	sampled := make(chan [2]int)
	go func() {
		maxAlive, seen := 0, map[int]bool{}
		for {
			pids := childPids(t)
			maxAlive = max(maxAlive, len(pids))
			for _, p := range pids {
				seen[p] = true
			}
			select {
			case <-stop:
				sampled <- [2]int{maxAlive, len(seen)}
				return
			default:
			}
		}
	}()
	storm := func(f func(i int)) {
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Add(1)
			go func() { defer wg.Done(); f(i) }()
		}
		wg.Wait()
	}
	ids := make([]string, 100)
	storm(func(i int) {
		s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
		if err != nil {
			t.Error(err)
			return
		}
		ids[i] = s.ID
	})
	waitFor(t, "the warm agents", func() bool { return len(e.h.WarmPids()) == warm })
	// The creates started exactly --warm agents and discarded none.
	if n := strings.Count(logs.String(), `"warm turn started"`); n != warm || strings.Contains(logs.String(), "discarded") {
		t.Fatalf("%d warm starts for 100 creates (or some discarded), want exactly %d", n, warm)
	}
	storm(func(i int) { e.h.Prewarm(ids[i]) })
	waitFor(t, "the warm agents after the opens", func() bool {
		return len(e.h.WarmPids()) == warm && len(childPids(t)) == warm
	})
	close(stop)
	got := <-sampled
	if got[0] > warm {
		t.Fatalf("%d CLI processes alive at once, want at most --warm %d", got[0], warm)
	}
	t.Logf("max alive %d, distinct CLI processes %d", got[0], got[1])
}
