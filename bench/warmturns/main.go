// Command warmturns measures what warm turns buy: message → first
// chat:delta at an SSE client, through the gateway (the same handler
// `harness serve` runs) on loopback, the real pinned Claude CLI against
// the loopback fake Messages API, cold (warm turns off) and warm (on), N
// turns each, in one run. It also reports the RSS of a warm idle CLI and
// of N warm sessions.
//
//	go run ./bench/warmturns            # 30 turns each
//	go run ./bench/warmturns -turns 50
//
// Each turn is POST /api/harness/turn {sessionId, message}, read as SSE
// until process:exit; latency is from just before the POST to the first
// chat:delta line. Both modes pause -think between turns (a user reading
// the answer and typing the next message); in warm mode the next turn is
// also held until the session's next agent is waiting.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/gateway"
)

func main() {
	turns := flag.Int("turns", 30, "turns per mode")
	sessions := flag.Int("rss-sessions", 4, "warm sessions for the RSS figure")
	flag.DurationVar(&think, "think", 1500*time.Millisecond, "pause between turns in both modes (the user reading and typing)")
	flag.Parse()
	if err := run(*turns, *sessions); err != nil {
		fmt.Fprintln(os.Stderr, "warmturns:", err)
		os.Exit(1)
	}
}

var think time.Duration

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
	api.SetResponder(func(*claudetest.Request) claudetest.Reply { return claudetest.TextReply("warm or cold, here it is") })
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("machine: %d cores, load %s", runtimeCPUs(), load)

	cold, err := measure(bin, api, 0, turns)
	if err != nil {
		return err
	}
	warm, err := measure(bin, api, 2, turns)
	if err != nil {
		return err
	}
	report := func(name string, d []time.Duration) {
		slices.Sort(d)
		fmt.Printf("%-5s message → first chat:delta over %d turns: p50 %v  p99 %v  min %v  max %v\n", name, len(d),
			pct(d, 50).Round(time.Millisecond), pct(d, 99).Round(time.Millisecond), d[0].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
	report("cold", cold)
	report("warm", warm)
	fmt.Printf("warm is %.1f× faster at the median\n", float64(pct(cold, 50))/float64(pct(warm, 50)))
	return rss(bin, api, rssSessions)
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
func measure(bin string, api *claudetest.FakeAPI, warm, turns int) ([]time.Duration, error) {
	root, _ := filepath.EvalSymlinks(must(os.MkdirTemp("", "warmturns-")))
	defer os.RemoveAll(root)
	home := must(os.MkdirTemp("", "warmturns-home-"))
	defer os.RemoveAll(home)
	h, err := harness.New(harness.Config{Roots: []string{root}, ClaudeBinary: bin, StateDir: filepath.Join(home, "state"),
		Env: claudetest.BaseEnv(home), ChildEnv: api.Env(), WarmTurns: warm, NoProjectLogs: true})
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

	s, err := h.CreateSession(root, "", "direct")
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for i := 0; i < turns; i++ {
		time.Sleep(think)
		if warm > 0 {
			deadline := time.Now().Add(30 * time.Second)
			for h.WarmPids()[s.ID] == 0 {
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

// turn posts one message and returns the delay to its first chat:delta,
// reading the stream to its end.
func turn(base, id, msg string) (time.Duration, error) {
	body, _ := json.Marshal(map[string]string{"sessionId": id, "message": msg})
	t0 := time.Now()
	resp, err := http.Post(base+"/turn", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	var first time.Duration
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		if first == 0 && strings.Contains(line, `"type":"chat:delta"`) {
			first = time.Since(t0)
		}
		if strings.Contains(line, `"type":"process:exit"`) {
			break
		}
	}
	if first == 0 {
		return 0, fmt.Errorf("no chat:delta")
	}
	return first, nil
}

// rss reports the resident memory of warm idle CLIs and of this process.
func rss(bin string, api *claudetest.FakeAPI, n int) error {
	root, _ := filepath.EvalSymlinks(must(os.MkdirTemp("", "warmturns-")))
	defer os.RemoveAll(root)
	home := must(os.MkdirTemp("", "warmturns-home-"))
	defer os.RemoveAll(home)
	before := rssKB(os.Getpid())
	h, err := harness.New(harness.Config{Roots: []string{root}, ClaudeBinary: bin, StateDir: filepath.Join(home, "state"),
		Env: claudetest.BaseEnv(home), ChildEnv: api.Env(), WarmTurns: n, NoProjectLogs: true})
	if err != nil {
		return err
	}
	defer h.Shutdown(context.Background())
	for range n {
		if _, err := h.CreateSession(root, "", "direct"); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(h.WarmPids()) < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // let the CLIs finish their start-up work
	var total int
	for _, pid := range h.WarmPids() {
		total += treeRSSKB(pid)
	}
	fmt.Printf("RSS: %d warm idle CLIs %.0f MB in all, %.0f MB each; this server process %.1f MB (%.1f MB before)\n",
		len(h.WarmPids()), float64(total)/1024, float64(total)/1024/float64(max(1, len(h.WarmPids()))),
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
