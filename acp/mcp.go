package acp

import (
	"sort"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
)

// mcpServers is cfg in ACP's form for session/new, session/load and
// session/fork's mcpServers, with what session:init reports of each
// server. Stdio servers always go (every ACP agent must take them);
// http and sse ones only where the agent's initialize answer advertises
// mcpCapabilities.http / .sse, the others reported failed with the
// reason. The agent starts the servers and tells nothing of their state,
// so the servers handed over are "pending". Env and header values go to
// the agent only (the request is never logged); entries are sorted so a
// session's parameters are the same each time. noStdio (Config.NoStdioMCP):
// the agent refuses stdio servers, which are then reported failed.
func mcpServers(cfg *mcpconfig.Config, caps sdk.McpCapabilities, noStdio bool) ([]any, []event.MCPServerStatus) {
	out := []any{} // the field is required: an empty list, never null
	var status []event.MCPServerStatus
	if cfg == nil {
		return out, nil
	}
	for _, s := range cfg.Servers {
		switch s.Type {
		case mcpconfig.Stdio:
			if noStdio {
				status = append(status, event.MCPServerStatus{Name: s.Name, Status: "failed",
					Error: "the agent does not take stdio MCP servers from its client (give it an http or sse server)"})
				continue
			}
			args := s.Args
			if args == nil {
				args = []string{}
			}
			env := []sdk.EnvVariable{}
			for _, k := range sortedKeys(s.Env) {
				env = append(env, sdk.EnvVariable{Name: k, Value: s.Env[k]})
			}
			out = append(out, sdk.McpServer{Stdio: &sdk.McpServerStdio{Name: s.Name, Command: s.Command, Args: args, Env: env}})
		case mcpconfig.HTTP, mcpconfig.SSE:
			if s.Type == mcpconfig.HTTP && !caps.Http || s.Type == mcpconfig.SSE && !caps.Sse {
				status = append(status, event.MCPServerStatus{Name: s.Name, Status: "failed",
					Error: "the agent does not take " + s.Type + " MCP servers (its initialize answer does not advertise mcpCapabilities." + s.Type + ")"})
				continue
			}
			headers := []sdk.HttpHeader{}
			for _, k := range sortedKeys(s.Headers) {
				headers = append(headers, sdk.HttpHeader{Name: k, Value: s.Headers[k]})
			}
			if s.Type == mcpconfig.HTTP {
				out = append(out, sdk.McpServer{Http: &sdk.McpServerHttpInline{Name: s.Name, Type: "http", Url: s.URL, Headers: headers}})
			} else {
				out = append(out, sdk.McpServer{Sse: &sdk.McpServerSseInline{Name: s.Name, Type: "sse", Url: s.URL, Headers: headers}})
			}
		default:
			status = append(status, event.MCPServerStatus{Name: s.Name, Status: "failed", Error: "unknown MCP server type " + s.Type})
			continue
		}
		status = append(status, event.MCPServerStatus{Name: s.Name, Status: "pending"})
	}
	return out, status
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
