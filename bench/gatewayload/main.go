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
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/gateway"
)

const childEnv = "GATEWAYLOAD_CHILD_LINES"

func main() {
	if n := os.Getenv(childEnv); n != "" {
		os.Exit(child(n))
	}
	if dir := os.Getenv(serverEnv); dir != "" {
		os.Exit(serve(dir))
	}
	o := opts{}
	flag.IntVar(&o.sessions, "sessions", 50, "concurrent sessions")
	flag.IntVar(&o.lines, "lines", 200, "text deltas per turn")
	flag.IntVar(&o.readers, "readers", 200, "SSE readers of one session (the readers phase)")
	flag.IntVar(&o.perSession, "per-session", 4, "SSE readers of each concurrent session: its POST /turn stream and per-session-1 GET /events followers")
	flag.IntVar(&o.list, "list", 1000, "sessions in the listed project")
	flag.IntVar(&o.runs, "runs", 3, "interleaved gateway / driver-only runs of the sessions phase")
	flag.DurationVar(&o.delay, "line-delay", 10*time.Millisecond, "pause between the child's lines (10ms: a fast model's 100 tokens/s)")
	flag.StringVar(&o.stub, "stub", "c", "the stand-in CLI: c (built with cc; falls back to go) or go (this program)")
	flag.BoolVar(&o.inproc, "inproc", false, "serve in this process (the load generator then shares the server's process and its scheduler)")
	flag.StringVar(&o.prof.cpu, "cpuprofile", "", "write the server's CPU profile of the sessions phase here")
	flag.StringVar(&o.prof.trace, "trace", "", "write the server's execution trace of the sessions phase here")
	flag.StringVar(&o.prof.block, "blockprofile", "", "write the server's block profile here")
	flag.StringVar(&o.prof.mutex, "mutexprofile", "", "write the server's mutex profile here")
	flag.StringVar(&o.prof.allocs, "memprofile", "", "write the server's allocation profile (whole run up to the end of the first sessions phase) here")
	flag.BoolVar(&o.noRSS, "no-rss", false, "skip the idle RSS phase (it builds ./cmd/harness)")
	flag.IntVar(&o.profRun, "profile-run", 1, "which run of the sessions phase the profiles cover (2: after the first turns' one-time work, git's first snapshot and the CLI's version check)")
	flag.StringVar(&o.samples, "samples", "", "write every delta's latency of every run here (CSV: run,side,reader,session,delta,stamp_ns,latency_ns)")
	clientProcs := flag.Int("client-procs", 0, "GOMAXPROCS of the load generator (0: Go's default; the server process always has the default)")
	flag.Parse()
	if *clientProcs > 0 && !o.inproc {
		runtime.GOMAXPROCS(*clientProcs)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "gatewayload:", err)
		os.Exit(1)
	}
}

type opts struct {
	sessions, lines, readers, list, runs int
	perSession                           int
	delay                                time.Duration
	inproc                               bool
	samples                              string
	profRun                              int
	noRSS                                bool
	stub                                 string
	prof                                 profiles
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

const (
	serverEnv  = "GATEWAYLOAD_SERVER_DIR"
	memRateEnv = "GATEWAYLOAD_MEMPROFILERATE"
)

// server is a harness behind a gateway on a loopback port: in this
// process (-inproc) or in a child process of this program, so that the
// load generator's own work (HTTP reading, JSON decoding of every event)
// is not scheduled by the server's runtime.
type server struct {
	url  string
	root string
	// in-process
	h   *harness.Harness
	gw  *gateway.Gateway
	srv *http.Server
	// separate process
	cmd   *exec.Cmd
	ctl   io.WriteCloser
	ctlIn *bufio.Reader
}

// stubScript writes the stand-in claude into tmp: the C one (built with
// cc) unless stub is "go" or there is no C compiler.
func stubScript(tmp, stub string, lines int, delay time.Duration) (string, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", "", err
	}
	if stub == "c" {
		src := filepath.Join(tmp, "stub.c")
		bin := filepath.Join(tmp, "stub")
		if err := os.WriteFile(src, []byte(cStub), 0o644); err != nil {
			return "", "", err
		}
		if out, err := exec.Command("cc", "-O2", "-o", bin, src).CombinedOutput(); err == nil {
			exe = bin
		} else {
			fmt.Fprintf(os.Stderr, "gatewayload: no C stand-in (%v: %s); using the Go one\n", err, bytes.TrimSpace(out))
			stub = "go"
		}
	}
	script := filepath.Join(tmp, "claude")
	body := fmt.Sprintf("#!/bin/sh\nexport %s=%d\nexport GATEWAYLOAD_CHILD_DELAY=%s\nexec '%s' \"$@\"\n", childEnv, lines, delay, exe)
	return script, stub, os.WriteFile(script, []byte(body), 0o755)
}

// cStub is child() in C: the same lines, byte for byte, at a small
// fraction of the CPU (a Go process costs ≈50 ms of CPU for 200 lines
// 10 ms apart, most of it the runtime's timer and idle-thread handling;
// 50 of them took a whole core of this 2-core machine, from the gateway
// and the driver alike).
const cStub = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *sid = "00000000-0000-4000-8000-000000000001";

int main(void) {
	const char *n_s = getenv("GATEWAYLOAD_CHILD_LINES");
	const char *d_s = getenv("GATEWAYLOAD_CHILD_DELAY");
	long n = n_s ? atol(n_s) : 0;
	double ms = 0;
	if (d_s) {
		ms = atof(d_s);
		if (strstr(d_s, "µs") || strstr(d_s, "us")) ms /= 1000;
		else if (strstr(d_s, "ms") == NULL && strchr(d_s, 's')) ms *= 1000;
	}
	int c;
	while ((c = getchar()) != EOF && c != '\n') {}
	if (c == EOF) return 2;
	printf("{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"%s\",\"model\":\"bench\",\"tools\":[\"Read\"],\"cwd\":\".\",\"permissionMode\":\"dontAsk\",\"claude_code_version\":\"2.1.329\"}\n", sid);
	printf("{\"type\":\"stream_event\",\"event\":{\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{}}},\"session_id\":\"%s\",\"parent_tool_use_id\":null}\n", sid);
	printf("{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}},\"session_id\":\"%s\",\"parent_tool_use_id\":null}\n", sid);
	fflush(stdout);
	char *full = calloc((size_t)n * 24 + 1, 1);
	size_t len = 0;
	struct timespec d = {(time_t)(ms / 1000), (long)((ms - 1000 * (long)(ms / 1000)) * 1e6)};
	for (long i = 0; i < n; i++) {
		if (ms > 0) nanosleep(&d, NULL);
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		char stamp[32];
		int k = snprintf(stamp, sizeof stamp, "%lld;", (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
		memcpy(full + len, stamp, (size_t)k);
		len += (size_t)k;
		printf("{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"%s\"}},\"session_id\":\"%s\",\"parent_tool_use_id\":null}\n", stamp, sid);
		fflush(stdout);
	}
	printf("{\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"stop_reason\":null},\"session_id\":\"%s\",\"parent_tool_use_id\":null}\n", full, sid);
	printf("{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_stop\",\"index\":0},\"session_id\":\"%s\",\"parent_tool_use_id\":null}\n", sid);
	printf("{\"type\":\"stream_event\",\"event\":{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}},\"session_id\":\"%s\",\"parent_tool_use_id\":null}\n", sid);
	printf("{\"type\":\"stream_event\",\"event\":{\"type\":\"message_stop\"},\"session_id\":\"%s\",\"parent_tool_use_id\":null}\n", sid);
	printf("{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"ok\",\"session_id\":\"%s\",\"total_cost_usd\":0.0001,\"usage\":{\"input_tokens\":1,\"output_tokens\":1},\"num_turns\":1,\"duration_ms\":1}\n", sid);
	fflush(stdout);
	while (getchar() != EOF) {}
	return 0;
}
`

// listen starts a harness and a gateway for the project tmp/project with
// the stand-in at script.
func listen(tmp, script string) (*server, error) {
	root := filepath.Join(tmp, "project")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	h, err := harness.New(harness.Config{Roots: []string{root}, StateDir: filepath.Join(tmp, "state"),
		Engines: engines.Builtin(engines.Config{ClaudeBinary: script})})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// No stream caps: the readers phase opens -readers streams of one
	// session, more than serve's default cap per session.
	gw, err := gateway.New(gateway.Config{Harness: h, Addr: ln.Addr().String(), MaxStreams: -1, MaxSessionStreams: -1})
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: gw}
	go srv.Serve(ln)
	return &server{url: "http://" + ln.Addr().String(), root: root, h: h, gw: gw, srv: srv}, nil
}

func (e *server) closeInproc() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.h.Shutdown(ctx)
	e.gw.Close()
	e.srv.Shutdown(ctx)
}

// serve is the server process: it prints "<url> <root>", then obeys
// lines on stdin ("prof <kind> <file>…" starts profiles, "stop" writes
// them, answering "ok" each time) and exits when stdin closes.
func serve(tmp string) int {
	if r, err := strconv.Atoi(os.Getenv(memRateEnv)); err == nil && r > 0 {
		runtime.MemProfileRate = r // before the server allocates anything
	}
	script := filepath.Join(tmp, "claude")
	e, err := listen(tmp, script)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gatewayload server:", err)
		return 1
	}
	defer e.closeInproc()
	fmt.Printf("%s %s\n", e.url, e.root)
	var p profiles
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 6 && f[0] == "prof":
			p = profiles{cpu: dash(f[1]), trace: dash(f[2]), block: dash(f[3]), mutex: dash(f[4]), allocs: dash(f[5])}
			err = p.start()
		case len(f) == 1 && f[0] == "stop":
			err = p.stop()
		case len(f) == 1 && f[0] == "mem":
			gc, alloc := memStats()
			fmt.Printf("mem %d %d\n", gc, alloc)
			continue
		}
		if err != nil {
			fmt.Printf("error %v\n", err)
			err = nil
			continue
		}
		fmt.Println("ok")
	}
	return 0
}

func dash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// start serves in this process or in a child process.
func start(tmp string, o opts) (*server, error) {
	script, stub, err := stubScript(tmp, o.stub, o.lines, o.delay)
	if err != nil {
		return nil, err
	}
	fmt.Printf("stand-in CLI: %s\n", stub)
	if o.inproc {
		return listen(tmp, script)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), serverEnv+"="+tmp)
	if o.prof.allocs != "" {
		// One sample per 4 KB allocated (the default, 512 KB, leaves a
		// turn's start unseen).
		cmd.Env = append(cmd.Env, memRateEnv+"=4096")
	}
	cmd.Stderr = os.Stderr
	ctl, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e := &server{cmd: cmd, ctl: ctl, ctlIn: bufio.NewReader(out)}
	line, err := e.ctlIn.ReadString('\n')
	if err != nil {
		e.close()
		return nil, fmt.Errorf("server process: %v", err)
	}
	if _, err := fmt.Sscan(line, &e.url, &e.root); err != nil {
		e.close()
		return nil, fmt.Errorf("server process said %q", line)
	}
	return e, nil
}

// command sends a control line to the server process and waits for its
// answer.
func (e *server) command(line string) error {
	if e.cmd == nil {
		return nil
	}
	if _, err := io.WriteString(e.ctl, line+"\n"); err != nil {
		return err
	}
	ans, err := e.ctlIn.ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(ans) != "ok" {
		return fmt.Errorf("server process: %s", strings.TrimSpace(ans))
	}
	return nil
}

func (e *server) close() {
	if e.cmd == nil {
		e.closeInproc()
		return
	}
	e.ctl.Close()
	done := make(chan error, 1)
	go func() { done <- e.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		e.cmd.Process.Kill()
		<-done
	}
}

// profiles of the sessions phase.
type profiles struct {
	cpu, trace, block, mutex, allocs string
	files                            []*os.File
}

func (p *profiles) any() bool {
	return p.cpu != "" || p.trace != "" || p.block != "" || p.mutex != "" || p.allocs != ""
}

func (p *profiles) start() error {
	if p.block != "" {
		runtime.SetBlockProfileRate(10_000) // one sample per 10 µs blocked
	}
	if p.mutex != "" {
		runtime.SetMutexProfileFraction(1)
	}
	if p.cpu != "" {
		f, err := os.Create(p.cpu)
		if err != nil {
			return err
		}
		p.files = append(p.files, f)
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	if p.trace != "" {
		f, err := os.Create(p.trace)
		if err != nil {
			return err
		}
		p.files = append(p.files, f)
		if err := trace.Start(f); err != nil {
			return err
		}
	}
	return nil
}

func (p *profiles) stop() error {
	if p.cpu != "" {
		pprof.StopCPUProfile()
	}
	if p.trace != "" {
		trace.Stop()
	}
	var errs []error
	for kind, file := range map[string]string{"block": p.block, "mutex": p.mutex, "allocs": p.allocs} {
		if file == "" {
			continue
		}
		f, err := os.Create(file)
		if err == nil {
			err = pprof.Lookup(kind).WriteTo(f, 0)
			errs = append(errs, err, f.Close())
		}
		errs = append(errs, err)
	}
	for _, f := range p.files {
		errs = append(errs, f.Close())
	}
	p.files = nil
	runtime.SetBlockProfileRate(0)
	runtime.SetMutexProfileFraction(0)
	return errors.Join(errs...)
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 0}}

func (e *server) create() (string, error) {
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

// sample is one delta's latency and its index in its turn.
type sample struct {
	d     time.Duration
	i     int
	stamp int64 // when the stand-in wrote it (unix ns)
	// reader is who read it (-samples): "post" (the POST /turn stream),
	// "follow" (a GET /events reader) or "driver"; session its index.
	reader  string
	session int
}

// consume reads an SSE stream to its end and checks it: consecutive ids
// from after+1, `lines` deltas with stamps in order, process:exit last.
// It returns the delta latencies.
func consume(r io.Reader, after int64, lines int) ([]sample, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	next := after + 1
	var lat []sample
	var lastStamp int64
	var lastType string
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		now := time.Now().UnixNano()
		ev, ok := quickEvent(data)
		if !ok {
			if err := json.Unmarshal(data, &ev); err != nil {
				return nil, err
			}
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
			lat = append(lat, sample{d: time.Duration(now - stamp), i: len(lat), stamp: stamp})
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

// wireEvent is what consume needs of an event.
type wireEvent struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
	Text string `json:"text"`
}

// quickEvent reads seq, type and (for a chat:delta) text from a stored
// event line without a JSON decoder: the load generator shares the
// machine's two cores with the server, and decoding 20,000 events a
// second took it a large part of one. Lines it is not sure of (not
// starting {"seq":N,"type":"…", escapes in the text) are left to
// encoding/json (ok false).
func quickEvent(line []byte) (wireEvent, bool) {
	var ev wireEvent
	rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !ok {
		return ev, false
	}
	i := bytes.IndexByte(rest, ',')
	if i <= 0 {
		return ev, false
	}
	seq, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil {
		return ev, false
	}
	rest, ok = bytes.CutPrefix(rest[i+1:], []byte(`"type":"`))
	if !ok {
		return ev, false
	}
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ev, false
	}
	ev.Seq, ev.Type = seq, string(rest[:j])
	if ev.Type == "chat:delta" {
		k := bytes.Index(rest, []byte(`"text":"`))
		if k < 0 {
			return ev, false
		}
		text := rest[k+len(`"text":"`):]
		e := bytes.IndexByte(text, '"')
		if e < 0 || bytes.IndexByte(text[:e], '\\') >= 0 {
			return ev, false
		}
		ev.Text = string(text[:e])
	}
	return ev, true
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func durations(s []sample, keep func(sample) bool) []time.Duration {
	var d []time.Duration
	for _, x := range s {
		if keep == nil || keep(x) {
			d = append(d, x.d)
		}
	}
	return d
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }

func list(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%+.1f", float64(d)/1e6))
	}
	return strings.Join(parts, ", ") + " ms"
}

// loadavg is /proc/loadavg's first three figures.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// summary prints p50/p99/max of s, and the p99 of the deltas written in
// the steady state: after the last stand-in's first delta and before the
// first one's last (every turn streaming, none starting or ending; lines
// is the number of deltas per turn).
func summary(label string, s []sample, lines int) (p50, p99, steady time.Duration) {
	all := durations(s, nil)
	p50, p99 = pct(all, .5), pct(all, .99)
	var from, to int64 = 0, 1<<63 - 1
	for _, x := range s {
		if x.i == 0 {
			from = max(from, x.stamp)
		}
		if x.i == lines-1 {
			to = min(to, x.stamp)
		}
	}
	st := durations(s, func(x sample) bool { return x.stamp > from && x.stamp < to })
	steady = pct(st, .99)
	fmt.Printf("  %-26s p50 %s  p99 %s  max %s  | steady state (%d deltas): p99 %s\n",
		label, ms(p50), ms(p99), ms(pct(all, 1)), len(st), ms(steady))
	return p50, p99, steady
}

func run(o opts) error {
	tmp, err := os.MkdirTemp("", "gatewayload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	e, err := start(tmp, o)
	if err != nil {
		return err
	}
	defer e.close()
	where := "a separate process"
	if o.inproc {
		where = "this process (-inproc)"
	}
	fmt.Printf("server in %s; %d CPUs; load generator GOMAXPROCS %d\n", where, runtime.NumCPU(), runtime.GOMAXPROCS(0))

	// 1. Concurrent sessions, interleaved with the same load read straight
	// from the driver (no gateway): the difference is what the gateway
	// adds.
	var adds, steadyAdds, serverCPU []time.Duration
	var allocMB, gcCycles []float64
	for run := 1; run <= o.runs; run++ {
		ids := make([]string, o.sessions)
		for i := range ids {
			if ids[i], err = e.create(); err != nil {
				return err
			}
		}
		if o.prof.any() && run == o.profRun {
			if o.inproc {
				err = o.prof.start()
			} else {
				err = e.command(fmt.Sprintf("prof %s %s %s %s %s", orDash(abs(o.prof.cpu)), orDash(abs(o.prof.trace)), orDash(abs(o.prof.block)), orDash(abs(o.prof.mutex)), orDash(abs(o.prof.allocs))))
			}
			if err != nil {
				return err
			}
		}
		la := loadavg()
		gc0, al0, memOK := e.mem()
		c0 := e.cpu()
		t0 := time.Now()
		all, errs := e.turns(ids, o.perSession, o.lines)
		if o.prof.any() && run == o.profRun {
			if o.inproc {
				err = o.prof.stop()
			} else {
				err = e.command("stop")
			}
			if err != nil {
				return err
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%d of %d sessions failed; first: %v", len(errs), o.sessions, errs[0])
		}
		fmt.Printf("run %d (load average %s): %d concurrent turns × %d deltas, %d SSE readers each, in %v; 0 lost, 0 reordered\n", run, la, o.sessions, o.lines, o.perSession, time.Since(t0).Round(time.Millisecond))
		c1 := e.cpu()
		fmt.Printf("  CPU: server %v, its stand-in CLIs %v, load generator %v\n", c1.server-c0.server, c1.children-c0.children, c1.self-c0.self)
		serverCPU = append(serverCPU, c1.server-c0.server)
		if gc1, al1, ok := e.mem(); ok && memOK {
			// Less dependent on the machine's load than latencies: what
			// the server allocated and how often it collected.
			fmt.Printf("  server heap: %.1f MB allocated, %d GC cycles\n", float64(al1-al0)/1e6, gc1-gc0)
			allocMB = append(allocMB, float64(al1-al0)/1e6)
			gcCycles = append(gcCycles, float64(gc1-gc0))
		}
		g50, g99, gst := summary("child line → SSE client:", all, o.lines)
		base, err := baseline(filepath.Join(tmp, "claude"), e.root, ids, o.lines)
		if err != nil {
			return err
		}
		b50, b99, bst := summary("same load, driver only:", base, o.lines)
		if o.samples != "" {
			if err := writeSamples(o.samples, run, all, base); err != nil {
				return err
			}
		}
		fmt.Printf("  gateway adds at p50 %s, at p99 %s, at p99 in the steady state %s (load average now %s)\n", ms(g50-b50), ms(g99-b99), ms(gst-bst), loadavg())
		adds = append(adds, g99-b99)
		steadyAdds = append(steadyAdds, gst-bst)
	}
	if o.runs > 1 {
		fmt.Printf("over %d runs: what the gateway adds at p99, per run: median %s (runs: %s); in the steady state: median %s (runs: %s)\n",
			o.runs, ms(pct(slices.Clone(adds), .5)), list(adds), ms(pct(slices.Clone(steadyAdds), .5)), list(steadyAdds))
		fmt.Printf("over %d runs: server CPU median %v", o.runs, pct(slices.Clone(serverCPU), .5))
		if len(allocMB) > 0 {
			fmt.Printf(", allocated median %.1f MB, GC cycles median %.0f", median(allocMB), median(gcCycles))
		}
		fmt.Println()
	}

	// 2. Many readers of one session.
	id, err := e.create()
	if err != nil {
		return err
	}
	resp, err := client.Post(e.url+"/api/harness/turn?events=all", "application/json", strings.NewReader(`{"sessionId":"`+id+`","message":"go"}`))
	if err != nil {
		return err
	}
	go func() { io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
	all, errs := streamAll(o.readers, func(int) (*http.Response, error) {
		return client.Get(e.url + "/api/harness/session/" + id + "/events?after=0&events=all")
	}, o.lines)
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d readers failed; first: %v", len(errs), o.readers, errs[0])
	}
	fmt.Printf("readers: %d SSE readers of one turn: every event, in order, to all\n", o.readers)
	rd := durations(all, nil)
	fmt.Printf("  (readers that joined late replay from the log; latency incl. replay) p50 %s p99 %s\n", ms(pct(rd, .5)), ms(pct(rd, .99)))

	// 3. Listing a big project.
	big := filepath.Join(tmp, "big")
	os.MkdirAll(big, 0o755)
	h2, err := harness.New(harness.Config{Roots: []string{big}, StateDir: filepath.Join(tmp, "state2"), Engines: engines.Builtin(engines.Config{})})
	if err != nil {
		return err
	}
	for range o.list {
		if _, err := h2.NewSession(harness.SessionSpec{ProjectRoot: big, Mode: "direct"}); err != nil {
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
	fmt.Printf("list: %d sessions: median %v, max %v\n", o.list, pct(times, .5), pct(times, 1))

	// 4. Idle RSS of the real server.
	if o.noRSS {
		return nil
	}
	rss, err := idleRSS(tmp, big)
	if err != nil {
		fmt.Printf("idle RSS: not measured: %v\n", err)
	} else {
		fmt.Printf("idle RSS of harness serve (after a list of %d): %.1f MB\n", o.list, float64(rss)/(1<<20))
	}
	return nil
}

type cpuTimes struct{ server, children, self time.Duration }

// memStats returns this process's GC cycles and bytes allocated so far.
func memStats() (gcs, alloc uint64) {
	m := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(m)
	return m[0].Value.Uint64(), m[1].Value.Uint64()
}

// mem asks the server process for its GC cycles and bytes allocated so
// far (ok false in -inproc mode: the load generator's would be counted).
func (e *server) mem() (gcs, alloc uint64, ok bool) {
	if e.cmd == nil {
		return 0, 0, false
	}
	if _, err := io.WriteString(e.ctl, "mem\n"); err != nil {
		return 0, 0, false
	}
	ans, err := e.ctlIn.ReadString('\n')
	if err != nil {
		return 0, 0, false
	}
	_, err = fmt.Sscanf(ans, "mem %d %d", &gcs, &alloc)
	return gcs, alloc, err == nil
}

// cpu reads the CPU time used so far by the server process, by its
// reaped children, and by this process (in -inproc mode the server's
// figure is this process's).
func (e *server) cpu() cpuTimes {
	var c cpuTimes
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	pid := os.Getpid()
	if e.cmd != nil {
		pid = e.cmd.Process.Pid
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return c
	}
	// Fields after the command's ")": utime is the 12th, cutime the 14th.
	_, rest, _ := bytes.Cut(b, []byte(") "))
	f := strings.Fields(string(rest))
	if len(f) < 15 {
		return c
	}
	tick := func(s string) time.Duration {
		n, _ := strconv.ParseInt(s, 10, 64)
		return time.Duration(n) * 10 * time.Millisecond
	}
	c.server = tick(f[11]) + tick(f[12])
	c.children = tick(f[13]) + tick(f[14])
	return c
}

func abs(p string) string {
	if p == "" {
		return ""
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// turns starts one turn per session with POST /turn and, once it runs,
// opens perSession-1 more readers of it (GET /events?after=0); it reads
// every stream to its end with consume and gathers every latency and
// every failure.
func (e *server) turns(ids []string, perSession, lines int) ([]sample, []error) {
	var mu sync.Mutex
	var all []sample
	var errs []error
	var wg sync.WaitGroup
	read := func(resp *http.Response, err error, reader string, session int) {
		defer wg.Done()
		var lat []sample
		if err == nil {
			lat, err = consume(resp.Body, 0, lines)
			resp.Body.Close()
		}
		for i := range lat {
			lat[i].reader, lat[i].session = reader, session
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
			return
		}
		all = append(all, lat...)
	}
	for n, id := range ids {
		wg.Add(1)
		go func() {
			resp, err := client.Post(e.url+"/api/harness/turn?events=all", "application/json", strings.NewReader(`{"sessionId":"`+id+`","message":"go"}`))
			if err == nil {
				for range perSession - 1 {
					wg.Add(1)
					go func() {
						resp, err := client.Get(e.url + "/api/harness/session/" + id + "/events?after=0&events=all")
						read(resp, err, "follow", n)
					}()
				}
			}
			read(resp, err, "post", n)
		}()
	}
	wg.Wait()
	return all, errs
}

// streamAll opens n SSE streams at once with open(i), reads each to its
// end with consume, and gathers every latency and every failure.
func streamAll(n int, open func(i int) (*http.Response, error), lines int) ([]sample, []error) {
	var mu sync.Mutex
	var all []sample
	var errs []error
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := open(i)
			var lat []sample
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

// baseline runs one turn per session through a bare claudecode.Manager
// in this process with the same stand-in CLI and returns the delta
// latencies.
func baseline(script, root string, ids []string, lines int) ([]sample, error) {
	mgr := claudecode.NewManager(claudecode.Config{Binary: script})
	var mu sync.Mutex
	var all []sample
	var firstErr error
	var wg sync.WaitGroup
	for n, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t, err := mgr.StartTurn(context.Background(), "base-"+id, "go", claudecode.TurnOpts{Cwd: root})
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
				return
			}
			defer t.Close()
			var lat []sample
			for t.Next() {
				ev := t.Event()
				if ev.Type == event.TypeChatDelta {
					now := time.Now().UnixNano()
					stamp, _ := strconv.ParseInt(strings.TrimSuffix(ev.Text, ";"), 10, 64)
					lat = append(lat, sample{d: time.Duration(now - stamp), i: len(lat), stamp: stamp, reader: "driver", session: n})
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

// writeSamples appends one run's samples to file as CSV (a header first
// when the file is new): the gateway's and then the driver's.
func writeSamples(file string, run int, gateway, driver []sample) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if st, err := f.Stat(); err == nil && st.Size() == 0 {
		w.WriteString("run,side,reader,session,delta,stamp_ns,latency_ns\n")
	}
	for side, s := range map[string][]sample{"gateway": gateway, "driver": driver} {
		for _, x := range s {
			fmt.Fprintf(w, "%d,%s,%s,%d,%d,%d,%d\n", run, side, x.reader, x.session, x.i, x.stamp, int64(x.d))
		}
	}
	return errors.Join(w.Flush(), f.Close())
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

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	return v[len(v)/2]
}
