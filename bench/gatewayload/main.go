// Command gatewayload is the gateway's load benchmark. Run it from the
// module root:
//
//	go run ./bench/gatewayload [-sessions 50] [-lines 200] [-readers 200] [-list 1000]
//
// It serves a real harness.Harness through a real gateway on a loopback
// port, with a stand-in claude (this program re-executed) that speaks the
// CLI's stream-json protocol like claudetest.Replayer does, and stamps
// each text delta with the time it wrote the line. It checks and reports:
//
//  1. -sessions concurrent sessions, each one turn of -lines deltas,
//     streamed to its POST /turn client: no event lost or reordered
//     (consecutive seq, stamps in order), and the latency from the
//     child's write to the SSE client's read (p50/p99/max);
//  2. -readers SSE readers on one session's /events during one turn:
//     each gets every event, in order;
//  3. GET /session/list of a project with -list sessions (median, max);
//  4. the idle RSS of a real `harness serve` (built into a temporary
//     directory) after a session list.
//
// The latency includes the child's pipe, the decoder, the event log
// append and the HTTP client, so it bounds what the gateway adds.
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
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/gateway"
)

const childEnv = "GATEWAYLOAD_CHILD_LINES"

func main() {
	if n := os.Getenv(childEnv); n != "" {
		os.Exit(child(n))
	}
	sessions := flag.Int("sessions", 50, "concurrent sessions")
	lines := flag.Int("lines", 200, "text deltas per turn")
	readers := flag.Int("readers", 200, "SSE readers of one session")
	list := flag.Int("list", 1000, "sessions in the listed project")
	delay := flag.Duration("line-delay", 10*time.Millisecond, "pause between the child's lines (10ms: a fast model's 100 tokens/s)")
	flag.Parse()
	if err := run(*sessions, *lines, *readers, *list, *delay); err != nil {
		fmt.Fprintln(os.Stderr, "gatewayload:", err)
		os.Exit(1)
	}
}

// child is the stand-in claude: it waits for the user message, writes an
// init line, the deltas (each "<unix nanos>;" as its text) and a result,
// then waits for stdin to close.
func child(nLines string) int {
	n, _ := strconv.Atoi(nLines)
	delay, _ := time.ParseDuration(os.Getenv("GATEWAYLOAD_CHILD_DELAY"))
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadBytes('\n'); err != nil {
		return 2
	}
	out := bufio.NewWriter(os.Stdout)
	sid := "00000000-0000-4000-8000-000000000001"
	fmt.Fprintf(out, `{"type":"system","subtype":"init","session_id":%q,"model":"bench","tools":["Read"],"cwd":".","permissionMode":"dontAsk","claude_code_version":"2.1.329"}`+"\n", sid)
	fmt.Fprintf(out, `{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","content":[],"usage":{}}},"session_id":%q,"parent_tool_use_id":null}`+"\n", sid)
	fmt.Fprintf(out, `{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}},"session_id":%q,"parent_tool_use_id":null}`+"\n", sid)
	out.Flush()
	var full strings.Builder
	for i := 0; i < n; i++ {
		if delay > 0 {
			time.Sleep(delay)
		}
		stamp := strconv.FormatInt(time.Now().UnixNano(), 10) + ";"
		full.WriteString(stamp)
		fmt.Fprintf(out, `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}},"session_id":%q,"parent_tool_use_id":null}`+"\n", stamp, sid)
		out.Flush()
	}
	text, _ := json.Marshal(full.String())
	fmt.Fprintf(out, `{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":%s}],"stop_reason":null},"session_id":%q,"parent_tool_use_id":null}`+"\n", text, sid)
	fmt.Fprintf(out, `{"type":"stream_event","event":{"type":"content_block_stop","index":0},"session_id":%q,"parent_tool_use_id":null}`+"\n", sid)
	fmt.Fprintf(out, `{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}},"session_id":%q,"parent_tool_use_id":null}`+"\n", sid)
	fmt.Fprintf(out, `{"type":"stream_event","event":{"type":"message_stop"},"session_id":%q,"parent_tool_use_id":null}`+"\n", sid)
	fmt.Fprintf(out, `{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":%q,"total_cost_usd":0.0001,"usage":{"input_tokens":1,"output_tokens":1},"num_turns":1,"duration_ms":1}`+"\n", sid)
	out.Flush()
	_, _ = io.Copy(io.Discard, in)
	return 0
}

type env struct {
	script string
	url    string
	root   string
	h      *harness.Harness
	gw     *gateway.Gateway
	srv    *http.Server
}

func start(tmp string, lines int, delay time.Duration) (*env, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	script := filepath.Join(tmp, "claude")
	body := fmt.Sprintf("#!/bin/sh\nexport %s=%d\nexport GATEWAYLOAD_CHILD_DELAY=%s\nexec '%s' \"$@\"\n", childEnv, lines, delay, exe)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		return nil, err
	}
	root := filepath.Join(tmp, "project")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	h, err := harness.New(harness.Config{Roots: []string{root}, ClaudeBinary: script, StateDir: filepath.Join(tmp, "state")})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	gw, err := gateway.New(gateway.Config{Harness: h, Addr: ln.Addr().String()})
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: gw}
	go srv.Serve(ln)
	return &env{script: script, url: "http://" + ln.Addr().String(), root: root, h: h, gw: gw, srv: srv}, nil
}

func (e *env) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.h.Shutdown(ctx)
	e.gw.Close()
	e.srv.Shutdown(ctx)
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 0}}

func (e *env) create() (string, error) {
	resp, err := client.Post(e.url+"/api/harness/session/create", "application/json",
		strings.NewReader(`{"projectRoot":"`+e.root+`","mode":"workbench"}`))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Session struct{ ID string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 201 {
		return "", fmt.Errorf("create: %d %v", resp.StatusCode, err)
	}
	return out.Session.ID, nil
}

// consume reads an SSE stream to its end and checks it: consecutive ids
// from after+1, `lines` deltas with stamps in order, process:exit last.
// It returns the delta latencies.
func consume(r io.Reader, after int64, lines int) ([]time.Duration, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	next := after + 1
	var lat []time.Duration
	var lastStamp int64
	var lastType string
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		now := time.Now().UnixNano()
		var ev struct {
			Seq  int64  `json:"seq"`
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, err
		}
		if ev.Seq != next {
			return nil, fmt.Errorf("seq %d, want %d: lost or reordered", ev.Seq, next)
		}
		next++
		lastType = ev.Type
		if ev.Type == "chat:delta" {
			stamp, err := strconv.ParseInt(strings.TrimSuffix(ev.Text, ";"), 10, 64)
			if err != nil || stamp < lastStamp {
				return nil, fmt.Errorf("delta %q out of order", ev.Text)
			}
			lastStamp = stamp
			lat = append(lat, time.Duration(now-stamp))
		}
	}
	if lastType != "process:exit" {
		return nil, fmt.Errorf("stream ended with %q", lastType)
	}
	if len(lat) != lines {
		return nil, fmt.Errorf("%d deltas, want %d", len(lat), lines)
	}
	return lat, sc.Err()
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func run(sessions, lines, readers, list int, delay time.Duration) error {
	tmp, err := os.MkdirTemp("", "gatewayload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	e, err := start(tmp, lines, delay)
	if err != nil {
		return err
	}
	defer e.stop()

	// 1. Concurrent sessions.
	ids := make([]string, sessions)
	for i := range ids {
		if ids[i], err = e.create(); err != nil {
			return err
		}
	}
	t0 := time.Now()
	all, errs := streamAll(len(ids), func(i int) (*http.Response, error) {
		return client.Post(e.url+"/api/harness/turn", "application/json", strings.NewReader(`{"sessionId":"`+ids[i]+`","message":"go"}`))
	}, lines)
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d sessions failed; first: %v", len(errs), sessions, errs[0])
	}
	fmt.Printf("sessions: %d concurrent turns × %d deltas in %v; 0 lost, 0 reordered\n", sessions, lines, time.Since(t0).Round(time.Millisecond))
	fmt.Printf("  child line → SSE client: p50 %v  p99 %v  max %v (%d deltas)\n", pct(all, .5), pct(all, .99), pct(all, 1), len(all))

	// The same load read straight from the driver, without the gateway:
	// the difference is what the gateway adds.
	base, err := baseline(e, ids, lines)
	if err != nil {
		return err
	}
	fmt.Printf("  same load, driver only (no gateway): p50 %v  p99 %v  max %v\n", pct(base, .5), pct(base, .99), pct(base, 1))
	fmt.Printf("  gateway adds at p50 %v, at p99 %v\n", pct(all, .5)-pct(base, .5), pct(all, .99)-pct(base, .99))

	// 2. Many readers of one session.
	id, err := e.create()
	if err != nil {
		return err
	}
	resp, err := client.Post(e.url+"/api/harness/turn", "application/json", strings.NewReader(`{"sessionId":"`+id+`","message":"go"}`))
	if err != nil {
		return err
	}
	go func() { io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
	all, errs = streamAll(readers, func(int) (*http.Response, error) {
		return client.Get(e.url + "/api/harness/session/" + id + "/events?after=0")
	}, lines)
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d readers failed; first: %v", len(errs), readers, errs[0])
	}
	fmt.Printf("readers: %d SSE readers of one turn: every event, in order, to all\n", readers)
	fmt.Printf("  (readers that joined late replay from the log; latency incl. replay) p50 %v p99 %v\n", pct(all, .5), pct(all, .99))

	// 3. Listing a big project.
	big := filepath.Join(tmp, "big")
	os.MkdirAll(big, 0o755)
	h2, err := harness.New(harness.Config{Roots: []string{big}, StateDir: filepath.Join(tmp, "state2")})
	if err != nil {
		return err
	}
	for range list {
		if _, err := h2.CreateSession(big, "", "direct"); err != nil {
			return err
		}
	}
	gw2, _ := gateway.New(gateway.Config{Harness: h2})
	var times []time.Duration
	for range 7 {
		req, _ := http.NewRequest("GET", "/api/harness/session/list?projectRoot="+big, nil)
		req.Host = "127.0.0.1"
		rec := &discardWriter{h: http.Header{}}
		t := time.Now()
		gw2.ServeHTTP(rec, req)
		times = append(times, time.Since(t))
		if rec.status != 200 {
			return fmt.Errorf("list: %d", rec.status)
		}
	}
	fmt.Printf("list: %d sessions: median %v, max %v\n", list, pct(times, .5), pct(times, 1))

	// 4. Idle RSS of the real server.
	rss, err := idleRSS(tmp, big)
	if err != nil {
		fmt.Printf("idle RSS: not measured: %v\n", err)
	} else {
		fmt.Printf("idle RSS of harness serve (after a list of %d): %.1f MB\n", list, float64(rss)/(1<<20))
	}
	return nil
}

// baseline runs one turn per session through a bare claudecode.Manager
// with the same stand-in CLI and returns the delta latencies.
// streamAll opens n SSE streams at once with open(i), reads each to its
// end with consume, and gathers every latency and every failure.
func streamAll(n int, open func(i int) (*http.Response, error), lines int) ([]time.Duration, []error) {
	var mu sync.Mutex
	var all []time.Duration
	var errs []error
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := open(i)
			var lat []time.Duration
			if err == nil {
				lat, err = consume(resp.Body, 0, lines)
				resp.Body.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			all = append(all, lat...)
		}()
	}
	wg.Wait()
	return all, errs
}

func baseline(e *env, ids []string, lines int) ([]time.Duration, error) {
	mgr := claudecode.NewManager(claudecode.Config{Binary: e.script})
	var mu sync.Mutex
	var all []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t, err := mgr.StartTurn(context.Background(), "base-"+id, "go", claudecode.TurnOpts{Cwd: e.root})
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
				return
			}
			defer t.Close()
			var lat []time.Duration
			for t.Next() {
				ev := t.Event()
				if ev.Type == event.TypeChatDelta {
					now := time.Now().UnixNano()
					stamp, _ := strconv.ParseInt(strings.TrimSuffix(ev.Text, ";"), 10, 64)
					lat = append(lat, time.Duration(now-stamp))
				}
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if len(all) != len(ids)*lines {
		return nil, fmt.Errorf("baseline: %d deltas, want %d", len(all), len(ids)*lines)
	}
	return all, nil
}

type discardWriter struct {
	h      http.Header
	status int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(s int)           { d.status = s }

// idleRSS builds cmd/harness, serves the big project and reads VmRSS.
func idleRSS(tmp, root string) (int64, error) {
	bin := filepath.Join(tmp, "harness")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/harness").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("go build: %v: %s", err, out)
	}
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--root", root, "--state-dir", filepath.Join(tmp, "state2"))
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return 0, err
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "harness: listening on "))
	resp, err := http.Get(url + "/api/harness/session/list")
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	time.Sleep(200 * time.Millisecond) // let the server settle: this is a measurement, not a wait for a condition
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS")
}
