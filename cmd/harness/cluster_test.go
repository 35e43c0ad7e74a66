package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// TestREADMECluster runs the README's three-node layout as written (only
// the ports are free ones of the test's): three `serve --demo --node`
// and `harness nodes`, which lists the three up.
func TestREADMECluster(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme-cluster -->\\s*```sh\\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no marked cluster layout")
	}
	ports := map[string]string{}
	port := func(p string) string {
		if _, ok := ports[p]; !ok {
			ports[p] = strconv.Itoa(freePort(t))
		}
		return ports[p]
	}
	urls := map[string]string{}
	var nodesLine []string
	type started struct {
		stop   chan os.Signal
		status chan int
	}
	var servers []started
	defer func() {
		for _, s := range servers {
			s.stop <- syscall.SIGTERM
		}
		for _, s := range servers {
			<-s.status
		}
	}()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, line := range strings.Split(strings.TrimSpace(string(m[1])), "\n") {
		f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), "&"))
		if len(f) >= 2 && f[0] == "harness" && f[1] == "nodes" {
			nodesLine = f[1:]
			continue
		}
		if len(f) < 2 || f[0] != "harness" || f[1] != "serve" {
			t.Fatalf("unexpected line in the README's cluster layout: %q", line)
		}
		args := slices.Clone(f[2:])
		addr := ""
		for i := 0; i+1 < len(args); i++ {
			switch args[i] {
			case "--addr":
				addr, args[i+1] = args[i+1], "127.0.0.1:0"
			case "--cluster-listen", "--cluster-peer":
				host, p, _ := net.SplitHostPort(args[i+1])
				args[i+1] = net.JoinHostPort(host, port(p))
			}
		}
		// the three start together: JetStream waits for a majority
		wg.Go(func() {
			url, stop, status, _ := startServe(t, args...)
			mu.Lock()
			defer mu.Unlock()
			urls["http://"+addr] = url
			servers = append(servers, started{stop, status})
		})
	}
	wg.Wait()
	if len(servers) != 3 || nodesLine == nil {
		t.Fatalf("the README's layout has %d servers and nodes line %q", len(servers), nodesLine)
	}
	for i := 0; i+1 < len(nodesLine); i++ {
		if nodesLine[i] == "--url" {
			if nodesLine[i+1] = urls[nodesLine[i+1]]; nodesLine[i+1] == "" {
				t.Fatal("harness nodes asks a node the layout does not start")
			}
		}
	}
	var out, stderr bytes.Buffer
	c := &cli{stdout: &out, stderr: &stderr}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out.Reset()
		stderr.Reset()
		if c.run(nodesLine) == 0 && strings.Count(out.String(), " up ") == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("harness nodes never listed three nodes up:\n%s%s", out.String(), stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, n := range []string{"a", "b", "c"} {
		if !regexpLine(out.String(), `^`+n+`\s+up\s`) {
			t.Errorf("node %s is not listed up:\n%s", n, out.String())
		}
	}
}
