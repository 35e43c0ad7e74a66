package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
)

// Issue 24.6: the demo model keeps a bounded window of the requests it
// answers. Eight demo turns with 1 MB messages took `harness serve
// --demo` from 21 to 713 MB (every request, and each one carries the
// whole conversation, was kept); now the eight turns add under 70 MB to
// the server's RSS at start (its peak was 93 MB from 35 at start; the
// start itself is measured in BENCHMARKS.md, where the binary's own
// pages — it grew with the cluster's NATS server — are accounted). The
// server is the real binary, built without the race detector, so its
// memory is what a user would see.
func TestServeDemoMemoryStaysBounded(t *testing.T) {
	cli := claudetest.FindCLI(t)
	bin := filepath.Join(t.TempDir(), "harness")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve", "--demo", "--addr", "127.0.0.1:0", "--warm", "0", "--claude-bin", cli)
	cmd.Env = append(claudetest.ScratchEnv(t), "XDG_STATE_HOME="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	rootc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "harness serve --demo: scratch project root "); ok {
				rootc <- strings.TrimSuffix(rest, " (removed on exit)")
			}
		}
	}()
	urlc := make(chan string, 1)
	go func() {
		defer close(exited)
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		url, _ := strings.CutPrefix(strings.TrimSpace(line), "harness: listening on ")
		urlc <- url
		_, _ = io.Copy(io.Discard, r)
		_ = cmd.Wait()
	}()
	var url, root string
	for url == "" || root == "" {
		select {
		case url = <-urlc:
			if url == "" {
				t.Fatal("the server printed no address")
			}
		case root = <-rootc:
		case <-time.After(60 * time.Second):
			t.Fatal("the demo server did not start")
		}
	}
	post := func(path string, body any) *http.Response {
		b, _ := json.Marshal(body)
		resp, err := http.Post(url+path, "application/json", strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	_, start := procMemMB(t, cmd.Process.Pid)
	resp := post("/api/harness/session/create", map[string]string{"projectRoot": root, "mode": "workbench"})
	var created struct{ Session struct{ ID string } }
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if created.Session.ID == "" {
		t.Fatalf("create = %d", resp.StatusCode)
	}
	for i := range 8 {
		msg := strconv.Itoa(i) + " " + strings.Repeat("a 1 MB message ", 1000_000/15)
		resp := post("/api/harness/turn", map[string]string{"sessionId": created.Session.ID, "message": msg})
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("turn %d = %d %s", i, resp.StatusCode, b)
		}
		last := ""
		readEvents(t, resp.Body, func(ev map[string]any) bool {
			last, _ = ev["type"].(string)
			if last == "session:error" {
				t.Errorf("turn %d: %v", i, ev)
			}
			return false
		})
		resp.Body.Close()
		if last != "process:exit" {
			t.Fatalf("turn %d ended with %q", i, last)
		}
	}
	peak, now := procMemMB(t, cmd.Process.Pid)
	t.Logf("serve --demo after 8 turns of 1 MB: RSS at start %.0f MB, peak %.0f MB, now %.0f MB", start, peak, now)
	if peak-start > 70 {
		t.Fatalf("serve --demo peaked at %.0f MB RSS over 8 turns of 1 MB, %.0f MB over its %.0f MB at start, want under 70 MB more", peak, peak-start, start)
	}
}

// procMemMB reads a process's peak and current resident set (MB).
func procMemMB(t *testing.T, pid int) (peak, now float64) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmHWM:":
			peak = kb / 1024
		case "VmRSS:":
			now = kb / 1024
		}
	}
	return peak, now
}
