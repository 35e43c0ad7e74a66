// Command demomem measures the memory of N demo sessions whose turns run
// at once (issue 31): it starts `harness serve --demo` (optionally
// --sandbox), makes N sessions, starts a turn in each that asks to
// "touch" a file (the demo's tool use a person must approve, so every
// turn's agent stays alive, waiting), and once all N wait, sums the
// resident memory of the server and of all its descendants from /proc:
// RSS (shared pages counted in each process) and PSS (shared pages split
// between the processes sharing them). Then it denies the approvals,
// waits for the turns' ends and stops the server.
//
//	go run ./bench/demomem -bin bin/harness [-n 10] [-sandbox]
//
// Linux only; stdlib only.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("bin", "bin/harness", "the harness binary")
	n := flag.Int("n", 10, "sessions with a turn running at once")
	sandboxed := flag.Bool("sandbox", false, "run the server with --sandbox")
	claude := flag.String("claude-bin", "node_modules/.bin/claude", "the Claude Code CLI the demo runs")
	flag.Parse()
	if err := run(*bin, *claude, *n, *sandboxed); err != nil {
		fmt.Fprintln(os.Stderr, "demomem:", err)
		os.Exit(1)
	}
}

func run(bin, claude string, n int, sandboxed bool) error {
	state, err := os.MkdirTemp("", "demomem-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	args := []string{"serve", "--demo", "--addr", "127.0.0.1:0", "--warm", "0", "--claude-bin", claude}
	if sandboxed {
		args = append(args, "--sandbox")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	rootc, urlc := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "harness serve --demo: scratch project root "); ok {
				rootc <- strings.TrimSuffix(rest, " (removed on exit)")
			}
		}
	}()
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		u, _ := strings.CutPrefix(strings.TrimSpace(line), "harness: listening on ")
		urlc <- u
		_, _ = io.Copy(io.Discard, r)
	}()
	var url, root string
	for url == "" || root == "" {
		select {
		case url = <-urlc:
			if url == "" {
				return errors.New("the server printed no address")
			}
		case root = <-rootc:
		case <-time.After(60 * time.Second):
			return errors.New("the demo server did not start")
		}
	}
	api := url + "/api/harness"
	time.Sleep(2 * time.Second) // let the server settle before the idle sample
	idle := tree(cmd.Process.Pid)
	fmt.Printf("idle: server RSS %.1f MB, PSS %.1f MB\n", idle.serverRSS, idle.serverPSS)

	type waiting struct {
		id, request string
		body        io.ReadCloser
		events      *bufio.Scanner
	}
	turns := make([]*waiting, n)
	start := time.Now()
	for i := range turns {
		var created struct{ Session struct{ ID string } }
		if err := postJSON(api+"/session/create", map[string]string{"projectRoot": root, "mode": "workbench"}, &created); err != nil {
			return err
		}
		b, _ := json.Marshal(map[string]string{"sessionId": created.Session.ID, "message": "touch a file, please"})
		resp, err := http.Post(api+"/turn?events=approval", "application/json", strings.NewReader(string(b))) // it waits on approval events
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("turn %d: %s", i, resp.Status)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		turns[i] = &waiting{id: created.Session.ID, body: resp.Body, events: sc}
	}
	for i, w := range turns { // every agent is alive, waiting for its approval
		ev, err := until(w.events, "approval:requested")
		if err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		w.request, _ = ev["requestId"].(string)
		if w.request == "" {
			if a, ok := ev["approval"].(map[string]any); ok {
				w.request, _ = a["requestId"].(string)
			}
		}
	}
	waited := time.Since(start)
	var peak sample
	for range 5 {
		if s := tree(cmd.Process.Pid); s.rss > peak.rss {
			peak = s
		}
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Printf("%d turns waiting at once (all started in %s): %d processes; server RSS %.1f MB; server and descendants RSS %.1f MB, PSS %.1f MB (%.1f MB PSS per session beyond the idle server)\n",
		n, waited.Round(time.Millisecond), peak.procs, peak.serverRSS, peak.rss, peak.pss, (peak.pss-idle.pss)/float64(n))
	for i, w := range turns {
		if err := postJSON(api+"/approval", map[string]string{"sessionId": w.id, "requestId": w.request, "decision": "deny"}, nil); err != nil {
			return fmt.Errorf("deny %d: %w", i, err)
		}
	}
	for i, w := range turns {
		if _, err := until(w.events, "process:exit"); err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		w.body.Close()
	}
	return nil
}

// until reads SSE events until one of type typ, and returns it.
func until(sc *bufio.Scanner, typ string) (map[string]any, error) {
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if json.Unmarshal([]byte(data), &ev) == nil && ev["type"] == typ {
			return ev, nil
		}
	}
	return nil, fmt.Errorf("the stream ended before %s (%v)", typ, sc.Err())
}

func postJSON(url string, body, out any) error {
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s %s", url, resp.Status, msg)
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// sample is the memory of a process tree, MB.
type sample struct {
	procs                          int
	rss, pss, serverRSS, serverPSS float64
}

// tree sums the memory of pid and its descendants (found through
// /proc/*/stat's parent ids).
func tree(pid int) sample {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		f := strings.Fields(rest)
		if len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	in := func(p int) bool {
		for i := 0; p > 1 && i < 64; i++ {
			if p == pid {
				return true
			}
			p = parent[p]
		}
		return false
	}
	var s sample
	for p := range parent {
		if !in(p) {
			continue
		}
		rss, pss := memKB(p)
		s.procs++
		s.rss += rss / 1024
		s.pss += pss / 1024
		if p == pid {
			s.serverRSS, s.serverPSS = rss/1024, pss/1024
		}
	}
	return s
}

// memKB reads a process's Rss and Pss (kB) from smaps_rollup.
func memKB(pid int) (rss, pss float64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "Rss:":
			rss = v
		case "Pss:":
			pss = v
		}
	}
	return rss, pss
}
