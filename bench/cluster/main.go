// Command cluster measures a cluster of harness nodes (issue 36): three
// `harness serve --demo --node` processes on loopback, built from
// ./cmd/harness.
//
//	go run ./bench/cluster [-sessions 500] [-bin bin/harness]
//
// It prints:
//
//  1. event latency: a long demo answer posted to node B (its stream is
//     read from the events stream, the owner A publishes into it) and
//     read at the same time on A (the owner's own SSE): for every event
//     both got live, the time B got it minus the time A did (p50, p99);
//  2. RSS of each node with -sessions sessions spread over the three;
//  3. what a node costs at idle: RSS of `serve --demo` alone and of
//     `serve --demo --node` (a cluster of one), each after start.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	sessions := flag.Int("sessions", 500, "sessions spread over the three nodes")
	bin := flag.String("bin", "", "the harness binary (default: build ./cmd/harness)")
	flag.Parse()
	if err := run(*bin, *sessions); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

type proc struct {
	cmd  *exec.Cmd
	url  string
	root string
}

func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs `harness serve --demo` with args and waits for its ready
// line; root is its scratch project (from its stderr).
func start(bin, dir string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--demo", "--addr", "127.0.0.1:0", "--state-dir", dir, "--engine", "anthropic"}, args...)...)
	cmd.Env = os.Environ()
	out, _ := cmd.StdoutPipe()
	errp, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	rootc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errp)
		for sc.Scan() {
			if _, r, ok := strings.Cut(sc.Text(), "scratch project root "); ok {
				rootc <- strings.Fields(r)[0]
			}
		}
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		return nil, fmt.Errorf("no ready line: %v", err)
	}
	go io.Copy(io.Discard, out)
	p := &proc{cmd: cmd, url: strings.TrimSpace(strings.TrimPrefix(line, "harness: listening on "))}
	select {
	case p.root = <-rootc:
	case <-time.After(10 * time.Second):
	}
	return p, nil
}

func post(url string, body any) (*http.Response, error) {
	b, _ := json.Marshal(body)
	return http.Post(url, "application/json", bytes.NewReader(b))
}

func create(p *proc) (string, error) {
	res, err := post(p.url+"/api/harness/session/create", map[string]any{"projectRoot": p.root, "mode": "direct"})
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var v struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	json.NewDecoder(res.Body).Decode(&v)
	if v.Session.ID == "" {
		return "", fmt.Errorf("create: %s", res.Status)
	}
	return v.Session.ID, nil
}

// arrivals reads an SSE answer, noting when each seq arrived, until it
// ends; first is closed at the first event.
func arrivals(body io.Reader, first chan<- struct{}) map[int64]time.Time {
	got := map[int64]time.Time{}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	var once sync.Once
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			seq, _ := strconv.ParseInt(v, 10, 64)
			got[seq] = time.Now()
			if first != nil {
				once.Do(func() { close(first) })
			}
		}
	}
	return got
}

func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[min(len(xs)-1, int(p*float64(len(xs))))]
}

func run(bin string, nSessions int) error {
	tmp, err := os.MkdirTemp("", "bench-cluster")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if bin == "" {
		bin = filepath.Join(tmp, "harness")
		if out, err := exec.Command("go", "build", "-o", bin, "./cmd/harness").CombinedOutput(); err != nil {
			return fmt.Errorf("build: %v\n%s", err, out)
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("%s, load average %s", time.Now().UTC().Format(time.RFC3339), load)

	// 3. idle cost
	for _, args := range [][]string{nil, {"--node", "solo", "--cluster-listen", "127.0.0.1:" + strconv.Itoa(freePort())}} {
		p, err := start(bin, filepath.Join(tmp, fmt.Sprintf("idle%d", len(args))), args...)
		if err != nil {
			return err
		}
		time.Sleep(2 * time.Second)
		what := "serve --demo"
		if args != nil {
			what = "serve --demo --node solo (a cluster of one)"
		}
		fmt.Printf("idle RSS, %s: %.1f MB\n", what, rssMB(p.cmd.Process.Pid))
		p.stop()
	}

	ports := []int{freePort(), freePort(), freePort()}
	names := []string{"a", "b", "c"}
	nodes := make([]*proc, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		args := []string{"--node", names[i], "--cluster-listen", "127.0.0.1:" + strconv.Itoa(ports[i])}
		for j := range 3 {
			if j != i {
				args = append(args, "--cluster-peer", "127.0.0.1:"+strconv.Itoa(ports[j]))
			}
		}
		wg.Go(func() { nodes[i], errs[i] = start(bin, filepath.Join(tmp, names[i]), args...) })
	}
	wg.Wait()
	defer func() {
		for _, p := range nodes {
			if p != nil {
				p.stop()
			}
		}
	}()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	a, b := nodes[0], nodes[1]

	// 1. latency
	id, err := create(a)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(b.url + "/api/harness/session/list?projectRoot=" + a.root)
		if err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if strings.Contains(string(body), id) {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node b never listed the session")
		}
		time.Sleep(100 * time.Millisecond)
	}
	res, err := post(b.url+"/api/harness/turn", map[string]any{"sessionId": id, "message": "a long answer please"})
	if err != nil {
		return err
	}
	first := make(chan struct{})
	var onB, onA map[int64]time.Time
	var rw sync.WaitGroup
	rw.Go(func() { onB = arrivals(res.Body, first); res.Body.Close() })
	<-first
	resA, err := http.Get(a.url + "/api/harness/session/" + id + "/events")
	if err != nil {
		return err
	}
	rw.Go(func() { onA = arrivals(resA.Body, nil); resA.Body.Close() })
	rw.Wait()
	// Only events both got live: from a second after A's reader joined.
	var joined time.Time
	for _, t := range onA {
		if joined.IsZero() || t.Before(joined) {
			joined = t
		}
	}
	var lat []float64
	for seq, ta := range onA {
		if tb, ok := onB[seq]; ok && ta.After(joined.Add(time.Second)) {
			lat = append(lat, float64(tb.Sub(ta).Microseconds())/1000)
		}
	}
	fmt.Printf("event latency, owner's stream → a reader on another node, over the owner's own reader (%d live events): p50 %+.2f ms, p99 %+.2f ms\n",
		len(lat), pct(lat, 0.5), pct(lat, 0.99))

	// 2. RSS with sessions spread
	for i := range nSessions {
		if _, err := create(nodes[i%3]); err != nil {
			return err
		}
	}
	time.Sleep(3 * time.Second)
	for i, p := range nodes {
		fmt.Printf("RSS of node %s with %d sessions over 3 nodes (%d its own): %.1f MB\n", names[i], nSessions, (nSessions+2-i)/3, rssMB(p.cmd.Process.Pid))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", nodes[2].url+"/api/harness/session/list", nil)
	t0 := time.Now()
	res, err = http.DefaultClient.Do(req)
	if err == nil {
		var list []json.RawMessage
		json.NewDecoder(res.Body).Decode(&list)
		res.Body.Close()
		fmt.Printf("GET /session/list on node c (every node's sessions): %d in %.1f ms\n", len(list), float64(time.Since(t0).Microseconds())/1000)
	}
	return nil
}
