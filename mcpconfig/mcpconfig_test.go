package mcpconfig_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chirality/harness/mcpconfig"
)

func TestParse(t *testing.T) {
	c, err := mcpconfig.Parse([]byte(`{"mcpServers": {
		"zeta": {"type": "http", "url": "https://x.test/mcp", "headers": {"Authorization": "Bearer s3cret-token"}},
		"everything": {"command": "node", "args": ["a.js"], "env": {"K": "v"}}
	}, "other": 1}`), "f.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Names(); !reflect.DeepEqual(got, []string{"everything", "zeta"}) {
		t.Fatalf("names %v, want sorted [everything zeta]", got)
	}
	e, _ := c.Get("everything")
	if e.Type != mcpconfig.Stdio || e.Command != "node" || e.Args[0] != "a.js" || e.Env["K"] != "v" {
		t.Fatalf("everything = %+v", e)
	}
	z, _ := c.Get("zeta")
	if z.Type != mcpconfig.HTTP || z.URL != "https://x.test/mcp" {
		t.Fatalf("zeta = %+v", z)
	}
}

func TestParseRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ json, want string }{
		"not json":        {`{`, "not JSON"},
		"bad name":        {`{"mcpServers": {"a b": {"command": "x"}}}`, `server "a b"`},
		"double under":    {`{"mcpServers": {"a__b": {"command": "x"}}}`, `"__"`},
		"too long name":   {`{"mcpServers": {"` + strings.Repeat("a", 65) + `": {"command": "x"}}}`, "1 to 64"},
		"no command":      {`{"mcpServers": {"a": {"args": ["x"]}}}`, "needs a command"},
		"blank command":   {`{"mcpServers": {"a": {"type": "stdio", "command": " "}}}`, "needs a command"},
		"unknown type":    {`{"mcpServers": {"a": {"type": "ws", "url": "http://x"}}}`, `unknown type "ws"`},
		"http no url":     {`{"mcpServers": {"a": {"type": "http"}}}`, "http:// or https:// url"},
		"file url":        {`{"mcpServers": {"a": {"type": "http", "url": "file:///etc/passwd"}}}`, "http:// or https:// url"},
		"http w/ command": {`{"mcpServers": {"a": {"type": "http", "url": "http://x", "command": "sh"}}}`, "takes no command"},
		"stdio w/ url":    {`{"mcpServers": {"a": {"command": "x", "url": "http://x"}}}`, "takes no url"},
		"typo field":      {`{"mcpServers": {"a": {"command": "x", "envs": {}}}}`, `unknown field "envs"`},
		"wrong kind":      {`{"mcpServers": {"a": {"command": ["x"]}}}`, "bad entry"},
		"servers list":    {`{"mcpServers": ["a"]}`, "not JSON of the form"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := mcpconfig.Parse([]byte(tc.json), "cfg.json")
			if !errors.Is(err, mcpconfig.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "cfg.json: ") {
				t.Fatalf("err = %q, want it to name cfg.json and say %q", err, tc.want)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"mcpServers": {`)
	for i := range mcpconfig.MaxServers + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"s%d": {"command": "x"}`, i)
	}
	b.WriteString("}}")
	if _, err := mcpconfig.Parse([]byte(b.String()), "many"); !errors.Is(err, mcpconfig.ErrInvalid) || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("65 servers: err = %v", err)
	}
	huge := `{"mcpServers": {"a": {"command": "x", "args": ["` + strings.Repeat("y", mcpconfig.MaxFileSize) + `"]}}}`
	if _, err := mcpconfig.Parse([]byte(huge), "huge"); !errors.Is(err, mcpconfig.ErrInvalid) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("1 MiB file: err = %v", err)
	}
	// Load reads no more than the limit from a file that never ends.
	dir := t.TempDir()
	p := filepath.Join(dir, "big.json")
	if err := os.WriteFile(p, []byte(huge), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mcpconfig.Load(p); !errors.Is(err, mcpconfig.ErrInvalid) {
		t.Fatalf("Load of a 1 MiB file: %v", err)
	}
}

func TestProject(t *testing.T) {
	dir := t.TempDir()
	c, err := mcpconfig.Project(dir)
	if err != nil || c.Len() != 0 {
		t.Fatalf("no .mcp.json: %v, %v", c, err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers": {"a": {"command": "x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = mcpconfig.Project(dir)
	if err != nil || c.Len() != 1 {
		t.Fatalf(".mcp.json: %v, %v", c, err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers": {"a": {}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mcpconfig.Project(dir); !errors.Is(err, mcpconfig.ErrInvalid) || !strings.Contains(err.Error(), ".mcp.json") {
		t.Fatalf("bad .mcp.json: %v", err)
	}
}

func mustParse(t *testing.T, s string) *mcpconfig.Config {
	t.Helper()
	c, err := mcpconfig.Parse([]byte(s), "t")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMergeAndSelect(t *testing.T) {
	project := mustParse(t, `{"mcpServers": {"a": {"command": "pa", "env": {"X": "1"}}, "b": {"command": "pb"}}}`)
	flag := mustParse(t, `{"mcpServers": {"a": {"command": "fa"}, "c": {"type": "sse", "url": "http://c"}}}`)
	m := mcpconfig.Merge(project, nil, flag)
	if got := m.Names(); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Fatalf("merged names %v", got)
	}
	a, _ := m.Get("a")
	if a.Command != "fa" || a.Env != nil {
		t.Fatalf("a = %+v: the later layer replaces the whole entry", a)
	}
	// The result shares nothing with its layers.
	b, _ := m.Get("b")
	b.Args = append(b.Args, "x")
	m.Servers[0].Command = "changed"
	if a, _ := flag.Get("a"); a.Command != "fa" {
		t.Fatal("Merge shares its layers' entries")
	}

	inline, err := mcpconfig.ParseEntry("b", []byte(`{"command": "inline-b"}`), "persona p")
	if err != nil {
		t.Fatal(err)
	}
	sel, err := mcpconfig.Select(m, []string{"c"}, []mcpconfig.Server{inline}, "persona p")
	if err != nil {
		t.Fatal(err)
	}
	if got := sel.Names(); !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Fatalf("selected %v, want [b c]", got)
	}
	if b, _ := sel.Get("b"); b.Command != "inline-b" {
		t.Fatalf("inline b = %+v", b)
	}
	if _, err := mcpconfig.Select(m, []string{"nope"}, nil, "persona p"); !errors.Is(err, mcpconfig.ErrInvalid) ||
		!strings.Contains(err.Error(), `persona p: server "nope"`) {
		t.Fatalf("unknown name: %v", err)
	}
	if _, err := mcpconfig.ParseEntry("x", []byte(`{"command": 1}`), "persona p"); !errors.Is(err, mcpconfig.ErrInvalid) {
		t.Fatalf("bad inline entry: %v", err)
	}
}

func TestExpandAndSecrets(t *testing.T) {
	c := mustParse(t, `{"mcpServers": {
		"s": {"command": "${BIN:-node}", "args": ["${DIR}/a.js"], "env": {"TOKEN": "${TOK}", "PLAIN": "p"}},
		"h": {"type": "http", "url": "http://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOK}"}}
	}}`)
	env := map[string]string{"DIR": "/srv", "TOK": "tok-0123456789abcdef", "HOST": "127.0.0.1:9"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	x, err := c.Expand(lookup)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := x.Get("s")
	h, _ := x.Get("h")
	if s.Command != "node" || s.Args[0] != "/srv/a.js" || s.Env["TOKEN"] != env["TOK"] || h.URL != "http://127.0.0.1:9/mcp" ||
		h.Headers["Authorization"] != "Bearer "+env["TOK"] {
		t.Fatalf("expanded: %+v %+v", s, h)
	}
	if orig, _ := c.Get("s"); orig.Env["TOKEN"] != "${TOK}" {
		t.Fatal("Expand changed its receiver")
	}
	if got := x.Secrets(); !reflect.DeepEqual(got, []string{"Bearer " + env["TOK"], "p", env["TOK"]}) {
		t.Fatalf("secrets %q", got)
	}
	delete(env, "TOK")
	_, err = c.Expand(lookup)
	if !errors.Is(err, mcpconfig.ErrInvalid) || !strings.Contains(err.Error(), "${TOK} is not set") {
		t.Fatalf("unset var: %v", err)
	}
}

func TestStringNeverPrintsSecrets(t *testing.T) {
	c := mustParse(t, `{"mcpServers": {
		"s": {"command": "node", "env": {"TOKEN": "envsecret-1234567890"}},
		"h": {"type": "http", "url": "https://user:pw-secret@x.test/mcp?key=qsecret", "headers": {"X-Key": "hdrsecret-123456"}}
	}}`)
	for _, s := range c.Servers {
		for _, out := range []string{s.String(), fmt.Sprintf("%v %+v %#v %s", s, s, s, s)} {
			for _, secret := range []string{"envsecret", "pw-secret", "qsecret", "hdrsecret"} {
				if strings.Contains(out, secret) {
					t.Fatalf("%q prints %s", out, secret)
				}
			}
		}
	}
	if h, _ := c.Get("h"); h.String() != "h (http: https://x.test/mcp)" {
		t.Fatalf("String() = %q", h.String())
	}
}

func TestJSONRoundTrip(t *testing.T) {
	c := mustParse(t, `{"mcpServers": {"s": {"command": "node", "args": ["a"], "env": {"K": "v"}}, "h": {"type": "http", "url": "http://h"}}}`)
	b, err := c.JSON()
	if err != nil {
		t.Fatal(err)
	}
	back := mustParse(t, string(b))
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip: %s gives %+v, want %+v", b, back, c)
	}
	var empty *mcpconfig.Config
	if b, _ := empty.JSON(); string(b) != `{"mcpServers":{}}` {
		t.Fatalf("nil config JSON = %s", b)
	}
}

func TestToolName(t *testing.T) {
	name := mcpconfig.ToolName("everything", "echo")
	if name != "mcp__everything__echo" {
		t.Fatal(name)
	}
	if s, tool, ok := mcpconfig.SplitToolName(name); !ok || s != "everything" || tool != "echo" {
		t.Fatalf("split: %q %q %v", s, tool, ok)
	}
	// A tool's own name may hold "__"; the server's may not.
	if s, tool, ok := mcpconfig.SplitToolName("mcp__fs__read__file"); !ok || s != "fs" || tool != "read__file" {
		t.Fatalf("split tool with __: %q %q %v", s, tool, ok)
	}
	for _, bad := range []string{"Bash", "mcp__", "mcp__x", "mcp____t", "mcp__a b__t", "mcp__s__"} {
		if _, _, ok := mcpconfig.SplitToolName(bad); ok {
			t.Errorf("SplitToolName(%q) ok", bad)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "args": ["y"], "env": {"K": "v"}}}}`))
	f.Add([]byte(`{"mcpServers": {"h": {"type": "http", "url": "http://x", "headers": {"A": "B"}}}}`))
	f.Add([]byte(`{"mcpServers": {"a__b": {}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := mcpconfig.Parse(data, "fuzz")
		if err != nil {
			if !errors.Is(err, mcpconfig.ErrInvalid) {
				t.Fatalf("error not ErrInvalid: %v", err)
			}
			return
		}
		for _, s := range c.Servers {
			if !mcpconfig.ValidName(s.Name) || (s.Type != mcpconfig.Stdio && s.Type != mcpconfig.HTTP && s.Type != mcpconfig.SSE) {
				t.Fatalf("accepted %#v", s)
			}
		}
		b, err := c.JSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := mcpconfig.Parse(b, "again")
		if err != nil || back.Len() != c.Len() {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
	})
}
