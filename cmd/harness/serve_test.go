package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
)

func TestServeRefusesNonLoopbackWithoutToken(t *testing.T) {
	t.Setenv("HARNESS_TOKEN", "")
	var out, errOut strings.Builder
	code := serve([]string{"--addr", "0.0.0.0:0", "--root", t.TempDir()}, &out, &errOut, make(chan os.Signal))
	if code != 2 || !strings.Contains(errOut.String(), "without a token") || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	code = serve([]string{"--permission-mode", "bypassPermissions", "--root", t.TempDir()}, &out, &errOut, make(chan os.Signal))
	if code != 2 || !strings.Contains(errOut.String(), "--allow-bypass") {
		t.Errorf("bypass without --allow-bypass: exit %d, stderr %q", code, errOut.String())
	}
}

// startServe runs `harness serve` in-process and returns its base URL, a
// stop channel (a signal) and the channel of its exit status.
func startServe(t *testing.T, args ...string) (string, chan os.Signal, chan int, *lockedBuilder) {
	t.Helper()
	stop := make(chan os.Signal, 2)
	status := make(chan int, 1)
	pr, pw := io.Pipe()
	errOut := &lockedBuilder{}
	go func() {
		status <- serve(args, pw, errOut, stop)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v; stderr:\n%s", err, errOut.String())
	}
	go io.Copy(io.Discard, pr)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "harness: listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("ready line %q", line)
	}
	return url, stop, status, errOut
}

// lockedBuilder is a strings.Builder safe for the server's concurrent
// log writes.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestServeDemoTurnAndShutdown(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one.txt", "two.txt"} {
		os.WriteFile(filepath.Join(root, name), []byte("x"), 0o644)
	}
	url, stop, status, _ := startServe(t, "--demo", "--addr", "127.0.0.1:0", "--root", root, "--claude-bin", claudetest.FindCLI(t))
	_ = url
	post := func(path, body string) *http.Response {
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post("/api/harness/session/create", `{"projectRoot":"`+root+`","mode":"workbench"}`)
	var created struct {
		Session struct{ ID string }
	}
	json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != 201 || created.Session.ID == "" {
		t.Fatalf("create = %d", resp.StatusCode)
	}
	id := created.Session.ID

	// The demo model thinks, streams markdown, runs ls and summarises
	// (two files and .chirality).
	resp = post("/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"hello demo"}`)
	types, text := map[string]int{}, ""
	readEvents(t, resp.Body, func(ev map[string]any) bool {
		types[ev["type"].(string)]++
		if ev["type"] == "chat:delta" {
			text += ev["text"].(string)
		}
		return false
	})
	resp.Body.Close()
	for _, typ := range []string{"session:init", "thinking:delta", "chat:delta", "tool:start", "tool:result", "session:complete", "process:exit"} {
		if types[typ] == 0 {
			t.Errorf("no %s in the demo turn (%v)", typ, types)
		}
	}
	if !strings.Contains(text, "I saw **3 entries**") {
		t.Errorf("demo summary missing: %q", text)
	}

	// A long answer is running when the server is told to stop.
	resp = post("/api/harness/turn", `{"sessionId":"`+id+`","message":"a long answer please"}`)
	defer resp.Body.Close()
	readEvents(t, resp.Body, func(ev map[string]any) bool { return ev["type"] == "chat:delta" })
	children := childPids(t)
	if len(children) == 0 {
		t.Fatal("no child process during the turn")
	}
	start := time.Now()
	stop <- syscall.SIGTERM
	// The stream gets the turn's ending before the server goes.
	var last map[string]any
	readEvents(t, resp.Body, func(ev map[string]any) bool { last = ev; return false })
	if last == nil || last["type"] != "process:exit" {
		t.Errorf("stream ended with %v, want process:exit", last)
	}
	select {
	case code := <-status:
		if code != 0 {
			t.Errorf("serve exited %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if d := time.Since(start); d > 12*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	for _, pid := range children {
		if err := syscall.Kill(-pid, 0); err != syscall.ESRCH {
			t.Errorf("process group %d outlived the server (kill -0: %v)", pid, err)
		}
	}
	if left := childPids(t); len(left) != 0 {
		t.Errorf("children left: %v", left)
	}
}

// readEvents reads SSE data lines until the stream ends or fn returns true.
func readEvents(t *testing.T, r io.Reader, fn func(map[string]any) bool) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("bad event %q", data)
		}
		if fn(ev) {
			return
		}
	}
}

// childPids lists this process's live children (zombies excluded).
func childPids(t *testing.T) []int {
	t.Helper()
	des, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	self := os.Getpid()
	var out []int
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
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
		if len(f) > 2 && f[0] != "Z" && f[1] == strconv.Itoa(self) {
			out = append(out, pid)
		}
	}
	return out
}
