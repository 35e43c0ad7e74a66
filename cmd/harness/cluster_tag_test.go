package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A build with -tags nocluster (issue 36: a server that never joins a
// cluster need not carry the NATS server's pages) links neither the
// cluster package nor NATS, and serve --node says so and exits 2 instead
// of starting a server that is not the one asked for. The default build
// (every other test here) keeps the cluster: TestServeCluster.
func TestNoClusterBuild(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "harness")
	if out, err := exec.Command("go", "build", "-tags", "nocluster", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags nocluster: %v\n%s", err, out)
	}
	mods, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, mods)
	}
	for _, m := range []string{"github.com/nats-io/nats-server/v2", "github.com/nats-io/nats.go"} {
		if strings.Contains(string(mods), "\t"+m+"\t") {
			t.Errorf("the nocluster build links %s", m)
		}
	}
	if !strings.Contains(string(mods), "\tgithub.com/spf13/cobra\t") {
		t.Fatalf("go version -m lists no dependencies; the check above proves nothing:\n%s", mods)
	}
	cmd := exec.Command(bin, "serve", "--node", "a", "--addr", "127.0.0.1:0", "--state-dir", t.TempDir())
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("serve --node in a nocluster build: %v, want exit status 2\n%s", err, out)
	}
	if !strings.Contains(string(out), "built without the cluster") || strings.Contains(string(out), "listening on") {
		t.Errorf("serve --node in a nocluster build said:\n%s", out)
	}
	help, _ := exec.Command(bin, "serve", "--help").CombinedOutput()
	if !strings.Contains(string(help), "not in this build") {
		t.Errorf("serve --help of a nocluster build does not say --node is not in it:\n%s", help)
	}
}
