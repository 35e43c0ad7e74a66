package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chirality/harness/sandbox"
	"github.com/chirality/harness/sandbox/sandboxtest"
)

// listen is a loopback listener's port (sandboxtest.Listen).
func listen(t *testing.T) uint16 { return uint16(sandboxtest.Listen(t)) }

// boxed runs argv in the sandbox with net, in wd, and returns its
// combined output and error.
func boxed(t *testing.T, wd string, n *sandbox.Net, argv ...string) (string, error) {
	t.Helper()
	c, err := sandbox.Wrap(sandbox.Spec{Workdir: wd, Net: n}, argv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Note != "" {
		t.Fatalf("note on this kernel: %s", c.Note)
	}
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), c.Env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func dial(port uint16) string {
	return "exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(int(port)) + " && echo connected"
}

// A sandboxed child may connect to the ports its Net names and to no
// other; with no Net its network is open.
func TestSandboxNetConnect(t *testing.T) {
	wd, _ := project(t)
	api, other := listen(t), listen(t)
	n := &sandbox.Net{Connect: []uint16{api}}
	if out, err := boxed(t, wd, n, "bash", "-c", dial(api)); err != nil || !strings.Contains(out, "connected") {
		t.Errorf("connect to the allowed port %d: %v %q", api, err, out)
	}
	out, err := boxed(t, wd, n, "bash", "-c", dial(other))
	if err == nil || !strings.Contains(strings.ToLower(out), "permission denied") {
		t.Errorf("connect to port %d: err %v, output %q; want a permission error", other, err, out)
	}
	// a grandchild is held by the same rules
	out, err = boxed(t, wd, n, "sh", "-c", "bash -c '"+dial(other)+"'")
	if err == nil || !strings.Contains(strings.ToLower(out), "permission denied") {
		t.Errorf("a grandchild's connect: err %v, output %q", err, out)
	}
	if out, err := boxed(t, wd, nil, "bash", "-c", dial(other)); err != nil || !strings.Contains(out, "connected") {
		t.Errorf("no Net: %v %q; want an open network", err, out)
	}
}

// Binding is refused unless Net.Bind names the port (0: an ephemeral
// one).
func TestSandboxNetBind(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := project(t)
	script := `require("net").createServer().on("error", e => { console.log(e.code); process.exit(1) }).listen(0, "127.0.0.1", function () { console.log("listening"); this.close() })`
	out, err := boxed(t, wd, &sandbox.Net{}, node, "-e", script)
	if err == nil || !strings.Contains(out, "EACCES") {
		t.Errorf("bind with no Bind: err %v, output %q; want EACCES", err, out)
	}
	if out, err := boxed(t, wd, &sandbox.Net{Bind: []uint16{0}}, node, "-e", script); err != nil || !strings.Contains(out, "listening") {
		t.Errorf("bind with Bind 0: %v %q", err, out)
	}
}

// On a kernel without network rules the write sandbox still applies and
// the Note says the network is open.
func TestSandboxNetOldKernelNotes(t *testing.T) {
	wd, _ := project(t)
	defer sandbox.LandlockABI(3)()
	c, err := sandbox.Wrap(sandbox.Spec{Workdir: wd, Net: &sandbox.Net{Connect: []uint16{443}}}, []string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !strings.Contains(c.Note, "not limited") {
		t.Errorf("note %q", c.Note)
	}
	if strings.Contains(strings.Join(c.Argv, " "), "--net") {
		t.Errorf("argv %q asks the entry for network rules the kernel lacks", c.Argv)
	}
	if !strings.Contains(strings.Join(c.Argv, " "), "--workdir") {
		t.Errorf("argv %q lacks the write sandbox", c.Argv)
	}
}

func TestNetFor(t *testing.T) {
	n := sandbox.NetFor([]string{"HTTPS_PROXY=http://proxy:3128", "HOME=/h"}, "http://127.0.0.1:8080/v1", "", "https://api.example.com", "not a url", "http://127.0.0.1:8080")
	if got := n.Connect; len(got) != 3 || got[0] != 443 || got[1] != 3128 || got[2] != 8080 {
		t.Errorf("Connect %v, want [443 3128 8080]", got)
	}
	if len(n.Bind) != 0 {
		t.Errorf("Bind %v", n.Bind)
	}
}

// FuzzNetFor: any URL and proxy value gives sorted, distinct ports and no
// bind, and a URL's own port is among them.
func FuzzNetFor(f *testing.F) {
	f.Add("http://127.0.0.1:8080/v1", "http://proxy:3128")
	f.Add("", "")
	f.Add("https://[::1]:99999", "socks5://h")
	f.Add("ws://host", "://")
	f.Fuzz(func(t *testing.T, u, proxy string) {
		n := sandbox.NetFor([]string{"HTTPS_PROXY=" + proxy}, u)
		for i := 1; i < len(n.Connect); i++ {
			if n.Connect[i-1] >= n.Connect[i] {
				t.Fatalf("Connect %v: not sorted and distinct", n.Connect)
			}
		}
		if len(n.Bind) != 0 {
			t.Fatalf("Bind %v", n.Bind)
		}
		if p, ok := sandbox.Port(u); ok && !slices.Contains(n.Connect, p) {
			t.Fatalf("Connect %v lacks %q's port %d", n.Connect, u, p)
		}
	})
}

func TestURLsIn(t *testing.T) {
	jsonc := []byte(`{
  // a comment, as opencode.jsonc allows
  "provider": {"a": {"options": {"baseURL": "http://127.0.0.1:4000/v1"}}, "b": {"options": {"baseURL" : "https://b.example"}}},
  "env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
}`)
	if got := sandbox.URLsIn(jsonc, "baseURL"); !slices.Equal(got, []string{"http://127.0.0.1:4000/v1", "https://b.example"}) {
		t.Errorf("baseURL: %q", got)
	}
	p := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(p, jsonc, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := sandbox.URLsInFiles("ANTHROPIC_BASE_URL", filepath.Join(t.TempDir(), "missing"), p); !slices.Equal(got, []string{"http://127.0.0.1:9"}) {
		t.Errorf("ANTHROPIC_BASE_URL: %q", got)
	}
}
