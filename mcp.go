package harness

import (
	"fmt"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/persona"
)

// mcpServers is the MCP configuration of a turn in root run with persona
// p: the project's .mcp.json, then the server's Config.MCP, then the
// persona's mcp_servers selection (mcpconfig's layers), with ${VAR}s
// expanded from the harness's environment. Every env and header value is
// registered with the process's scrubber before any engine sees it. A
// malformed layer is ErrInvalidMCPConfig naming the file and server.
//
// A project server no person trusted (by name and the hash of its
// definition; see package trust) is left out: it is returned as a
// trust:required notice and an "untrusted" status for session:init.
func (h *Harness) mcpServers(root string, p *persona.Persona) (*mcpconfig.Config, []event.TrustRequired, []event.MCPServerStatus, error) {
	project, err := mcpconfig.Project(root)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", ErrInvalidMCPConfig, err)
	}
	cfg := mcpconfig.Merge(project, h.cfg.MCP)
	if p != nil && p.MCP != nil {
		if cfg, err = mcpconfig.Select(cfg, p.MCP.Names, p.MCP.Inline, "persona "+p.ID); err != nil {
			return nil, nil, nil, fmt.Errorf("%w: %w", ErrInvalidMCPConfig, err)
		}
	}
	cfg, notices, status := h.untrustedMCP(root, project, cfg)
	if cfg.Len() == 0 {
		return nil, notices, status, nil
	}
	if cfg, err = cfg.Expand(nil); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", ErrInvalidMCPConfig, err)
	}
	secrets.Register(cfg.Secrets()...)
	return cfg, notices, status, nil
}
