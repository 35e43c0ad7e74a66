// Command warmturns measures what warm turns buy: message → first
// chat:delta at an SSE client, through the gateway (the same handler
// `harness serve` runs) on loopback, the real pinned Claude CLI against
// the loopback fake Messages API, cold (warm turns off) and warm (on), N
// turns each, in one run; then the TypeScript Agent SDK's query() on the
// same CLI and fake API (bench/ts-sdk/firsttoken.mjs; the pinned SDK is
// installed with npm ci when bench/ts-sdk/node_modules is missing). It
// also reports the RSS of warm idle CLIs and of the server holding them.
// Run it from the module root:
//
//	go run ./bench/warmturns            # 30 turns each
//	go run ./bench/warmturns -turns 50 -sdk off
//
// Each turn is POST /api/harness/turn {sessionId, message}, read as SSE
// until process:exit; latency is from just before the POST to the first
// chat:delta line, broken down into: POST → the warm CLI given its
// message (the harness's "warm turn used" log line), → session:init at
// the client (the CLI's system/init), → the fake API's receipt of the
// model request, → the first chat:delta at the client. Both modes pause
// -think between turns (a user reading the answer and typing the next
// message); in warm mode the next turn is also held until the session's
// next agent is waiting. The load average is printed per phase.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/gateway"
	"github.com/rs/zerolog"
)

func main() {
	turns := flag.Int("turns", 30, "turns per mode")
	sessions := flag.Int("rss-sessions", 4, "warm sessions for the RSS figure")
	flag.DurationVar(&think, "think", 1500*time.Millisecond, "pause between turns in both modes (the user reading and typing)")
	flag.StringVar(&sdk, "sdk", "auto", "the TypeScript Agent SDK's figure: auto (if node is there; npm ci in bench/ts-sdk when its node_modules is missing), on (fail without it) or off")
	flag.Parse()
	if err := run(*turns, *sessions); err != nil {
		fmt.Fprintln(os.Stderr, "warmturns:", err)
		os.Exit(1)
	}
}

var (
	think time.Duration
	sdk   string

	apiMu sync.Mutex
	apiAt time.Time // when the fake API got the turn's first streaming request
)

// timing is one turn seen from the SSE client: from just before the POST
// to session:init (the CLI's system/init, through the harness), to the
// fake API's receipt of the model request, and to the first chat:delta.
type timing struct{ used, init, api, first time.Duration }

// usedMark is the server log seen by the bench: it notes when the harness
// logs "warm turn used" (just before it writes the message to the warm
// CLI's stdin), and which warm agents wait, by session, from the
// harness's "warm turn started" and "warm turn used"/"discarded" lines
// (the bench sees what a person running the server sees: its log).
type usedMark struct{}

var (
	usedAt    time.Time // guarded by apiMu
	serverLog = zerolog.New(usedMark{})

	warmMu     sync.Mutex
	warmAgents = map[string]int{} // session id → pid of its waiting warm agent
)

func (usedMark) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"warm turn used"`)) {
		apiMu.Lock()
		usedAt = time.Now()
		apiMu.Unlock()
	}
	var line struct {
		Message   string `json:"message"`
		SessionID string `json:"sessionId"`
		Pid       int    `json:"pid"`
	}
	if bytes.Contains(p, []byte(`"warm turn `)) && json.Unmarshal(p, &line) == nil && line.SessionID != "" {
		warmMu.Lock()
		if line.Message == "warm turn started" {
			warmAgents[line.SessionID] = line.Pid
		} else if warmAgents[line.SessionID] == line.Pid {
			delete(warmAgents, line.SessionID) // used or discarded
		}
		warmMu.Unlock()
	}
	return len(p), nil
}

// warmPids returns the process ids of the waiting warm agents by session,
// as the server's log tells them.
func warmPids() map[string]int {
	warmMu.Lock()
	defer warmMu.Unlock()
	return maps.Clone(warmAgents)
}

func run(turns, rssSessions int) error {
	bin, err := claudecode.FindBinary("")
	if err != nil {
		return err
	}
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		return err
	}
	defer api.Close()
	api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		apiMu.Lock()
		if apiAt.IsZero() && r.Stream {
			apiAt = time.Now()
		}
		apiMu.Unlock()
		return claudetest.TextReply("warm or cold, here it is")
	})
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("machine: %d cores, load %s", runtimeCPUs(), load)

	la := func() string {
		b, _ := os.ReadFile("/proc/loadavg")
		return strings.Join(strings.Fields(string(b))[:3], " ")
	}
	fmt.Printf("cold phase (load %s)\n", la())
	cold, err := measure(bin, api, 0, turns)
	if err != nil {
		return err
	}
	fmt.Printf("warm phase (load %s)\n", la())
	warm, err := measure(bin, api, 2, turns)
	if err != nil {
		return err
	}
	var peer []time.Duration
	if sdk != "off" {
		fmt.Printf("TS SDK phase (load %s)\n", la())
		if peer, err = sdkFirstTokens(bin, api, turns); err != nil {
			if sdk == "on" {
				return err
			}
			fmt.Printf("TS SDK: not measured: %v\n", err)
		}
	}
	fmt.Printf("end (load %s)\n", la())
	report := func(name string, d []time.Duration) {
		d = slices.Clone(d)
		slices.Sort(d)
		fmt.Printf("%-26s over %d turns: p50 %v  p99 %v  min %v  max %v\n", name, len(d),
			pct(d, 50).Round(time.Millisecond), pct(d, 99).Round(time.Millisecond), d[0].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
	pick := func(ts []timing, f func(timing) time.Duration) []time.Duration {
		var d []time.Duration
		for _, t := range ts {
			d = append(d, f(t))
		}
		return d
	}
	first := func(t timing) time.Duration { return t.first }
	for _, m := range []struct {
		name string
		ts   []timing
	}{{"cold", cold}, {"warm", warm}} {
		report(m.name+" message → first delta", pick(m.ts, first))
		if m.name == "warm" {
			report("  POST → warm CLI given it", pick(m.ts, func(t timing) time.Duration { return t.used }))
			report("  … → session:init", pick(m.ts, func(t timing) time.Duration { return t.init - t.used }))
		}
		report("  message → session:init", pick(m.ts, func(t timing) time.Duration { return t.init }))
		report("  session:init → API request", pick(m.ts, func(t timing) time.Duration { return t.api - t.init }))
		report("  API request → first delta", pick(m.ts, func(t timing) time.Duration { return t.first - t.api }))
	}
	if len(peer) > 0 {
		report("TS SDK query() → first delta", peer)
	}
	c50, w50 := pct(sorted(pick(cold, first)), 50), pct(sorted(pick(warm, first)), 50)
	fmt.Printf("warm is %.1f× faster than cold at the median\n", float64(c50)/float64(w50))
	if len(peer) > 0 {
		fmt.Printf("warm is %.1f× faster than the TS SDK's query() at the median\n", float64(pct(sorted(peer), 50))/float64(w50))
	}
	return rss(bin, api, rssSessions)
}

func sorted(d []time.Duration) []time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d
}

// sdkFirstTokens runs bench/ts-sdk/firsttoken.mjs: the TS Agent SDK's
// query() on the same CLI and fake API, turns queries one after another.
// It installs the pinned SDK (npm ci) when bench/ts-sdk has none.
func sdkFirstTokens(bin string, api *claudetest.FakeAPI, turns int) ([]time.Duration, error) {
	dir := filepath.Join("bench", "ts-sdk")
	if _, err := os.Stat(filepath.Join(dir, "firsttoken.mjs")); err != nil {
		return nil, fmt.Errorf("run from the module root: %w", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-agent-sdk")); err != nil {
		fmt.Println("installing the pinned TS SDK (npm ci in bench/ts-sdk)")
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("npm ci: %v: %s", err, out)
		}
	}
	root, _ := filepath.EvalSymlinks(must(os.MkdirTemp("", "warmturns-sdk-")))
	defer os.RemoveAll(root)
	home := must(os.MkdirTemp("", "warmturns-sdk-home-"))
	defer os.RemoveAll(home)
	cmd := exec.Command("node", filepath.Join(dir, "firsttoken.mjs"), "--claude-bin", bin, "--cwd", root,
		"--turns", strconv.Itoa(turns), "--think", strconv.FormatInt(think.Milliseconds(), 10))
	cmd.Env = append(claudetest.BaseEnv(home), api.Env()...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("firsttoken.mjs: %v", err)
	}
	var res struct{ MS []float64 }
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("firsttoken.mjs said %q: %v", out, err)
	}
	var d []time.Duration
	for _, ms := range res.MS {
		d = append(d, time.Duration(ms*float64(time.Millisecond)))
	}
	return d, nil
}

func pct(d []time.Duration, p int) time.Duration {
	i := (len(d)*p + 99) / 100
	if i > 0 {
		i--
	}
	return d[i]
}

// measure runs turns turns of one session through a gateway whose
// Harness keeps warm agents (warm > 0) or not.
func measure(bin string, api *claudetest.FakeAPI, warm, turns int) ([]timing, error) {
	root, _ := filepath.EvalSymlinks(must(os.MkdirTemp("", "warmturns-")))
	defer os.RemoveAll(root)
	home := must(os.MkdirTemp("", "warmturns-home-"))
	defer os.RemoveAll(home)
	h, err := harness.New(harness.Config{Roots: []string{root}, StateDir: filepath.Join(home, "state"),
		Engines:  engines.Builtin(engines.Config{ClaudeBinary: bin, Env: claudetest.BaseEnv(home), ChildEnv: api.Env(), Logger: &serverLog}),
		ChildEnv: api.Env(), WarmTurns: warm, NoProjectLogs: true, Logger: &serverLog})
	if err != nil {
		return nil, err
	}
	defer h.Shutdown(context.Background())
	g, err := gateway.New(gateway.Config{Harness: h})
	if err != nil {
		return nil, err
	}
	defer g.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: g}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String() + gateway.APIPrefix

	s, err := h.NewSession(harness.SessionSpec{ProjectRoot: root, Mode: "direct"})
	if err != nil {
		return nil, err
	}
	var out []timing
	for i := 0; i < turns; i++ {
		time.Sleep(think)
		if warm > 0 {
			deadline := time.Now().Add(30 * time.Second)
			for warmPids()[s.ID] == 0 {
				if time.Now().After(deadline) {
					return nil, fmt.Errorf("turn %d: no warm agent after 30 s", i)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		d, err := turn(base, s.ID, "message "+strconv.Itoa(i))
		if err != nil {
			return nil, fmt.Errorf("turn %d: %w", i, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// turn posts one message and returns when its session:init and first
// chat:delta reached the client and when the fake API got the request,
// reading the stream to its end.
func turn(base, id, msg string) (timing, error) {
	var tm timing
	body, _ := json.Marshal(map[string]string{"sessionId": id, "message": msg})
	apiMu.Lock()
	apiAt, usedAt = time.Time{}, time.Time{}
	apiMu.Unlock()
	t0 := time.Now()
	resp, err := http.Post(base+"/turn", "application/json", bytes.NewReader(body))
	if err != nil {
		return tm, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return tm, fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		if tm.init == 0 && strings.Contains(line, `"type":"session:init"`) {
			tm.init = time.Since(t0)
		}
		if tm.first == 0 && strings.Contains(line, `"type":"chat:delta"`) {
			tm.first = time.Since(t0)
		}
		if strings.Contains(line, `"type":"process:exit"`) {
			break
		}
	}
	if tm.first == 0 {
		return tm, fmt.Errorf("no chat:delta")
	}
	apiMu.Lock()
	if !apiAt.IsZero() {
		tm.api = apiAt.Sub(t0)
	}
	if !usedAt.IsZero() {
		tm.used = usedAt.Sub(t0)
	}
	apiMu.Unlock()
	return tm, nil
}

// rss reports the resident memory of warm idle CLIs and of this process.
func rss(bin string, api *claudetest.FakeAPI, n int) error {
	root, _ := filepath.EvalSymlinks(must(os.MkdirTemp("", "warmturns-")))
	defer os.RemoveAll(root)
	home := must(os.MkdirTemp("", "warmturns-home-"))
	defer os.RemoveAll(home)
	before := rssKB(os.Getpid())
	h, err := harness.New(harness.Config{Roots: []string{root}, StateDir: filepath.Join(home, "state"),
		Engines:  engines.Builtin(engines.Config{ClaudeBinary: bin, Env: claudetest.BaseEnv(home), ChildEnv: api.Env()}),
		ChildEnv: api.Env(), WarmTurns: n, NoProjectLogs: true, Logger: &serverLog})
	if err != nil {
		return err
	}
	defer h.Shutdown(context.Background())
	for range n {
		if _, err := h.NewSession(harness.SessionSpec{ProjectRoot: root, Mode: "direct"}); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(warmPids()) < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// Measured once the CLIs have settled: their start-up work (and the
	// prestart requests) done, the total stops moving.
	total, prev := 0, -1
	for settle := time.Now().Add(60 * time.Second); time.Now().Before(settle); {
		time.Sleep(time.Second)
		total = 0
		for _, pid := range warmPids() {
			total += treeRSSKB(pid)
		}
		if prev > 0 && total-prev < prev/100 && prev-total < prev/100 {
			break
		}
		prev = total
	}
	fmt.Printf("RSS: %d warm idle CLIs %.0f MB in all, %.0f MB each; this server process %.1f MB (%.1f MB before)\n",
		len(warmPids()), float64(total)/1024, float64(total)/1024/float64(max(1, len(warmPids()))),
		float64(rssKB(os.Getpid()))/1024, float64(before)/1024)
	return nil
}

func rssKB(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	return 0
}

// treeRSSKB sums the RSS of pid's process group.
func treeRSSKB(pgid int) int {
	ents, _ := os.ReadDir("/proc")
	total := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) {
			total += rssKB(pid)
		}
	}
	return total
}

func runtimeCPUs() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

func must[T any](v T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, "warmturns:", err)
		os.Exit(1)
	}
	return v
}
