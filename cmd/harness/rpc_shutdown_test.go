package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
)

// procStat returns the state and the process group of pid ("" when it
// does not exist).
func procStat(pid int) (state string, pgid int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0
	}
	// pid (comm) state ppid pgrp …; comm may hold spaces.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	pgid, _ = strconv.Atoi(f[2])
	return f[0], pgid
}

// descendants returns the process groups of pid's children.
func childGroups(pid int) map[int]bool {
	out := map[int]bool{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
			_, pg := procStat(n)
			out[pg] = true
		}
	}
	return out
}

// groupAlive reports whether a live process of one of the groups remains.
func groupAlive(groups map[int]bool) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, pg := procStat(n); groups[pg] && st != "Z" && st != "" {
			return n
		}
	}
	return 0
}

// `harness rpc` ends within its grace period (+2 s) on SIGTERM, on the end
// of its input, and at once on a second signal; a running turn gets its
// end written (the first two), and no process of the agent is left.
func TestRPCShutdown(t *testing.T) {
	bin := claudetest.FindCLI(t)
	harnessBin := harnessBinary(t)
	for _, tc := range []struct {
		name  string
		grace time.Duration
		stop  func(p *rpcProc)
		ended bool // turn.completed (cancelled) is written
		code  int
	}{
		{"sigterm", 5 * time.Second, func(p *rpcProc) { _ = p.cmd.Process.Signal(syscall.SIGTERM) }, true, 0},
		{"end of input", 5 * time.Second, func(p *rpcProc) { p.in.Close() }, true, 0},
		{"second signal", 60 * time.Second, func(p *rpcProc) {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			_ = p.cmd.Process.Signal(syscall.SIGINT)
		}, false, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api, err := claudetest.NewFakeAPI()
			if err != nil {
				t.Fatal(err)
			}
			defer api.Close()
			api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("slow words ", 2000))}, ChunkSize: 4, ChunkDelay: 20 * time.Millisecond})
			cwd, _ := filepath.EvalSymlinks(t.TempDir())
			p := startBinary(t, harnessBin, cwd, 1<<30, api.Env(), "--claude-bin", bin, "--grace", tc.grace.String())
			p.send(t, `{"jsonrpc":"2.0","id":1,"method":"thread.create","params":{}}`)
			var created struct {
				Result struct{ Thread struct{ ThreadID string } } `json:"result"`
			}
			if err := json.Unmarshal(p.line(t), &created); err != nil || created.Result.Thread.ThreadID == "" {
				t.Fatalf("thread.create: %v", err)
			}
			p.send(t, `{"jsonrpc":"2.0","id":2,"method":"turn.start","params":{"threadId":"`+created.Result.Thread.ThreadID+`","input":[{"type":"text","text":"talk"}]}}`)
			for !strings.Contains(string(p.line(t)), `"item.delta"`) {
			}
			groups := childGroups(p.cmd.Process.Pid)
			if len(groups) == 0 {
				t.Fatal("no agent process while the turn streams")
			}
			stopped := time.Now()
			tc.stop(p)
			ended := false
			for {
				b, err := p.out.ReadBytes('\n')
				if err != nil {
					break
				}
				if strings.Contains(string(b), `"turn.completed"`) && strings.Contains(string(b), `"cancelled"`) {
					ended = true
				}
			}
			done := make(chan error, 1)
			go func() { done <- p.cmd.Wait() }()
			limit := tc.grace + 2*time.Second
			if !tc.ended {
				limit = 5 * time.Second // at once: the kill and its wait
			}
			select {
			case <-done:
			case <-time.After(limit - time.Since(stopped)):
				t.Fatalf("still running %s after the stop", limit)
			}
			p.end()
			if took := time.Since(stopped); took > limit {
				t.Fatalf("exited after %s, over %s", took, limit)
			}
			if tc.ended && !ended {
				t.Error("the turn's end (turn.completed, cancelled) was not written")
			}
			if code := p.cmd.ProcessState.ExitCode(); tc.code >= 0 && code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			deadline := time.Now().Add(2 * time.Second)
			for groupAlive(groups) != 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if pid := groupAlive(groups); pid != 0 {
				t.Errorf("process %d of the agent outlived harness rpc", pid)
			}
		})
	}
}
