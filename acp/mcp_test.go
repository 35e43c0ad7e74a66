package acp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
)

// Issue 23: a turn's MCP servers reach the agent in session/new (and
// session/load after a restart) in ACP's shapes — the fake refuses any
// other — stdio always, http only where initialize advertises
// mcpCapabilities.http; what cannot go is reported failed in session:init
// with the reason, and the turn still runs.
func TestMCPServersInSessionNewAndLoad(t *testing.T) {
	cfg := &mcpconfig.Config{Servers: []mcpconfig.Server{
		{Name: "everything", Type: mcpconfig.Stdio, Command: "/usr/bin/node", Args: []string{"/x/index.js", "stdio"}, Env: map[string]string{"TOKEN": "t0k", "A": "1"}},
		{Name: "remote", Type: mcpconfig.HTTP, URL: "http://127.0.0.1:9/mcp", Headers: map[string]string{"Authorization": "Bearer h3ad"}},
		{Name: "events", Type: mcpconfig.SSE, URL: "http://127.0.0.1:9/sse"},
	}}
	const stdioWant = "everything stdio /usr/bin/node /x/index.js stdio env A=1 TOKEN=t0k"
	for _, c := range []struct {
		name   string
		http   bool
		want   string
		status map[string]string
	}{
		{"stdio only", false, "mcp: " + stdioWant, map[string]string{"everything": "pending", "remote": "failed", "events": "failed"}},
		{"http advertised", true, "mcp: " + stdioWant + " | remote http http://127.0.0.1:9/mcp headers Authorization=Bearer h3ad",
			map[string]string{"everything": "pending", "remote": "pending", "events": "failed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			mod := func(cf *acp.Config) {
				cf.ExtraEnv = append(cf.ExtraEnv, "ACPTEST_STATE="+state) // the last one counts
				if c.http {
					cf.ExtraEnv = append(cf.ExtraEnv, "ACPTEST_MCP_HTTP=1")
				}
			}
			e := newFake(t, mod)
			run := func(resume string) (string, *event.SessionInit) {
				t.Helper()
				tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s", Message: "mcp", Cwd: t.TempDir(), MCP: cfg, Resume: resume})
				if err != nil {
					t.Fatal(err)
				}
				evs, err := collect(t, tr, 20*time.Second)
				if err != nil {
					t.Fatalf("turn: %v", err)
				}
				var text string
				var init *event.SessionInit
				for _, ev := range evs {
					if ev.Type == event.TypeChatDelta {
						text += ev.Text
					}
					if ev.Type == event.TypeSessionInit {
						init = ev.Init
					}
				}
				return text, init
			}
			text, init := run("")
			if text != c.want {
				t.Fatalf("the agent got\n %q\nwant\n %q", text, c.want)
			}
			got := map[string]string{}
			for _, s := range init.MCPServers {
				got[s.Name] = s.Status
				if s.Status == "failed" && !strings.Contains(s.Error, "mcpCapabilities.") {
					t.Errorf("%s failed without the reason: %q", s.Name, s.Error)
				}
				if strings.Contains(s.Error, "h3ad") || strings.Contains(s.Error, "t0k") {
					t.Errorf("a secret in the status: %+v", s)
				}
			}
			for name, want := range c.status {
				if got[name] != want {
					t.Errorf("session:init %s = %q, want %q (%+v)", name, got[name], want, init.MCPServers)
				}
			}
			// A new process loads the session: it gets the servers again.
			if err := e.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			e = newFake(t, mod)
			text, init2 := run(init.ConversationID)
			if init2.ConversationID != init.ConversationID {
				t.Fatalf("session %q, want %q loaded", init2.ConversationID, init.ConversationID)
			}
			if text != c.want {
				t.Fatalf("after session/load the agent got %q, want %q", text, c.want)
			}
		})
	}
}

// The mapper names a session's MCP tools mcp__SERVER__TOOL whatever form
// the agent uses (OpenCode SERVER_TOOL, Copilot SERVER-TOOL, Claude's
// mcp__ form kept), the longest fitting server name winning; names of no
// session server, and every name when the session has none, are left as
// they are. tool:start and ToolName (the approval path) agree.
func TestMapperNamesMCPTools(t *testing.T) {
	for _, c := range []struct {
		servers     []string
		title, want string
	}{
		{[]string{"everything"}, "everything_echo", "mcp__everything__echo"},
		{[]string{"everything"}, "everything-get-sum", "mcp__everything__get-sum"},
		{[]string{"everything"}, "mcp__everything__echo", "mcp__everything__echo"},
		{[]string{"a", "a_b"}, "a_b_tool", "mcp__a_b__tool"},
		{[]string{"a_b", "a"}, "a_c", "mcp__a__c"},
		{[]string{"everything"}, "everything_", "everything_"},
		{[]string{"everything"}, "other_echo", "other_echo"},
		{nil, "everything_echo", "everything_echo"},
	} {
		m := acp.NewMapper()
		m.SetMCPServers(c.servers)
		evs := m.Handle(acp.Update{Kind: acp.KindToolCall, ToolCallID: "t1", Title: c.title, ToolKind: "other", Status: "in_progress"})
		if len(evs) != 1 || evs[0].ToolStart == nil || evs[0].ToolStart.Name != c.want || m.ToolName("t1") != c.want {
			t.Errorf("%v %q: events %+v, ToolName %q; want %q", c.servers, c.title, evs, m.ToolName("t1"), c.want)
		}
	}
}
