// Command streams measures what event streams cost `harness serve` and how
// fast it stops with clients that do not read (issue 24), on a real
// `harness serve --demo` subprocess, from its /proc RSS:
//
//		go build -o bin/harness ./cmd/harness && go run ./bench/streams [-cap 256] [-stuck 100]
//
//	 1. idle: -cap streams (the server's cap) reading a long demo turn's
//	    /events (a delta every 50 ms): RSS per stream and at the cap, and
//	    that one more stream is refused (503);
//	 2. stuck: -stuck clients with a 4 KB receive buffer replaying an 8 MB
//	    log (1 MB events) without reading: RSS per stuck stream, and RSS
//	    once the write timeout (10 s) has dropped them;
//	 3. shutdown: a long turn running and five stuck clients, SIGTERM: the
//	    time until the process has exited.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chirality/harness/session"
)

func main() {
	bin := flag.String("bin", "bin/harness", "the harness binary")
	claude := flag.String("claude-bin", "node_modules/.bin/claude", "the Claude Code CLI")
	capN := flag.Int("cap", 256, "--max-streams of the server (the idle phase opens that many)")
	stuckN := flag.Int("stuck", 100, "clients that do not read (the stuck phase)")
	flag.Parse()
	if err := run(*bin, *claude, *capN, *stuckN); err != nil {
		fmt.Fprintln(os.Stderr, "streams:", err)
		os.Exit(1)
	}
}

type server struct {
	cmd  *exec.Cmd
	url  string
	root string
}

func start(bin, claude string, capN int) (*server, error) {
	root, err := os.MkdirTemp("", "bench-streams-")
	if err != nil {
		return nil, err
	}
	root, _ = filepath.EvalSymlinks(root)
	cmd := exec.Command(bin, "serve", "--demo", "--addr", "127.0.0.1:0", "--root", root, "--claude-bin", claude,
		"--warm", "0", "--max-streams", strconv.Itoa(capN), "--max-session-streams", strconv.Itoa(capN))
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(root, ".state"))
	cmd.Stderr = io.Discard
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		return nil, fmt.Errorf("no ready line: %v", err)
	}
	go io.Copy(io.Discard, out)
	url, _ := strings.CutPrefix(strings.TrimSpace(line), "harness: listening on ")
	return &server{cmd: cmd, url: url, root: root}, nil
}

func (s *server) rss() int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func (s *server) create() (string, error) {
	resp, err := http.Post(s.url+"/api/harness/session/create", "application/json", strings.NewReader(`{"projectRoot":"`+s.root+`","mode":"workbench"}`))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var c struct{ Session struct{ ID string } }
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || c.Session.ID == "" {
		return "", fmt.Errorf("create: %d %v", resp.StatusCode, err)
	}
	return c.Session.ID, nil
}

// longTurn starts a long demo turn and returns once its first delta came;
// the rest is read in the background.
func (s *server) longTurn(id string) error {
	resp, err := http.Post(s.url+"/api/harness/turn", "application/json", strings.NewReader(`{"sessionId":"`+id+`","message":"a long answer please"}`))
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("turn: %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.Contains(line, `"chat:delta"`) {
			break
		}
	}
	go func() { io.Copy(io.Discard, br); resp.Body.Close() }()
	return nil
}

func stuck(addr, id string) (net.Conn, error) {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(conn, "GET /api/harness/session/%s/events?after=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", id)
	return conn, nil
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

func run(bin, claude string, capN, stuckN int) error {
	la, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("load average %s", la)
	s, err := start(bin, claude, capN)
	if err != nil {
		return err
	}
	defer os.RemoveAll(s.root)
	defer s.cmd.Process.Kill()
	addr := strings.TrimPrefix(s.url, "http://")

	// 1. Idle streams.
	a, err := s.create()
	if err != nil {
		return err
	}
	if err := s.longTurn(a); err != nil {
		return err
	}
	time.Sleep(time.Second)
	base := s.rss()
	var bodies []io.Closer
	for range capN - 1 { // the turn's own stream holds a slot
		resp, err := http.Get(s.url + "/api/harness/session/" + a + "/events")
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("idle stream: %d", resp.StatusCode)
		}
		go io.Copy(io.Discard, resp.Body)
		bodies = append(bodies, resp.Body)
	}
	time.Sleep(2 * time.Second)
	atCap := s.rss()
	over, err := http.Get(s.url + "/api/harness/session/" + a + "/events")
	if err != nil {
		return err
	}
	over.Body.Close()
	fmt.Printf("idle: %d streams reading a long turn: RSS %s → %s, %.0f KB per stream; at the cap (%d): %s; one more: %d (Retry-After %s)\n",
		capN-1, mb(base), mb(atCap), float64(atCap-base)/float64(capN-1)/1024, capN, mb(atCap), over.StatusCode, over.Header.Get("Retry-After"))
	for _, b := range bodies {
		b.Close()
	}

	// 2. Stuck streams replaying 8 MB.
	b, err := s.create()
	if err != nil {
		return err
	}
	l, err := session.OpenEventLog(session.EventLogPath(s.root, b))
	if err != nil {
		return err
	}
	for i := range 8 {
		if _, err := l.Append(fmt.Appendf(nil, `{"type":"message:user","sessionId":%q,"text":"%d %s"}`, b, i, strings.Repeat("x", 1<<20))); err != nil {
			return err
		}
	}
	l.Close()
	time.Sleep(2 * time.Second)
	base = s.rss()
	var conns []net.Conn
	for range stuckN {
		c, err := stuck(addr, b)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	time.Sleep(3 * time.Second)
	held := s.rss()
	fmt.Printf("stuck: %d clients not reading an 8 MB replay: RSS %s → %s, %.0f KB per stuck stream\n",
		stuckN, mb(base), mb(held), float64(held-base)/float64(stuckN)/1024)
	time.Sleep(10 * time.Second) // the write timeout
	fmt.Printf("stuck: after the write timeout (10 s) dropped them: RSS %s\n", mb(s.rss()))
	for _, c := range conns {
		c.Close()
	}

	// 3. SIGTERM with a turn running and five stuck clients.
	c, err := s.create()
	if err != nil {
		return err
	}
	if err := s.longTurn(c); err != nil {
		return err
	}
	conns = nil
	for range 5 {
		conn, err := stuck(addr, b)
		if err != nil {
			return err
		}
		conns = append(conns, conn)
	}
	time.Sleep(2 * time.Second)
	t0 := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
	fmt.Printf("shutdown: SIGTERM to exit with a turn running and 5 stuck clients: %v (grace 10 s)\n", time.Since(t0).Round(time.Millisecond))
	for _, conn := range conns {
		conn.Close()
	}
	return nil
}
