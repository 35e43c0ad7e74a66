package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/persona"
)

// Grants are what a persona file grants a session: the frontmatter keys
// that can widen what it may do. Nil lists mean "not set" as in
// persona.Persona.
type Grants struct {
	Tools            []string `json:"tools"`
	DisallowedTools  []string `json:"disallowedTools"`
	AutoApproveTools []string `json:"autoApproveTools"`
	PermissionMode   string   `json:"permissionMode,omitempty"`
	Engine           string   `json:"engine,omitempty"`
	// MaxCostUSD and MaxTokens are the persona's budget (max_cost_usd,
	// max_tokens); 0 = no limit. A budget only limits: a lower one needs
	// nobody's trust, a higher one (or none) widens.
	MaxCostUSD float64 `json:"maxCostUsd,omitempty"`
	MaxTokens  int64   `json:"maxTokens,omitempty"`
	// MCP is mcp_servers: nil = every server the project and the server
	// configuration give.
	MCP *MCPGrant `json:"mcpServers,omitempty"`
}

// MCPGrant is a persona's mcp_servers: the names it selects and, by
// name, the hash of each inline definition (never the definition, which
// may hold credentials).
type MCPGrant struct {
	Names  []string          `json:"names"`
	Inline map[string]string `json:"inline,omitempty"`
}

func (g Grants) clone() Grants {
	c := g
	c.Tools = slices.Clone(g.Tools)
	c.DisallowedTools = slices.Clone(g.DisallowedTools)
	c.AutoApproveTools = slices.Clone(g.AutoApproveTools)
	if g.MCP != nil {
		m := MCPGrant{Names: slices.Clone(g.MCP.Names)}
		if g.MCP.Inline != nil {
			m.Inline = map[string]string{}
			for k, v := range g.MCP.Inline {
				m.Inline[k] = v
			}
		}
		c.MCP = &m
	}
	return c
}

// GrantsOf returns the grants of p.
func GrantsOf(p *persona.Persona) Grants {
	g := Grants{Tools: slices.Clone(p.Tools), DisallowedTools: slices.Clone(p.DisallowedTools),
		AutoApproveTools: slices.Clone(p.AutoApproveTools), PermissionMode: p.PermissionMode, Engine: p.Engine,
		MaxCostUSD: p.MaxCostUSD, MaxTokens: p.MaxTokens}
	if p.MCP != nil {
		m := &MCPGrant{Names: slices.Clone(p.MCP.Names)}
		if m.Names == nil {
			m.Names = []string{}
		}
		for _, s := range p.MCP.Inline {
			if m.Inline == nil {
				m.Inline = map[string]string{}
			}
			m.Inline[s.Name] = ServerHash(s)
		}
		g.MCP = m
	}
	return g
}

// ServerHash is the hash of an MCP server's definition (name, type,
// command, args, env, url, headers, before ${VAR} expansion): what a
// person trusts.
func ServerHash(s mcpconfig.Server) string {
	b, _ := json.Marshal(struct {
		Name string `json:"name"`
		mcpconfig.Server
	}{s.Name, s})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Change is one grant that widened: the field (as the frontmatter names
// it), what was trusted and what the file says now.
type Change struct {
	Field   string `json:"field"`
	Trusted string `json:"trusted"`
	Now     string `json:"now"`
}

// modeRank orders permission modes by what they let run without a
// person: plan (read only) and dontAsk / default (rules only, the rest
// denied or asked) < acceptEdits (file edits unasked) <
// bypassPermissions (everything). "" is the server's default.
func modeRank(m string) int {
	switch m {
	case "plan":
		return 0
	case "acceptEdits":
		return 2
	case "bypassPermissions":
		return 3
	}
	return 1
}

// unrestricted reports whether a tools list offers every built-in tool.
func unrestricted(tools []string) bool {
	return tools == nil || slices.Contains(tools, "default")
}

func show(list []string) string {
	if list == nil {
		return "(not set)"
	}
	if len(list) == 0 {
		return "(none)"
	}
	return strings.Join(list, ", ")
}

func showMCP(m *MCPGrant) string {
	if m == nil {
		return "(every server)"
	}
	parts := slices.Clone(m.Names)
	for name := range m.Inline {
		parts = append(parts, name+" (inline)")
	}
	slices.Sort(parts)
	return show(parts)
}

func subset(a, b []string) bool { // every item of a is in b
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// Widened lists, field by field, where now grants more than trusted.
// Narrowing (fewer tools, more disallowed tools, a stricter mode…) is no
// change here: it needs nobody's trust.
func Widened(trusted, now Grants) []Change {
	var out []Change
	add := func(field, t, n string) { out = append(out, Change{Field: field, Trusted: t, Now: n}) }
	if toolsWidened(trusted.Tools, now.Tools) {
		add("tools", show(trusted.Tools), show(now.Tools))
	}
	if !subset(trusted.DisallowedTools, now.DisallowedTools) {
		add("disallowed_tools", show(trusted.DisallowedTools), show(now.DisallowedTools))
	}
	if !subset(now.AutoApproveTools, trusted.AutoApproveTools) {
		add("auto_approve_tools", show(trusted.AutoApproveTools), show(now.AutoApproveTools))
	}
	if modeRank(now.PermissionMode) > modeRank(trusted.PermissionMode) {
		add("permission_mode", orUnset(trusted.PermissionMode), orUnset(now.PermissionMode))
	}
	if now.Engine != trusted.Engine {
		add("engine", orUnset(trusted.Engine), orUnset(now.Engine))
	}
	if mcpWidened(trusted.MCP, now.MCP) {
		add("mcp_servers", showMCP(trusted.MCP), showMCP(now.MCP))
	}
	if limitRaised(trusted.MaxCostUSD, now.MaxCostUSD) {
		add("max_cost_usd", showLimit(trusted.MaxCostUSD), showLimit(now.MaxCostUSD))
	}
	if limitRaised(float64(trusted.MaxTokens), float64(now.MaxTokens)) {
		add("max_tokens", showLimit(float64(trusted.MaxTokens)), showLimit(float64(now.MaxTokens)))
	}
	return out
}

// limitRaised says whether a budget limit (0 = none) is higher now than
// the one trusted: removed, or raised. A lower one only limits.
func limitRaised(trusted, now float64) bool {
	return trusted > 0 && (now <= 0 || now > trusted)
}

func showLimit(v float64) string {
	if v <= 0 {
		return "(not set)"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func orUnset(s string) string {
	if s == "" {
		return "(not set)"
	}
	return s
}

func toolsWidened(trusted, now []string) bool {
	if unrestricted(trusted) {
		return false
	}
	return unrestricted(now) || !subset(now, trusted)
}

func mcpWidened(trusted, now *MCPGrant) bool {
	switch {
	case now == nil:
		return trusted != nil
	case trusted == nil:
		// A selection of the servers a session would get anyway (the
		// project's, each trusted on its own, and the server's) is
		// narrower; an inline server is a new command.
		return len(now.Inline) > 0
	}
	if !subset(now.Names, trusted.Names) {
		return true
	}
	for name, h := range now.Inline {
		if trusted.Inline[name] != h {
			return true
		}
	}
	return false
}

// Restrict returns p with every grant that widened beyond trusted put
// back to the trusted one, and the changes it undid. Narrowed grants stay
// as the file says. Inline MCP servers the trusted grants do not hold
// (by name and hash) are dropped.
func Restrict(p *persona.Persona, trusted Grants) (*persona.Persona, []Change) {
	changes := Widened(trusted, GrantsOf(p))
	if len(changes) == 0 {
		return p, nil
	}
	c := *p
	for _, ch := range changes {
		switch ch.Field {
		case "tools":
			c.Tools = slices.Clone(trusted.Tools)
		case "disallowed_tools":
			c.DisallowedTools = slices.Clone(trusted.DisallowedTools)
		case "auto_approve_tools":
			c.AutoApproveTools = slices.Clone(trusted.AutoApproveTools)
		case "permission_mode":
			c.PermissionMode = trusted.PermissionMode
		case "engine":
			c.Engine = trusted.Engine
		case "max_cost_usd":
			c.MaxCostUSD = trusted.MaxCostUSD
		case "max_tokens":
			c.MaxTokens = trusted.MaxTokens
		case "mcp_servers":
			if trusted.MCP == nil {
				c.MCP = nil
				break
			}
			m := &persona.MCPServers{Names: slices.Clone(trusted.MCP.Names)}
			if p.MCP != nil {
				for _, s := range p.MCP.Inline {
					if h, ok := trusted.MCP.Inline[s.Name]; ok && h == ServerHash(s) {
						m.Inline = append(m.Inline, s)
					}
				}
			}
			c.MCP = m
		}
	}
	return &c, changes
}
