package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
)

// harnessBinary builds the harness command into the test's directory: a
// real, non-race binary, so its memory is the product's.
func harnessBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "harness")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// vmHWM is the peak resident set of process pid in bytes (0 when it is
// gone).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// rpcProc is `harness rpc` as a process, watched: a peak RSS over limit
// kills it at once (a regression must fail the test, not the machine).
type rpcProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	peak  atomic.Int64
	stop  chan struct{}
	watch sync.WaitGroup
}

func startRPC(t *testing.T, cwd string, limit int64, args ...string) *rpcProc {
	return startRPCEnv(t, cwd, limit, nil, args...)
}

func startRPCEnv(t *testing.T, cwd string, limit int64, env []string, args ...string) *rpcProc {
	t.Helper()
	return startBinary(t, harnessBinary(t), cwd, limit, env, args...)
}

func startBinary(t *testing.T, bin, cwd string, limit int64, env []string, args ...string) *rpcProc {
	t.Helper()
	var err error
	p := &rpcProc{cmd: exec.Command(bin, append([]string{"rpc", "--cwd", cwd}, args...)...), stop: make(chan struct{})}
	p.cmd.Env = append(append(claudetest.ScratchEnv(t), "XDG_STATE_HOME="+t.TempDir()), env...)
	p.cmd.Stderr = io.Discard
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.out = bufio.NewReaderSize(stdout, 1<<20)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.watch.Add(1)
	go func() {
		defer p.watch.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			if hwm := vmHWM(p.cmd.Process.Pid); hwm > p.peak.Load() {
				p.peak.Store(hwm)
				if hwm > limit {
					_ = p.cmd.Process.Kill()
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		p.end()
		_ = p.cmd.Wait()
	})
	return p
}

// end stops the watcher; safe to call twice.
func (p *rpcProc) end() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.watch.Wait()
}

func (p *rpcProc) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		t.Fatalf("writing to harness rpc (killed over the memory bound? peak %d MB): %v", p.peak.Load()>>20, err)
	}
}

// line reads the next line the server writes.
func (p *rpcProc) line(t *testing.T) []byte {
	t.Helper()
	b, err := p.out.ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading harness rpc (killed over the memory bound? peak %d MB): %v", p.peak.Load()>>20, err)
	}
	return b
}

// Issue 24.1: a thread with a 1 MB title and a batch of 80 thread.list
// took `harness rpc` to 430 MB; a 10 MB title and a batch of 1,000 to
// 23 GB. Here: twenty stored threads with 1 MB titles (written by an
// older server), a 1 MB title asked for, a batch of MaxBatch thread.list
// and batches of 1,000 — the process's peak RSS stays under 300 MB.
func TestRPCMemoryBounded(t *testing.T) {
	const limit = 300 << 20
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	big := strings.Repeat("t", 1<<20)
	for i := range 20 {
		id := fmt.Sprintf("0b5c0f5e-7a52-4d0e-9f0a-3a1f6d2f7c%02d", i)
		dir := filepath.Join(cwd, ".harness", "threads", id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]any{"threadId": id, "title": big, "directory": cwd, "time": map[string]int64{"created": 1, "updated": int64(i)}})
		if err := os.WriteFile(filepath.Join(dir, "meta.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := startRPC(t, cwd, limit)

	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"thread.create","params":{"title":"`+big+`"}}`)
	var resp struct {
		Error *struct{ Code int } `json:"error"`
	}
	if err := json.Unmarshal(p.line(t), &resp); err != nil || resp.Error == nil || resp.Error.Code != -32602 {
		t.Fatalf("a 1 MB title: %+v (%v), want -32602", resp.Error, err)
	}

	batch := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"thread.list"}`, i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	for round := range 3 {
		p.send(t, batch(100))
		b := p.line(t)
		var answers []struct {
			ID     int `json:"id"`
			Result struct {
				Threads []struct{ Title string }
			} `json:"result"`
		}
		if err := json.Unmarshal(b, &answers); err != nil || len(answers) != 100 {
			t.Fatalf("round %d: %d answers (%v)", round, len(answers), err)
		}
		for _, a := range answers {
			if len(a.Result.Threads) != 20 || len(a.Result.Threads[0].Title) > 4<<10 {
				t.Fatalf("round %d: answer %d has %d threads", round, a.ID, len(a.Result.Threads))
			}
		}
		p.send(t, batch(1000))
		if b := p.line(t); !bytes.Contains(b, []byte(`"code":-32600`)) || bytes.HasPrefix(b, []byte("[")) {
			t.Fatalf("a batch of 1,000: %.200s", b)
		}
	}
	peak := vmHWM(p.cmd.Process.Pid)
	if peak == 0 {
		t.Fatalf("harness rpc is gone (killed at %d MB)", p.peak.Load()>>20)
	}
	p.end()
	if peak > limit {
		t.Fatalf("peak RSS %d MB, over %d MB", peak>>20, limit>>20)
	}
	t.Logf("peak RSS %d MB", peak>>20)
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("harness rpc at the end of input: %v", err)
	}
}
