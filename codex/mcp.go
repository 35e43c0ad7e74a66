package codex

import (
	"encoding/json"
	"maps"

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
func threadConfig(base map[string]any, cfg *mcpconfig.Config) (map[string]any, []event.MCPServerStatus) {
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
		if m.Method != "mcpServer/startupStatus/updated" {
			continue
		}
		var p struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Error  string `json:"error"`
		}
		if json.Unmarshal(m.Params, &p) != nil {
			continue
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
}
