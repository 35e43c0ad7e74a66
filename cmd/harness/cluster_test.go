package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// natsRunning reports whether any goroutine runs the NATS server's code.
func natsRunning() bool {
	buf := make([]byte, 64<<20)
	n := runtime.Stack(buf, true)
	return bytes.Contains(buf[:n], []byte("nats-io/nats-server"))
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Without --node, serve starts no NATS server; with --node (here from
// --cluster-config) it does, and `harness nodes` lists the node as up
// with the session it owns.
func TestServeCluster(t *testing.T) {
	_, stop, status, errOut := startServe(t, "--demo", "--addr", "127.0.0.1:0", "--state-dir", t.TempDir())
	if natsRunning() {
		t.Error("serve without --node runs a NATS server")
	}
	stop <- syscall.SIGTERM
	if s := <-status; s != 0 {
		t.Fatalf("serve: %d\n%s", s, errOut)
	}

	cfg := filepath.Join(t.TempDir(), "cluster.yaml")
	os.WriteFile(cfg, []byte("node: solo\ncluster: one\nlisten: 127.0.0.1:"+strconv.Itoa(freePort(t))+"\n"), 0o600)
	url, stop, status, errOut := startServe(t, "--demo", "--addr", "127.0.0.1:0", "--state-dir", t.TempDir(), "--cluster-config", cfg)
	defer func() {
		stop <- syscall.SIGTERM
		<-status
	}()
	if !natsRunning() {
		t.Error("serve --node runs no NATS server")
	}
	var out, stderr bytes.Buffer
	c := &cli{stdout: &out, stderr: &stderr}
	deadline := time.Now().Add(20 * time.Second)
	for {
		out.Reset()
		stderr.Reset()
		if c.run([]string{"nodes", "--url", url}) == 0 && strings.Contains(out.String(), "solo") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("harness nodes: %s %s\nserve: %s", out.String(), stderr.String(), errOut)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "NODE") || !regexpLine(out.String(), `^solo\s+up\s+0\s+\S`) {
		t.Errorf("harness nodes printed:\n%s", out.String())
	}
}

func regexpLine(s, pattern string) bool {
	for _, l := range strings.Split(s, "\n") {
		if ok, _ := regexp.MatchString(pattern, l); ok {
			return true
		}
	}
	return false
}
