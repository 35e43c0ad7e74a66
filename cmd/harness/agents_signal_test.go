package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/chirality/harness/ipc"
	"github.com/chirality/harness/irc"
	"github.com/chirality/harness/irc/irctest"
)

// `harness agents start` in a process of its own, stopped with SIGTERM
// while its agent (the fake ACP agent, a child process) is mid-turn: the
// command exits 0 and leaves no agent process, socket or PID file —
// whether the agent ends its turn when interrupted ("slow") or ignores
// the interrupt and must be killed ("hang"). Processes are found by a
// marker in their environment, which the agent inherits; the test first
// sees the agent's process, so the last check could fail.
func TestAgentsStartSIGTERM(t *testing.T) {
	for _, behaviour := range []string{"slow", "hang"} {
		t.Run(behaviour, func(t *testing.T) { agentsStartSIGTERM(t, behaviour) })
	}
}

func agentsStartSIGTERM(t *testing.T, behaviour string) {
	f, err := irctest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fake := buildFakeACP(t)
	runDir, err := os.MkdirTemp("", "hs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runDir) })
	dir := t.TempDir()
	host, port, _ := strings.Cut(f.Addr(), ":")
	cfg := filepath.Join(dir, "agents.yaml")
	if err := os.WriteFile(cfg, []byte("server: {name: t, host: "+host+", port: "+port+"}\nagents:\n"+
		"  - {nick: oc, agent: acp, acp_command: "+fake+", directory: ./oc, channels: ['#a']}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	marker := "HARNESS_SIGTERM_TEST=" + uuid.NewString()
	var out, errOut syncBuffer
	cmd := exec.Command(os.Args[0], "agents", "start", "--config", cfg)
	cmd.Env = append(os.Environ(), "HARNESS_TEST_MAIN=1", marker, "XDG_RUNTIME_DIR="+runDir,
		"HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { // a failed test must not leave the command running
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	})
	waitFor(t, "the agent up", func() bool { return strings.Contains(out.String(), "oc: up as t-oc") }, &errOut)

	t.Setenv("XDG_RUNTIME_DIR", runDir)
	bob, err := irc.New(irc.Config{Addr: f.Addr(), Nick: "bob", Channels: []string{"#a"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := bob.Start(); err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bob.WaitJoined(ctx, "#a"); err != nil {
		t.Fatal(err)
	}
	if err := bob.Send("#a", "@t-oc "+behaviour); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agent working", func() bool {
		c, err := ipc.Dial(ctx, "oc")
		if err != nil {
			return false
		}
		defer c.Close()
		resp, _, err := c.Call(ctx, ipc.Request{Type: ipc.CmdStatus})
		return err == nil && strings.Contains(string(resp.Data), `"activity":"working"`)
	}, &errOut)
	if ps := marked(t, marker, cmd.Process.Pid); len(ps) == 0 {
		t.Fatal("no agent process found by its environment: the check below would prove nothing")
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("agents start after SIGTERM: %v\n%s", err, errOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("agents start did not exit after SIGTERM:\n%s", errOut.String())
	}
	if ps := marked(t, marker, -1); len(ps) != 0 {
		t.Fatalf("processes left after agents start exited: %v", ps)
	}
	if m, _ := filepath.Glob(filepath.Join(runDir, "*")); len(m) != 0 {
		t.Fatalf("left in the run dir: %v", m)
	}
}

// marked lists the processes other than skip whose environment holds
// marker (Linux /proc; other systems cannot run this check).
func marked(t *testing.T, marker string, skip int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc to find processes by their environment: %v", err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == skip || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone, or not ours
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == marker {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func waitFor(t *testing.T, what string, cond func() bool, log interface{ String() string }) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s:\n%s", what, log.String())
		}
		time.Sleep(20 * time.Millisecond) // poll with a deadline
	}
}
