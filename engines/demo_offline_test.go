package engines

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// Issue 20: the demo's OpenCode turn tries no connection beyond
// loopback. TestDemoEveryEngineOffline (cmd/harness) runs every engine
// where leaving fails at once; this one sees the attempt itself: the
// pinned agent runs under strace -f, and every connect, sendto and
// sendmsg with an address, by any process or thread of its tree, is
// read back. Before the demo marked OpenCode's config directory as
// installed, its start resolved registry.npmjs.org (a DNS query) and
// opened a connection to it on port 443 to install @opencode-ai/plugin.
func TestDemoOpenCodeConnectsOnlyToLoopback(t *testing.T) {
	straceBin, err := exec.LookPath("strace")
	if err != nil {
		t.Fatalf("strace is needed (Debian: strace; .ci/run installs it): %v", err)
	}
	d, err := StartDemo(DemoOptions{Project: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	trace := filepath.Join(t.TempDir(), "connect.trace")
	ac, ok := acp.BuiltinConfig(OpenCode)
	if !ok {
		t.Fatal("no built-in opencode")
	}
	ac.Binary = straceBin
	ac.Command = append([]string{"strace", "-f", "-qq", "-e", "signal=none",
		"-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", trace, pinnedAgent(t, "opencode")}, ac.Command[1:]...)
	ac.Env = []string{"PATH=" + os.Getenv("PATH")}
	ac.ExtraEnv = d.Env
	eng, err := acp.NewEngine(ac)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		eng.Shutdown(ctx)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tr, err := eng.StartTurn(ctx, engine.Request{SessionKey: "s1", Message: "hello demo", Cwd: d.Project, PermissionMode: "dontAsk"})
	if err != nil {
		t.Fatal(err)
	}
	completed, text := false, ""
	for tr.Next() {
		switch ev := tr.Event(); ev.Type {
		case event.TypeSessionComplete:
			completed = true
		case event.TypeChatDelta:
			text += ev.Text
		case event.TypeSessionError:
			t.Errorf("session:error %+v", ev.Error)
		}
	}
	tr.Close()
	if !completed || !strings.Contains(text, "entr") {
		t.Errorf("the demo turn did not complete (%v): %q", tr.Err(), text)
	}
	// The agent stays for the session: stop it so the trace is whole.
	sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer scancel()
	if err := eng.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}

	loop, outside := checkTrace(t, trace)
	if loop == 0 {
		t.Fatalf("no loopback connection traced (the demo model is on loopback): the trace missed the agent")
	}
	for _, o := range outside {
		t.Errorf("beyond loopback: %s", o)
	}
}

// addrRE finds the address of an AF_INET or AF_INET6 sockaddr in a
// strace line, and its port.
var addrRE = regexp.MustCompile(`sa_family=AF_INET6?, sin6?_port=htons\((\d+)\).*?(?:inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)")`)

// checkTrace counts the traced connections to loopback and lists every
// other one: a non-loopback address, or a DNS query (port 53) on any
// address, since a lookup is the first step out.
func checkTrace(t *testing.T, path string) (loopback int, outside []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := addrRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ip := net.ParseIP(m[2] + m[3])
		if ip != nil && ip.IsLoopback() && m[1] != "53" {
			loopback++
			continue
		}
		outside = append(outside, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return loopback, outside
}

// TestCheckTrace: the trace reader catches what the agent did before
// the fix (strace lines as they were seen), and lets loopback through.
func TestCheckTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace")
	os.WriteFile(path, []byte(`3316  connect(22, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT (No such file or directory)
3316  connect(21, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.255.255.53")}, 16) = 0
3807  connect(21, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("203.0.113.80")}, 16) = -1 EINPROGRESS (Operation now in progress)
3807  connect(22, {sa_family=AF_INET, sin_port=htons(37715), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 EINPROGRESS (Operation now in progress)
3808  connect(9, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2606:4700::6810:1", &sin6_addr), sin6_scope_id=0}, 28) = -1 ENETUNREACH (Network is unreachable)
3809  connect(9, {sa_family=AF_INET6, sin6_port=htons(8080), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0
3810  sendto(5, "\x12\x34", 2, 0, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("127.0.0.53")}, 16) = 2
3811  sendto(21, "POST /v1/messages HTTP/1.1\r\n"..., 512, MSG_NOSIGNAL, NULL, 0) = 512
`), 0o600)
	loop, outside := checkTrace(t, path)
	if loop != 2 || len(outside) != 4 {
		t.Errorf("loopback %d, outside %d:\n%s", loop, len(outside), strings.Join(outside, "\n"))
	}
}

// pinnedAgent is the pinned agent of `make cli`: node_modules/.bin/NAME
// in the working directory or a parent.
func pinnedAgent(t *testing.T, name string) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		p := filepath.Join(dir, "node_modules", ".bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("%s not found in node_modules/.bin; run `make cli`", name)
		}
		dir = parent
	}
}
