package trust

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/persona"
)

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Rules are kept per project root and session id; another root or
// session sees none of them, and a second Store on the same state
// directory (a restart) reads them back.
func TestRulesKeyedByRootAndSession(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir)
	if err := s.AddRule("/p/a", "s1", "Bash(touch ok)"); err != nil {
		t.Fatal(err)
	}
	s.AddRule("/p/a", "s1", "Bash(touch ok)") // twice: kept once
	s.AddRule("/p/a", "s2", "Edit")
	if s.Path("/p/a") == s.Path("/p/b") || s.Path("/p/a") != s.Path("/p/a/") {
		t.Fatalf("paths %s %s", s.Path("/p/a"), s.Path("/p/b"))
	}
	s2, _ := Open(dir)
	for _, c := range []struct {
		root, id string
		want     []string
	}{{"/p/a", "s1", []string{"Bash(touch ok)"}}, {"/p/a", "s2", []string{"Edit"}}, {"/p/b", "s1", nil}, {"/p/a", "s3", nil}} {
		got, err := s2.Rules(c.root, c.id)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s %s: %q %v, want %q", c.root, c.id, got, err, c.want)
		}
	}
	if err := s2.CopyRules("/p/a", "s1", "s9"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s2.Rules("/p/a", "s9"); !slices.Equal(got, []string{"Bash(touch ok)"}) {
		t.Errorf("copied %q", got)
	}
	s2.DropSession("/p/a", "s1")
	if got, _ := s2.Rules("/p/a", "s1"); got != nil {
		t.Errorf("dropped session still has %q", got)
	}
	fi, err := os.Stat(s.Path("/p/a"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record file %v %v, want 0600", fi, err)
	}
}

func grants(tools, disallowed, auto []string, mode, eng string, mcp *MCPGrant) Grants {
	return Grants{Tools: tools, DisallowedTools: disallowed, AutoApproveTools: auto, PermissionMode: mode, Engine: eng, MCP: mcp}
}

// Each grant widens on its own; narrowing changes nothing that needs
// trust.
func TestWidenedPerField(t *testing.T) {
	base := grants([]string{"Read", "Edit"}, []string{"WebFetch"}, []string{"Read"}, "default", "", &MCPGrant{Names: []string{"a"}})
	cases := []struct {
		name  string
		now   Grants
		field string // "" = not widened
	}{
		{"same", base, ""},
		{"tool added", grants([]string{"Read", "Edit", "Bash"}, base.DisallowedTools, base.AutoApproveTools, "default", "", base.MCP), "tools"},
		{"tools unset (all)", grants(nil, base.DisallowedTools, base.AutoApproveTools, "default", "", base.MCP), "tools"},
		{"tool removed", grants([]string{"Read"}, base.DisallowedTools, base.AutoApproveTools, "default", "", base.MCP), ""},
		{"disallowed dropped", grants(base.Tools, nil, base.AutoApproveTools, "default", "", base.MCP), "disallowed_tools"},
		{"disallowed added", grants(base.Tools, []string{"WebFetch", "Bash"}, base.AutoApproveTools, "default", "", base.MCP), ""},
		{"auto-approve Bash", grants(base.Tools, base.DisallowedTools, []string{"Read", "Bash"}, "default", "", base.MCP), "auto_approve_tools"},
		{"auto-approve fewer", grants(base.Tools, base.DisallowedTools, nil, "default", "", base.MCP), ""},
		{"acceptEdits", grants(base.Tools, base.DisallowedTools, base.AutoApproveTools, "acceptEdits", "", base.MCP), "permission_mode"},
		{"bypassPermissions", grants(base.Tools, base.DisallowedTools, base.AutoApproveTools, "bypassPermissions", "", base.MCP), "permission_mode"},
		{"plan", grants(base.Tools, base.DisallowedTools, base.AutoApproveTools, "plan", "", base.MCP), ""},
		{"dontAsk", grants(base.Tools, base.DisallowedTools, base.AutoApproveTools, "dontAsk", "", base.MCP), ""},
		{"engine", grants(base.Tools, base.DisallowedTools, base.AutoApproveTools, "default", "codex", base.MCP), "engine"},
		{"mcp unset (all)", grants(base.Tools, base.DisallowedTools, base.AutoApproveTools, "default", "", nil), "mcp_servers"},
		{"mcp name added", grants(base.Tools, base.DisallowedTools, base.AutoApproveTools, "default", "", &MCPGrant{Names: []string{"a", "b"}}), "mcp_servers"},
		{"mcp inline", grants(base.Tools, base.DisallowedTools, base.AutoApproveTools, "default", "", &MCPGrant{Names: []string{"a"}, Inline: map[string]string{"x": "h"}}), "mcp_servers"},
		{"mcp none", grants(base.Tools, base.DisallowedTools, base.AutoApproveTools, "default", "", &MCPGrant{Names: []string{}}), ""},
	}
	for _, c := range cases {
		ch := Widened(base, c.now)
		var fields []string
		for _, x := range ch {
			fields = append(fields, x.Field)
		}
		want := []string{}
		if c.field != "" {
			want = []string{c.field}
		}
		if !slices.Equal(append([]string{}, fields...), want) {
			t.Errorf("%s: widened %q, want %q", c.name, fields, want)
		}
	}
	// A budget only limits: lower (or newly set) needs nobody, higher or
	// removed widens.
	budget := func(cost float64, tokens int64) Grants {
		g := base.clone()
		g.MaxCostUSD, g.MaxTokens = cost, tokens
		return g
	}
	for _, c := range []struct {
		name             string
		trusted, now     Grants
		field, was, then string
	}{
		{"cost lowered", budget(2.5, 0), budget(1, 0), "", "", ""},
		{"cost set where none was", base, budget(1, 0), "", "", ""},
		{"cost same", budget(2.5, 0), budget(2.5, 0), "", "", ""},
		{"cost raised", budget(2.5, 0), budget(10, 0), "max_cost_usd", "2.5", "10"},
		{"cost removed", budget(2.5, 0), base, "max_cost_usd", "2.5", "(not set)"},
		{"tokens lowered", budget(0, 5000), budget(0, 100), "", "", ""},
		{"tokens raised", budget(0, 5000), budget(0, 5001), "max_tokens", "5000", "5001"},
		{"tokens removed", budget(0, 5000), budget(1, 0), "max_tokens", "5000", "(not set)"},
	} {
		ch := Widened(c.trusted, c.now)
		switch {
		case c.field == "" && len(ch) != 0:
			t.Errorf("%s: widened %+v, want nothing", c.name, ch)
		case c.field != "" && (len(ch) != 1 || ch[0] != Change{Field: c.field, Trusted: c.was, Now: c.then}):
			t.Errorf("%s: widened %+v, want %s from %s to %s", c.name, ch, c.field, c.was, c.then)
		}
	}
	// From an unrestricted persona: a tools list is narrower, an inline
	// server is not.
	if ch := Widened(Grants{}, grants([]string{"Read"}, nil, nil, "", "", &MCPGrant{Names: []string{"a"}})); len(ch) != 0 {
		t.Errorf("narrowing from nothing: %+v", ch)
	}
	if ch := Widened(Grants{}, Grants{MCP: &MCPGrant{Inline: map[string]string{"x": "h"}}}); len(ch) != 1 {
		t.Errorf("inline server from nothing: %+v", ch)
	}
}

const agentFile = "---\ntools: [Read, Edit, Bash]\nauto_approve_tools: [Read]\npermission_mode: default\n---\nYou help.\n"

func writePersona(t *testing.T, root, id, content string) string {
	t.Helper()
	path := PersonaPath(root, id)
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func load(t *testing.T, root, id string) *persona.Persona {
	t.Helper()
	p, err := persona.Load(root, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A chosen persona file is trusted as it was; a widened one runs with
// the trusted grants and says what changed until a person accepts it by
// its hash; a narrowed one needs nobody.
func TestPersonaTrust(t *testing.T) {
	s, root := open(t), t.TempDir()
	path := writePersona(t, root, "helper", agentFile)
	if err := s.ChoosePersona(root, load(t, root, "helper")); err != nil {
		t.Fatal(err)
	}
	if p, it, err := s.CheckPersona(root, load(t, root, "helper")); err != nil || it != nil || !slices.Equal(p.AutoApproveTools, []string{"Read"}) {
		t.Fatalf("chosen file: %+v %+v %v", p, it, err)
	}
	writePersona(t, root, "helper", strings.Replace(agentFile, "[Read]", "[Read, Bash]", 1))
	p, it, err := s.CheckPersona(root, load(t, root, "helper"))
	if err != nil || it == nil || it.Path != path || len(it.Changes) != 1 || it.Changes[0].Field != "auto_approve_tools" ||
		it.Changes[0].Now != "Read, Bash" || it.Changes[0].Trusted != "Read" {
		t.Fatalf("widened file: item %+v %v", it, err)
	}
	if !slices.Equal(p.AutoApproveTools, []string{"Read"}) {
		t.Fatalf("widened file runs with auto_approve_tools %q, want the trusted [Read]", p.AutoApproveTools)
	}
	if items, _ := s.Pending(root, nil); len(items) != 1 || items[0].Hash != it.Hash {
		t.Fatalf("pending %+v", items)
	}
	if _, err := s.Accept(root, KindPersona, "helper", "", "sha256:00"); !errors.Is(err, ErrStale) {
		t.Fatalf("accept with another hash: %v", err)
	}
	if _, err := s.Accept(root, KindPersona, "", filepath.Join(root, "x", "AGENT_helper.md"), it.Hash); !errors.Is(err, ErrInvalid) {
		t.Fatalf("accept outside agents/: %v", err)
	}
	if _, err := s.Accept(root, KindPersona, "helper", "", it.Hash); err != nil {
		t.Fatal(err)
	}
	if p, it, _ := s.CheckPersona(root, load(t, root, "helper")); it != nil || !slices.Contains(p.AutoApproveTools, "Bash") {
		t.Fatalf("accepted file: %+v %+v", p, it)
	}
	// narrowing: no trust needed, the narrower grants apply
	writePersona(t, root, "helper", strings.Replace(agentFile, "[Read, Edit, Bash]", "[Read]", 1))
	if p, it, _ := s.CheckPersona(root, load(t, root, "helper")); it != nil || !slices.Equal(p.Tools, []string{"Read"}) {
		t.Fatalf("narrowed file: %+v %+v", p, it)
	}
	if items, _ := s.Pending(root, nil); len(items) != 0 {
		t.Fatalf("pending after narrowing %+v", items)
	}
}

// A persona's budget only limits: a file that raises or removes it runs
// with the trusted value and waits for a person; one that lowers it runs
// with the lower value at once.
func TestPersonaBudgetTrust(t *testing.T) {
	s, root := open(t), t.TempDir()
	file := func(budget string) string { return "---\ntools: [Read]\n" + budget + "---\nYou help.\n" }
	writePersona(t, root, "thrifty", file("max_cost_usd: 2.5\nmax_tokens: 9000\n"))
	if err := s.ChoosePersona(root, load(t, root, "thrifty")); err != nil {
		t.Fatal(err)
	}
	writePersona(t, root, "thrifty", file("max_cost_usd: 1\nmax_tokens: 9000\n"))
	if p, it, err := s.CheckPersona(root, load(t, root, "thrifty")); err != nil || it != nil || p.MaxCostUSD != 1 {
		t.Fatalf("lowered: max_cost_usd %v, item %+v, %v; want 1 at once", p.MaxCostUSD, it, err)
	}
	for _, c := range []struct{ name, budget, field string }{
		{"raised", "max_cost_usd: 50\nmax_tokens: 9000\n", "max_cost_usd"},
		{"removed", "max_tokens: 9000\n", "max_cost_usd"},
		{"tokens removed", "max_cost_usd: 2.5\n", "max_tokens"},
	} {
		writePersona(t, root, "thrifty", file(c.budget))
		p, it, err := s.CheckPersona(root, load(t, root, "thrifty"))
		if err != nil || it == nil || len(it.Changes) != 1 || it.Changes[0].Field != c.field {
			t.Fatalf("%s: item %+v %v, want %s widened", c.name, it, err, c.field)
		}
		if p.MaxCostUSD != 2.5 || p.MaxTokens != 9000 {
			t.Fatalf("%s: runs with $%v and %d tokens, want the trusted $2.5 and 9000", c.name, p.MaxCostUSD, p.MaxTokens)
		}
	}
	writePersona(t, root, "thrifty", file("max_cost_usd: 50\nmax_tokens: 9000\n"))
	_, it, _ := s.CheckPersona(root, load(t, root, "thrifty"))
	if _, err := s.Accept(root, KindPersona, "thrifty", "", it.Hash); err != nil {
		t.Fatal(err)
	}
	if p, it, _ := s.CheckPersona(root, load(t, root, "thrifty")); it != nil || p.MaxCostUSD != 50 {
		t.Fatalf("accepted: $%v, item %+v; want $50", p.MaxCostUSD, it)
	}
}

// A person who chose a built-in persona trusted its grants: a file
// written later over it (by an agent) is held to them, in any session; a
// project whose own override file a person chose first trusts that file.
func TestOverrideOfBuiltin(t *testing.T) {
	list, _ := persona.List(t.TempDir())
	if len(list) == 0 {
		t.Fatal("no built-in persona")
	}
	id := list[0].ID
	b, _ := persona.Builtin(id)
	s, root := open(t), t.TempDir()
	if err := s.ChoosePersona(root, load(t, root, id)); err != nil { // the built-in one
		t.Fatal(err)
	}
	writePersona(t, root, id, "---\nauto_approve_tools: [Bash]\npermission_mode: bypassPermissions\n---\nAnything.\n")
	p := load(t, root, id)
	if err := s.ChoosePersona(root, p); err != nil { // a new session of it
		t.Fatal(err)
	}
	q, it, err := s.CheckPersona(root, p)
	if err != nil || it == nil || slices.Contains(q.AutoApproveTools, "Bash") || q.PermissionMode != b.PermissionMode {
		t.Fatalf("override: %+v %+v %v", q, it, err)
	}
	// nobody chose the built-in one here: the override file, chosen, is trusted
	root2 := t.TempDir()
	writePersona(t, root2, id, "---\nauto_approve_tools: [Bash]\n---\nMine.\n")
	p2 := load(t, root2, id)
	if _, it, _ := s.CheckPersona(root2, p2); it == nil {
		t.Fatal("an override nobody chose is held to nothing")
	}
	if err := s.ChoosePersona(root2, p2); err != nil {
		t.Fatal(err)
	}
	if q, it, _ := s.CheckPersona(root2, p2); it != nil || !slices.Contains(q.AutoApproveTools, "Bash") {
		t.Fatalf("the chosen override: %+v %+v", q, it)
	}
}

// An MCP server is trusted by name and the hash of its definition: any
// change of command, args or env is a new definition; the server's own
// configuration is trusted.
func TestMCPTrustByHash(t *testing.T) {
	s, root := open(t), t.TempDir()
	write := func(js string) *mcpconfig.Config {
		os.WriteFile(filepath.Join(root, mcpconfig.FileName), []byte(js), 0o644)
		c, err := mcpconfig.Project(root)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := write(`{"mcpServers":{"evil":{"command":"sh","args":["-c","touch x"]},"ops":{"command":"ops"}}}`)
	ops, _ := c.Get("ops")
	items, err := s.MCPServers(root, c, &mcpconfig.Config{Servers: []mcpconfig.Server{ops}})
	if err != nil || len(items) != 1 || items[0].Name != "evil" {
		t.Fatalf("untrusted %+v %v", items, err)
	}
	if _, err := s.Accept(root, KindMCP, "evil", "", items[0].Hash); err != nil {
		t.Fatal(err)
	}
	if items, _ := s.MCPServers(root, c, nil); len(items) != 1 || items[0].Name != "ops" {
		t.Fatalf("after trusting evil: %+v", items)
	}
	for _, js := range []string{
		`{"mcpServers":{"evil":{"command":"sh","args":["-c","touch y"]}}}`,
		`{"mcpServers":{"evil":{"command":"sh","args":["-c","touch x"],"env":{"A":"1"}}}}`,
		`{"mcpServers":{"evil":{"command":"bash","args":["-c","touch x"]}}}`,
	} {
		if items, _ := s.MCPServers(root, write(js), nil); len(items) != 1 || !strings.Contains(items[0].Reason, "changed") {
			t.Errorf("%s: %+v, want untrusted (changed)", js, items)
		}
	}
	if _, err := s.Accept(root, KindMCP, "nope", "", "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("accept unknown server: %v", err)
	}
	if _, err := s.Accept(root, "rules", "x", "", "x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("accept unknown kind: %v", err)
	}
}

// Writers in parallel (two Stores: two processes' worth) lose nothing.
func TestConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	a, _ := Open(dir)
	b, _ := Open(dir)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := a
			if i%2 == 1 {
				st = b
			}
			if err := st.AddRule("/p", "s", fmt.Sprintf("Bash(touch f%d)", i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := a.Rules("/p", "s")
	if err != nil || len(got) != 40 {
		t.Fatalf("%d rules after 40 writers (%v)", len(got), err)
	}
}

// A record that cannot be read trusts nothing and says why; the next
// grant replaces it, keeping it aside.
func TestCorruptRecord(t *testing.T) {
	s := open(t)
	for _, content := range []string{"{not json", `{"version":1,"projectRoot":"/other","sessions":{"s":{"rules":["Bash"]}}}`,
		`{"version":7,"projectRoot":"/p"}`, `{"version":1,"projectRoot":"/p","extra":1}`, strings.Repeat(" ", MaxFileSize+1) + "{}"} {
		os.WriteFile(s.Path("/p"), []byte(content), 0o600)
		rules, err := s.Rules("/p", "s")
		if !errors.Is(err, ErrCorrupt) || rules != nil || !strings.Contains(err.Error(), s.Path("/p")) {
			t.Errorf("%.40q: rules %q, err %v", content, rules, err)
		}
		if ok, _ := s.MCPTrusted("/p", "x", ""); ok {
			t.Error("an empty hash is trusted")
		}
	}
	if err := s.AddRule("/p", "s", "Edit"); err != nil {
		t.Fatal(err)
	}
	if rules, err := s.Rules("/p", "s"); err != nil || !slices.Equal(rules, []string{"Edit"}) {
		t.Fatalf("after a grant: %q %v", rules, err)
	}
	if _, err := os.Stat(s.Path("/p") + corruptSuffix); err != nil {
		t.Errorf("the corrupt record was not kept: %v", err)
	}
}

// The record is bounded: rules per session, and a rule's length.
func TestBounded(t *testing.T) {
	s := open(t)
	for i := range MaxRulesPer {
		if err := s.Update("/p", func(r *Record) error {
			if r.Sessions == nil {
				r.Sessions = map[string]*SessionGrants{"s": {}}
			}
			r.Sessions["s"].Rules = append(r.Sessions["s"].Rules, fmt.Sprintf("Bash(x%d)", i))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddRule("/p", "s", "Bash(one more)"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("rule %d: %v", MaxRulesPer+1, err)
	}
	if err := s.AddRule("/p", "t", strings.Repeat("x", maxRuleLen+1)); err == nil {
		t.Fatal("a huge rule was kept")
	}
	if got, _ := s.Rules("/p", "s"); len(got) != MaxRulesPer {
		t.Fatalf("%d rules kept", len(got))
	}
}
