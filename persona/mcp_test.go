package persona_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/chirality/harness/persona"
)

func TestMCPServers(t *testing.T) {
	p, err := persona.ParseContent("p", "agents/AGENT_p.md", []byte("---\nmcp_servers:\n  - everything\n  - tracker:\n      command: node\n      args: [t.js]\n      env: {TOKEN: tok-secret-0123456789}\n---\nbody\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.MCP == nil || !reflect.DeepEqual(p.MCP.Names, []string{"everything"}) || len(p.MCP.Inline) != 1 {
		t.Fatalf("MCP = %+v", p.MCP)
	}
	if s := p.MCP.Inline[0]; s.Name != "tracker" || s.Command != "node" || s.Args[0] != "t.js" || s.Env["TOKEN"] != "tok-secret-0123456789" {
		t.Fatalf("inline = %+v", s)
	}
	// A persona's JSON (GET /personas) never carries an inline entry's env.
	b, _ := json.Marshal(p)
	if strings.Contains(string(b), "tok-secret") {
		t.Fatalf("persona JSON leaks the env: %s", b)
	}

	none, err := persona.ParseContent("p", "f", []byte("---\nmcp_servers: []\n---\n"))
	if err != nil || none.MCP == nil || len(none.MCP.Names) != 0 || len(none.MCP.Inline) != 0 {
		t.Fatalf("mcp_servers: [] = %+v, %v (want set and empty)", none.MCP, err)
	}
	unset, err := persona.ParseContent("p", "f", []byte("---\nmodel: x\n---\n"))
	if err != nil || unset.MCP != nil {
		t.Fatalf("no mcp_servers: %+v, %v (want nil)", unset.MCP, err)
	}
}

func TestMCPServersRefused(t *testing.T) {
	for name, tc := range map[string]struct{ front, want string }{
		"scalar":      {"mcp_servers: everything", "want a list"},
		"bad name":    {"mcp_servers: [\"a b\"]", `"a b" is not a server name`},
		"twice":       {"mcp_servers: [a, a]", `"a" is listed twice`},
		"bad inline":  {"mcp_servers:\n  - t: {args: [x]}", `server "t": needs a command`},
		"typo inline": {"mcp_servers:\n  - t: {command: x, envs: {}}", `unknown field "envs"`},
		"two keys":    {"mcp_servers:\n  - {a: {command: x}, b: {command: y}}", "one NAME"},
		"number":      {"mcp_servers: [3]", "is a server name or one NAME"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := persona.ParseContent("p", "agents/AGENT_p.md", []byte("---\n"+tc.front+"\n---\n"))
			if !errors.Is(err, persona.ErrInvalidPersona) || !strings.Contains(err.Error(), tc.want) ||
				!strings.HasPrefix(err.Error(), "agents/AGENT_p.md:") {
				t.Fatalf("err = %v, want ErrInvalidPersona naming the file and saying %q", err, tc.want)
			}
		})
	}
}
