package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig/mcptest"
)

// --mcp-config on every command that runs agents: a file that is missing
// or malformed is a usage error (exit 2) naming it, before anything
// starts; the secret in a malformed file's env is not echoed.
func TestMCPConfigFlagBadFile(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"mcpServers": {"x": {"env": {"TOKEN": "flag-secret-5551212"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"serve", "--addr", "127.0.0.1:0"}, {"agent", "serve"}, {"tui"}, {"rpc"}, {"turn"}} {
		for _, file := range []string{missing, bad} {
			args := append(append([]string{}, cmd...), "--mcp-config", file)
			if cmd[0] == "turn" {
				args = append(args, "hi")
			}
			var out, errOut bytes.Buffer
			code := run(args, &out, &errOut)
			msg := errOut.String()
			if code != 2 || !strings.Contains(msg, file) || !strings.Contains(msg, "--mcp-config") || out.Len() != 0 {
				t.Errorf("%v: exit %d, stdout %q, stderr %q: want exit 2 naming the file", args, code, out.String(), msg)
			}
			if strings.Contains(msg, "flag-secret") {
				t.Errorf("%v: the error shows an env value: %q", args, msg)
			}
		}
	}
}

// `harness turn --mcp-config FILE` hands the file's servers to the real
// CLI (and only them: the project's own server goes with them, merged as
// the core does): session:init lists them connected.
func TestTurnMCPConfigReachesTheCLI(t *testing.T) {
	cli := claudetest.FindCLI(t)
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	for _, kv := range append(claudetest.BaseEnv(t.TempDir()), api.Env()...) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	api.Script(claudetest.TextReply("ok"))
	cwd := t.TempDir()
	proj, _ := mcptest.Config(mcptest.Everything(t, "fromproject", nil)).JSON()
	flag, _ := mcptest.Config(mcptest.Everything(t, "fromflag", nil)).JSON()
	file := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(filepath.Join(cwd, ".mcp.json"), proj, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, flag, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"turn", "--json", "--claude-bin", cli, "--cwd", cwd, "--mcp-config", file, "hi"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	var init *event.SessionInit
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var e event.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if e.Type == event.TypeSessionInit {
			init = e.Init
		}
	}
	got := map[string]string{}
	for _, s := range init.MCPServers {
		got[s.Name] = s.Status
	}
	if len(got) != 2 || got["fromflag"] != "connected" || got["fromproject"] != "connected" {
		t.Fatalf("session:init mcpServers = %+v, want fromflag and fromproject connected", init.MCPServers)
	}
}
