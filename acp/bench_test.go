package acp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/acp/acptest"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// benchRig is one engine with a session's agent started (the cold turn
// measured apart) and the fake Messages API it talks to (nil for the fake
// agent).
type benchRig struct {
	eng  *acp.Engine
	fake *claudetest.FakeAPI
	cwd  string
	cold time.Duration
	// selfCancels counts turns the agent cancelled by itself (Copilot,
	// when its ACP event stream lags), hung the turns it never answered.
	selfCancels, hung int
}

func newBenchRig(b *testing.B, name string) *benchRig {
	b.Helper()
	g := &benchRig{cwd: b.TempDir()}
	var cfg acp.Config
	if name == "fake" {
		cfg = acp.Config{Name: "fake", Command: []string{"fakeagent"}, Binary: os.Args[0], ExtraEnv: []string{acptest.AgentEnv},
			Env: []string{"PATH=" + os.Getenv("PATH")}}
	} else {
		var spec agentSpec
		for _, s := range realAgents {
			if s.name == name {
				spec = s
			}
		}
		fake, err := claudetest.NewFakeAPI()
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { fake.Close() })
		fake.SetResponder(func(r *claudetest.Request) claudetest.Reply {
			if len(r.Tools) == 0 {
				return claudetest.TextReply("A title")
			}
			if strings.Contains(r.LastUserText(), "stream") {
				return stream1000()
			}
			return claudetest.TextReply("hello there")
		})
		g.fake = fake
		cfg, _ = acp.BuiltinConfig(name)
		home := b.TempDir()
		cfg.Binary = findAgent(b, cfg.Command[0])
		cfg.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
			"XDG_DATA_HOME=" + filepath.Join(home, ".local/share"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache")}
		cfg.ExtraEnv = spec.env(fake, home)
	}
	eng, err := acp.NewEngine(cfg)
	if err != nil {
		b.Fatal(err)
	}
	g.eng = eng
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	g.cold, _ = g.turn(b, "hello")
	return g
}

// turn runs one turn and returns the time to its first chat:delta and
// the number of deltas.
func (g *benchRig) turn(b *testing.B, msg string) (time.Duration, int) {
	b.Helper()
	start := time.Now()
	// A turn the agent never answers is killed after a minute and
	// counted (Copilot 1.0.102 answered no prompt after one it
	// cancelled by itself, until the engine restarted such an agent).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr, err := g.eng.StartTurn(ctx, engine.Request{SessionKey: "b", Message: msg, Cwd: g.cwd})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	var first time.Duration
	n := 0
	for tr.Next() {
		if tr.Event().Type == event.TypeChatDelta {
			if n == 0 {
				first = time.Since(start)
			}
			n++
		}
	}
	if err := tr.Err(); err != nil || n == 0 {
		if te, ok := err.(*engine.TurnError); ok && te.Kind == event.ErrorKilled {
			g.hung++
			b.Logf("%s never answered; killed", g.eng.Name())
			return first, n
		}
		if selfCancelled(err) {
			g.selfCancels++
			b.Logf("%s cancelled the turn by itself after %d deltas", g.eng.Name(), n)
			return first, n
		}
		b.Fatalf("turn: %v, %d deltas", err, n)
	}
	return first, n
}

// stream1000 is the fake Messages API's answer of 1,000 text deltas
// (distinct words), paced 1 ms apart as a model streams over a network.
// Unpaced, the whole answer reaches the agent in one burst, and Copilot
// 1.0.102's ACP event stream then lags behind its model stream in about
// one turn of five here: it cancels the prompt by itself ("ACP event
// stream lagged and lost N event(s)" in its log), which the engine
// answers by restarting it, and the turn measures that, not 1,000
// deltas.
func stream1000() claudetest.Reply {
	var words strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&words, "w%03d", i)
	}
	return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(words.String())}, ChunkSize: 4, ChunkDelay: time.Millisecond}
}

var benchAgents = []string{"fake", acp.OpenCode, acp.ClaudeACP, acp.Copilot}

// BenchmarkFirstDelta: StartTurn to the first chat:delta on a session
// whose agent runs (the engine keeps it); the first turn of the session
// (spawn, initialize, session/new, prompt) is reported as cold-ms.
func BenchmarkFirstDelta(b *testing.B) {
	for _, name := range benchAgents {
		b.Run(name, func(b *testing.B) {
			g := newBenchRig(b, name)
			var total time.Duration
			for b.Loop() {
				d, _ := g.turn(b, "hello")
				total += d
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/first-delta")
			b.ReportMetric(float64(g.cold.Milliseconds()), "cold-ms")
			b.ReportMetric(float64(g.hung), "hung")
		})
	}
}

// BenchmarkCPUPer1000Deltas: a turn whose answer streams 1,000 deltas
// (the fake agent's "stream 1000"; the fake Messages API's 1,000 text
// deltas for the real agents, which may merge them: deltas/turn says how
// many reached the stream). harness-ms is this process's CPU (the fake
// API included: an upper bound), agent-ms the agent's process group's.
func BenchmarkCPUPer1000Deltas(b *testing.B) {
	for _, name := range benchAgents {
		b.Run(name, func(b *testing.B) {
			g := newBenchRig(b, name)
			var self, agent time.Duration
			deltas := 0
			for b.Loop() {
				pid := g.eng.Pid("b") // a new one after a restart
				s0, a0 := selfCPU(), groupCPU(pid)
				_, n := g.turn(b, "stream 1000")
				self += selfCPU() - s0
				if a1 := groupCPU(pid); a1 >= a0 { // (an agent stopped in the turn took its count along)
					agent += a1 - a0
				}
				deltas += n
			}
			b.ReportMetric(float64(self.Microseconds())/1000/float64(b.N), "harness-ms/1000")
			b.ReportMetric(float64(agent.Microseconds())/1000/float64(b.N), "agent-ms/1000")
			b.ReportMetric(float64(deltas)/float64(b.N), "deltas/turn")
			b.ReportMetric(float64(g.selfCancels), "self-cancelled")
			b.ReportMetric(float64(g.hung), "hung")
		})
	}
}

// selfCancelled reports whether err is a turn the agent cancelled by
// itself.
func selfCancelled(err error) bool {
	te, ok := err.(*engine.TurnError)
	return ok && te.Kind == event.ErrorExecution && strings.Contains(te.Message, "cancelled the turn by itself")
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// groupCPU sums utime+stime of the live processes in pgid's group (clock
// ticks of 10 ms).
func groupCPU(pgid int) time.Duration {
	ents, _ := os.ReadDir("/proc")
	var ticks int64
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// BenchmarkFakeAPIPer1000Deltas is the fake Messages API's own share of
// BenchmarkCPUPer1000Deltas's harness-ms for the real agents (it runs in
// this process): one streamed answer of 1,000 deltas read by a plain
// HTTP client (whose reading is counted too: an upper bound of the
// fake's share), paced as the real agents get it.
func BenchmarkFakeAPIPer1000Deltas(b *testing.B) {
	fake, err := claudetest.NewFakeAPI()
	if err != nil {
		b.Fatal(err)
	}
	defer fake.Close()
	body := `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"x"}]}`
	var self time.Duration
	for b.Loop() {
		fake.Script(stream1000())
		s0 := selfCPU()
		resp, err := http.Post(fake.URL+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n == 0 {
			b.Fatal("empty answer")
		}
		self += selfCPU() - s0
	}
	b.ReportMetric(float64(self.Microseconds())/1000/float64(b.N), "fakeapi-ms/1000")
}
