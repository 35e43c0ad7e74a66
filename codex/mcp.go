package codex

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
)

// threadConfig is the config of thread/start, thread/resume and
// thread/fork: Config.ThreadConfig with the turn's MCP servers as Codex's
// mcp_servers table (stdio: command, args, env; http: url,
// http_headers). It goes over the app-server's stdin, never on a command
// line, so env and header values stay off `ps`. Codex has no SSE
// transport: such servers are left out and reported failed. nil when
// there is nothing to send.
//
// Codex (0.169) runs an MCP server's tools without asking, whatever its
// approval policy, so the harness's approvals never see them. Unless the
// permission mode is bypassPermissions, a server's tools are therefore
// offered only where a rule allows them (allowed: Request.AllowedTools):
// `mcp__server__tool` enables that tool (Codex's enabled_tools),
// `mcp__server` every tool of the server, and a server no rule names is
// given with no tool at all. What runs unasked is exactly what a rule
// allows, as on every other engine; asking a person about an MCP tool
// is not possible on Codex.
func threadConfig(base map[string]any, cfg *mcpconfig.Config, mode string, allowed []string) (map[string]any, []event.MCPServerStatus) {
	if cfg.Len() == 0 {
		if len(base) == 0 {
			return nil, nil
		}
		return base, nil
	}
	servers := map[string]any{}
	var status []event.MCPServerStatus
	for _, s := range cfg.Servers {
		switch s.Type {
		case mcpconfig.Stdio:
			e := map[string]any{"command": s.Command}
			if len(s.Args) > 0 {
				e["args"] = s.Args
			}
			if len(s.Env) > 0 {
				e["env"] = s.Env
			}
			servers[s.Name] = e
		case mcpconfig.HTTP:
			e := map[string]any{"url": s.URL}
			if len(s.Headers) > 0 {
				e["http_headers"] = s.Headers
			}
			servers[s.Name] = e
		default:
			status = append(status, event.MCPServerStatus{Name: s.Name, Status: "failed", Error: "Codex does not take " + s.Type + " MCP servers (stdio and http only)"})
			continue
		}
		if mode != "bypassPermissions" {
			if tools, all := allowedMCPTools(s.Name, allowed); !all {
				servers[s.Name].(map[string]any)["enabled_tools"] = tools
			}
		}
		status = append(status, event.MCPServerStatus{Name: s.Name, Status: "pending"})
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]any{}
	}
	out["mcp_servers"] = servers
	return out, status
}

// mcpStartup applies the app-server's mcpServer/startupStatus/updated
// notifications among msgs (what arrived before session:init) to status:
// ready is connected, failed carries Codex's error.
func mcpStartup(status []event.MCPServerStatus, msgs []Message) {
	for _, m := range msgs {
		mcpStartupMsg(status, m)
	}
}

// mcpStartupMsg applies one message to status (nothing unless it is an
// mcpServer/startupStatus/updated notification).
func mcpStartupMsg(status []event.MCPServerStatus, m Message) {
	if m.Method != "mcpServer/startupStatus/updated" {
		return
	}
	var p struct {
		Name   string `json:"name"`
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return
	}
	for i := range status {
		if status[i].Name != p.Name {
			continue
		}
		switch p.Status {
		case "ready":
			status[i].Status, status[i].Error = "connected", ""
		case "failed", "cancelled":
			status[i].Status, status[i].Error = "failed", p.Error
		case "starting":
			status[i].Status = "pending"
		}
	}
}

// mcpPending reports whether a server in status is still starting.
func mcpPending(status []event.MCPServerStatus) bool {
	return slices.ContainsFunc(status, func(s event.MCPServerStatus) bool { return s.Status == "pending" })
}

// allowedMCPTools is what the rules in allowed enable of server's tools:
// all of them (a rule naming the server), or the tools named (never nil,
// so an empty list enables none).
func allowedMCPTools(server string, allowed []string) (tools []string, all bool) {
	tools = []string{}
	for _, r := range allowed {
		if r == mcpconfig.ToolPrefix+server {
			return nil, true
		}
		if sv, tool, ok := mcpconfig.SplitToolName(r); ok && sv == server && !slices.Contains(tools, tool) {
			tools = append(tools, tool)
		}
	}
	return tools, false
}
