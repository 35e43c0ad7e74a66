package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/session"
)

// TestGracefulStop: the stop function gets the whole grace period when it
// needs it; a second signal ends its context at once; one that does not
// return is abandoned hardStopAfter past the grace period.
func TestGracefulStop(t *testing.T) {
	// Returns by itself: true, its context still live.
	if !gracefulStop(nil, time.Minute, nil, func(ctx context.Context) {
		if ctx.Err() != nil {
			t.Error("context done before the grace period")
		}
	}) {
		t.Error("a stop that returned was reported abandoned")
	}

	// Waits for its context: the grace period ends it.
	start := time.Now()
	if !gracefulStop(nil, 100*time.Millisecond, nil, func(ctx context.Context) { <-ctx.Done() }) {
		t.Error("a stop that returned at the grace period was reported abandoned")
	}
	if time.Since(start) < 100*time.Millisecond {
		t.Error("the grace period was cut short")
	}

	// A second signal ends the context before the grace period.
	sigs := make(chan os.Signal, 1)
	cause := make(chan error, 1)
	go func() { sigs <- syscall.SIGINT }()
	if !gracefulStop(sigs, time.Hour, nil, func(ctx context.Context) {
		<-ctx.Done()
		cause <- ctx.Err()
	}) {
		t.Error("abandoned after a second signal")
	}
	if err := <-cause; err != context.Canceled {
		t.Errorf("context ended with %v, want cancelled by the signal", err)
	}

	// A stop that never returns is abandoned, not waited for.
	block := make(chan struct{})
	defer close(block)
	if gracefulStop(nil, 50*time.Millisecond, nil, func(context.Context) { <-block }) {
		t.Error("a stop that never returned was reported finished")
	}
}

// TestServeExitsWithStuckClients is issue 24's "harness serve never exits
// while an SSE client is not reading": `harness serve --demo` in a
// subprocess, a turn running (a CLI child) and five clients with a 4 KB
// receive buffer replaying an 8 MB log without reading; SIGTERM ends it
// within the grace period + 2 s, and no child outlives it.
func TestServeExitsWithStuckClients(t *testing.T) {
	const grace = 3 * time.Second
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	url, cmd, exited, errOut := startServeProcess(t, append(claudetest.ScratchEnv(t), "XDG_STATE_HOME="+t.TempDir()),
		"--demo", "--addr", "127.0.0.1:0", "--root", root, "--claude-bin", claudetest.FindCLI(t), "--shutdown-grace", grace.String(), "--warm", "0")
	addr := strings.TrimPrefix(url, "http://")

	id := createSession(t, url, `{"projectRoot":"`+root+`","mode":"workbench"}`)
	// An 8 MB log, written before the server opens it.
	l, err := session.OpenEventLog(session.EventLogPath(root, id))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if _, err := l.Append(fmt.Appendf(nil, `{"type":"message:user","sessionId":%q,"text":"%d %s"}`, id, i, strings.Repeat("x", 1<<20))); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()

	// A turn runs: a CLI child to kill or to see end.
	turn, err := http.Post(url+"/api/harness/turn", "application/json", strings.NewReader(`{"sessionId":"`+id+`","message":"a long answer please"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Body.Close()
	if turn.StatusCode != 200 {
		t.Fatalf("turn = %d", turn.StatusCode)
	}
	readEvents(t, turn.Body, func(ev map[string]any) bool { return ev["type"] == "chat:delta" })
	go io.Copy(io.Discard, turn.Body)

	// Five clients that never read past the status line.
	for range 5 {
		d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		}}
		conn, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /api/harness/session/%s/events?after=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", id)
		status := make([]byte, len("HTTP/1.1 200"))
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.ReadFull(conn, status); err != nil || string(status) != "HTTP/1.1 200" {
			t.Fatalf("stream answered %q, %v", status, err)
		}
	}

	children := descendants(cmd.Process.Pid)
	if len(children) == 0 {
		t.Fatal("no child process during the turn")
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(grace + 30*time.Second):
		t.Fatalf("serve still runs %v after SIGTERM\n%s", time.Since(start), errOut.String())
	}
	took := time.Since(start)
	t.Logf("exited %v after SIGTERM (grace %v)", took.Round(time.Millisecond), grace)
	if took > grace+hardStopAfter {
		t.Errorf("serve took %v to exit after SIGTERM, over the grace period + %v", took, hardStopAfter)
	}
	for _, pid := range children {
		if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
			t.Errorf("child %d outlived the server (kill -0: %v)", pid, err)
		}
	}
	if strings.Contains(errOut.String(), "could not write event") {
		t.Errorf("log writes after the log was closed:\n%s", errOut.String())
	}
}

// descendants lists the live (not zombie) processes below pid.
func descendants(pid int) []int {
	parent := map[int]int{}
	des, _ := os.ReadDir("/proc")
	for _, de := range des {
		p, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", de.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 2 && f[0] != "Z" {
			pp, _ := strconv.Atoi(f[1])
			parent[p] = pp
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
