package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const goodConfig = `server:
  name: lab
  host: 127.0.0.1
  port: 6667
supervisor:
  agent: claude
  model: claude-haiku-4-5
  thinking: low
  window_size: 20
  eval_interval: 5
  escalation_threshold: 3
  webhook: https://hooks.example/irc
agents:
  - nick: alice
    agent: claude
    directory: ./alice
    channels: ["#dev", "#ops"]
    model: claude-sonnet-4-5
    thinking: high
    tags: [backend, go]
  - nick: nat
    agent: native
    directory: /srv/nat
    channels: ["#dev"]
  - nick: oc
    agent: acp
    acp_command: opencode acp
    directory: /srv/oc
    channels: ["#dev"]
`

func TestParseConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agents.yaml")
	os.WriteFile(path, []byte("\xef\xbb\xbf"+goodConfig), 0o600)
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Addr() != "127.0.0.1:6667" || c.Supervisor.Thinking != "low" || len(c.Agents) != 3 {
		t.Fatalf("%+v", c)
	}
	a := c.Agents[0]
	if a.Directory != filepath.Join(dir, "alice") || a.Line != 14 || c.IRCNick(a) != "lab-alice" || a.Engine() != "claude-code" {
		t.Fatalf("agent: %+v line %d", a, a.Line)
	}
	if c.Agents[1].Engine() != "anthropic" || c.Agents[2].Engine() != "acp-oc" {
		t.Fatalf("engines: %s %s", c.Agents[1].Engine(), c.Agents[2].Engine())
	}
	if sel, err := c.Select([]string{"NAT"}); err != nil || len(sel) != 1 || sel[0].Nick != "nat" {
		t.Fatalf("select: %v %v", sel, err)
	}
	if _, err := c.Select([]string{"zed"}); err == nil || !strings.Contains(err.Error(), "zed") {
		t.Fatalf("select unknown: %v", err)
	}
	// defaults
	c, err = ParseConfig([]byte("server: {}\nagents: [{nick: a, agent: codex, directory: /x, channels: ['#c']}]\n"), "")
	if err != nil || c.Server.Host != DefaultHost || c.Server.Port != DefaultPort || c.Supervisor != nil {
		t.Fatalf("defaults: %+v %v", c, err)
	}
}

func TestConfigValidation(t *testing.T) {
	agent := func(extra string) string {
		return "server: {name: lab}\nagents:\n  - nick: alice\n    agent: claude\n    directory: /x\n    channels: ['#dev']\n" + extra
	}
	cases := []struct {
		name, yaml string
		line       int
		want       string
	}{
		{"syntax", "server: [\n", 1, "yaml"},
		{"empty", "", 1, "empty configuration"},
		{"not a mapping", "- a\n", 1, "must be a mapping"},
		{"unknown top key", "server: {}\nagnets: []\n", 2, "agnets: unknown key"},
		{"no server", "agents: [{nick: a, agent: claude, directory: /x, channels: ['#c']}]\n", 1, "server: missing"},
		{"no agents", "server: {}\n", 1, "agents: missing"},
		{"empty agents", "server: {}\nagents: []\n", 2, "at least one agent"},
		{"bad server name", "server: {name: 'my lab'}\nagents: [{nick: a, agent: claude, directory: /x, channels: ['#c']}]\n", 1, "server.name"},
		{"bad port", "server:\n  port: 70000\nagents: [{nick: a, agent: claude, directory: /x, channels: ['#c']}]\n", 2, "server.port"},
		{"port type", "server:\n  port: high\nagents: [{nick: a, agent: claude, directory: /x, channels: ['#c']}]\n", 2, "cannot unmarshal"},
		{"unknown server key", "server:\n  hots: x\nagents: [{nick: a, agent: claude, directory: /x, channels: ['#c']}]\n", 2, "server.hots: unknown key"},
		{"bad kind", agent("  - nick: bob\n    agent: gpt\n    directory: /x\n    channels: ['#dev']\n"), 8, "agents[1].agent: \"gpt\" is not one of"},
		{"dup nick", agent("  - nick: Alice\n    agent: codex\n    directory: /x\n    channels: ['#dev']\n"), 7, "\"lab-Alice\" is already the IRC nick of the agent on line 3"},
		{"two spellings of one IRC nick", agent("  - nick: lab-alice\n    agent: codex\n    directory: /x\n    channels: ['#dev']\n"), 7, "\"lab-alice\" is already the IRC nick of the agent on line 3"},
		{"bad hosts", "server:\n  hosts: ['irc-b.example']\nagents: [{nick: a, agent: claude, directory: /x, channels: ['#c']}]\n", 2, "server.hosts: \"irc-b.example\" is not host:port"},
		{"bad hosts port", "server:\n  hosts: ['b:0']\nagents: [{nick: a, agent: claude, directory: /x, channels: ['#c']}]\n", 2, "server.hosts"},
		{"bad nick", "server: {}\nagents:\n  - nick: 9lives\n    agent: claude\n    directory: /x\n    channels: ['#dev']\n", 3, "agents[0].nick"},
		{"nick too long with prefix", "server: {name: longservername}\nagents:\n  - nick: abcdefghijklmnopq\n    agent: claude\n    directory: /x\n    channels: ['#dev']\n", 3, "too long"},
		{"channel unquoted", "server: {}\nagents:\n  - nick: a\n    agent: claude\n    directory: /x\n    channels: [dev]\n", 6, "channels"},
		{"no channels", "server: {}\nagents:\n  - nick: a\n    agent: claude\n    directory: /x\n", 3, "at least one channel"},
		{"no directory", "server: {}\nagents:\n  - nick: a\n    agent: claude\n    channels: ['#c']\n", 3, "directory: missing"},
		{"acp with an empty command", "server: {}\nagents:\n  - nick: a\n    agent: acp\n    acp_command: []\n    directory: /x\n    channels: ['#c']\n", 5, "acp_command: empty"},
		{"acp command not a list of strings", "server: {}\nagents:\n  - nick: a\n    agent: acp\n    acp_command: {a: b}\n    directory: /x\n    channels: ['#c']\n", 5, "a command is a list of strings"},
		{"command without acp", agent("    acp_command: x\n"), 7, "only for agent: acp"},
		{"thinking", agent("    thinking: extreme\n"), 7, "not one of low, medium, high"},
		{"isolation", agent("    isolation: container\n"), 7, `agents[0].isolation: "container": want worktree`},
		{"base without isolation", agent("    base: main\n"), 7, "agents[0].base: only with isolation: worktree"},
		{"agent not a mapping", "server: {}\nagents:\n  - alice\n", 3, "must be a mapping"},
		{"supervisor thinking", "supervisor:\n  thinking: max\n" + agent(""), 2, "supervisor.thinking"},
		{"supervisor kind", "supervisor:\n  agent: gpt\n" + agent(""), 2, "supervisor.agent"},
		{"supervisor command without acp", "supervisor:\n  acp_command: [x]\n" + agent(""), 2, "supervisor.acp_command: only for agent: acp"},
		{"supervisor window", "supervisor:\n  window_size: -1\n" + agent(""), 2, "supervisor.window_size"},
		{"supervisor webhook", "supervisor:\n  webhook: ftp://x\n" + agent(""), 2, "supervisor.webhook"},
		{"supervisor unknown", "supervisor:\n  interval: 3\n" + agent(""), 2, "supervisor.interval: unknown key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(c.yaml), "agents.yaml")
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("not ErrConfig: %v", err)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("not a ConfigError: %v", err)
			}
			if ce.Line != c.line || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v (line %d), want line %d and %q", err, ce.Line, c.line, c.want)
			}
			if !strings.HasPrefix(err.Error(), "agents.yaml:") {
				t.Fatalf("error does not name the file: %v", err)
			}
		})
	}
	// every problem is reported at once
	_, err := ParseConfig([]byte("server: {port: -1}\nagents:\n  - {nick: '1', agent: x, directory: /x, channels: ['#c']}\n"), "f.yaml")
	if err == nil || strings.Count(err.Error(), "f.yaml:") != 3 {
		t.Fatalf("want three errors: %v", err)
	}
}

// TestSeedConfig: testdata/seed-agents.yaml is spec 003's agents.yaml
// example, verbatim: it loads (acp_command is a list there, thinking is
// given for Claude only), and every nick is used as written (each IRC
// nick is the nick, not spark-spark-culture).
func TestSeedConfig(t *testing.T) {
	c, err := LoadConfig("testdata/seed-agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range c.Agents {
		got = append(got, a.Nick+"="+c.IRCNick(a)+"="+a.Engine())
	}
	if want := "spark-culture=spark-culture=claude-code spark-codex=spark-codex=codex spark-cline=spark-cline=acp-spark-cline"; strings.Join(got, " ") != want {
		t.Fatalf("agents %s, want %s", strings.Join(got, " "), want)
	}
	if c.Server.Addr() != "localhost:6667" || c.Supervisor == nil || c.Supervisor.Agent != "claude" || c.Supervisor.Model != "claude-sonnet-4-6" ||
		c.Supervisor.Thinking != "medium" || c.Supervisor.WindowSize != 20 || c.Supervisor.EvalInterval != 5 || c.Supervisor.EscalationThreshold != 3 {
		t.Fatalf("server %s supervisor %+v", c.Server.Addr(), c.Supervisor)
	}
	cline := c.Agents[2]
	if strings.Join(cline.ACPCommand, " ") != "cline --acp" || len(cline.ACPCommand) != 2 || cline.Model != "anthropic/claude-sonnet-4-6" ||
		cline.Directory != "/home/user/project-c" || strings.Join(cline.Channels, ",") != "#general" {
		t.Fatalf("spark-cline: %+v", cline)
	}
	// thinking: medium for Claude as written; the others ignore it (no effort)
	if c.Agents[0].Thinking != "medium" || c.Agents[0].Effort() != "medium" || c.Agents[1].Effort() != "" || cline.Effort() != "" {
		t.Fatalf("thinking: %+v", c.Agents)
	}
	if sel, err := c.Select([]string{"SPARK-CODEX"}); err != nil || len(sel) != 1 || sel[0].Nick != "spark-codex" {
		t.Fatalf("select: %v %v", sel, err)
	}
	// the short form is the convenience: it gets the prefix; either
	// spelling selects the agent
	c, err = ParseConfig([]byte("server: {name: spark, hosts: ['10.0.0.2:6667', '[::1]:6697']}\nagents: [{nick: culture, agent: claude, directory: /x, channels: ['#c']},"+
		" {nick: Spark-Codex, agent: codex, directory: /x, channels: ['#c']}, {nick: sparkle, agent: codex, directory: /x, channels: ['#c']}]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if a, b, s := c.IRCNick(c.Agents[0]), c.IRCNick(c.Agents[1]), c.IRCNick(c.Agents[2]); a != "spark-culture" || b != "Spark-Codex" || s != "spark-sparkle" {
		t.Fatalf("IRC nicks %s %s %s", a, b, s)
	}
	if sel, err := c.Select([]string{"spark-culture"}); err != nil || sel[0].Nick != "culture" {
		t.Fatalf("select by IRC nick: %v %v", sel, err)
	}
	if got := strings.Join(c.Server.Addrs(), " "); got != "127.0.0.1:6667 10.0.0.2:6667 [::1]:6697" {
		t.Fatalf("addrs %s", got)
	}
}

// TestConfigDefaults: spec 003's defaults and pass-through. agent left
// out is claude, thinking medium, acp_command ["opencode", "acp"];
// supervisor.agent acp is accepted; a backend-specific field is passed
// through, not refused; an old file's acp_command string still reads.
func TestConfigDefaults(t *testing.T) {
	c, err := ParseConfig([]byte(`server: {name: lab}
supervisor:
  agent: acp
agents:
  - nick: alice
    directory: /x
    channels: ["#dev"]
  - nick: oc
    agent: acp
    directory: /x
    channels: ["#dev"]
    sandbox: read-only
    mcp: {servers: [a, b]}
  - nick: old
    agent: acp
    acp_command: "cline  --acp"
    directory: /x
    channels: ["#dev"]
  - nick: cx
    agent: codex
    thinking: high
    directory: /x
    channels: ["#dev"]
`), "agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	alice, oc, old, cx := c.Agents[0], c.Agents[1], c.Agents[2], c.Agents[3]
	if alice.Agent != "claude" || alice.Engine() != "claude-code" || alice.Thinking != "medium" || alice.Effort() != "medium" {
		t.Fatalf("alice: %+v", alice)
	}
	if strings.Join(oc.ACPCommand, "|") != "opencode|acp" || oc.Thinking != "medium" || oc.Effort() != "" {
		t.Fatalf("oc: %+v", oc)
	}
	if oc.Extra["sandbox"] != "read-only" || len(oc.Extra) != 2 {
		t.Fatalf("oc's backend-specific fields: %#v", oc.Extra)
	}
	if m, ok := oc.Extra["mcp"].(map[string]any); !ok || len(m["servers"].([]any)) != 2 {
		t.Fatalf("oc's mcp: %#v", oc.Extra["mcp"])
	}
	if strings.Join(old.ACPCommand, "|") != "cline|--acp" || alice.Extra != nil {
		t.Fatalf("old: %+v", old)
	}
	if cx.Effort() != "high" { // written for codex: the opt-in extension
		t.Fatalf("codex effort %q", cx.Effort())
	}
	if c.Supervisor.Agent != "acp" || strings.Join(c.Supervisor.ACPCommand, "|") != "opencode|acp" {
		t.Fatalf("supervisor: %+v", c.Supervisor)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(goodConfig))
	f.Add([]byte("server: {}\nagents: [{nick: a}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b, "")
		if err == nil && (len(c.Agents) == 0 || c.Server.Port == 0) {
			t.Fatalf("accepted an incomplete config: %+v", c)
		}
	})
}

// TestACPSupervisorBuilds: supervisor.agent acp is not only accepted, a
// supervisor is built on its ACP agent (acp_command, default opencode
// acp), beside an agent of another kind.
func TestACPSupervisorBuilds(t *testing.T) {
	dir := t.TempDir()
	c, err := ParseConfig([]byte("server: {}\nsupervisor: {agent: acp}\nagents: [{nick: alice, directory: "+dir+", channels: ['#dev']}]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	a, sup, err := CoreAgent(c, c.Agents[0], CoreOptions{StateDir: t.TempDir(), Env: []string{"PATH=/usr/bin"}}, Hooks{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.(interface{ Close() }).Close()
	if sup == nil {
		t.Fatal("no supervisor")
	}
	engines := a.(coreAgent).hs[1].EngineNames()
	if !slices.Contains(engines, "acp-supervisor") {
		t.Fatalf("the supervisor's Harness has engines %v", engines)
	}
}

// isolation, base and sandbox (a boolean) per agent: parsed as written,
// not passed on as backend-specific extras (a sandbox that is not a
// boolean still is: TestConfigDefaults).
func TestConfigIsolation(t *testing.T) {
	c, err := ParseConfig([]byte("server: {name: lab}\nagents:\n  - nick: alice\n    agent: claude\n    directory: /x\n    channels: ['#dev']\n"+
		"    isolation: worktree\n    base: origin/main\n    sandbox: true\n  - nick: bob\n    agent: codex\n    directory: /x\n    channels: ['#dev']\n"), "agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Agents[0], c.Agents[1]
	if a.Isolation != "worktree" || a.Base != "origin/main" || !a.Sandbox || len(a.Extra) != 0 {
		t.Errorf("alice: isolation %q base %q sandbox %v extra %v", a.Isolation, a.Base, a.Sandbox, a.Extra)
	}
	if b.Isolation != "" || b.Base != "" || b.Sandbox {
		t.Errorf("bob: isolation %q base %q sandbox %v", b.Isolation, b.Base, b.Sandbox)
	}
}
