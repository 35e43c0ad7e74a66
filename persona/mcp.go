package persona

import (
	"encoding/json"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/chirality/harness/mcpconfig"
)

// MCPServers is a persona's `mcp_servers:`, a list whose items are either
// the name of a server in the project's .mcp.json or the server's
// --mcp-config, or a one-key mapping giving a server inline, in
// .mcp.json's entry form:
//
//	mcp_servers:
//	  - everything
//	  - tracker:
//	      command: node
//	      args: [tracker.js]
//	      env: {TOKEN: "${TRACKER_TOKEN}"}
//
// A session of the persona gets exactly these servers (mcpconfig.Select);
// `mcp_servers: []` gives it none.
type MCPServers struct {
	Names  []string
	Inline []mcpconfig.Server
}

func decodeMCPServers(file string, v *yaml.Node) (*MCPServers, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("want a list of server names or NAME: {command: …} entries, got %s", describe(v))
	}
	m := &MCPServers{Names: []string{}}
	seen := map[string]bool{}
	for _, item := range v.Content {
		bad := func(format string, args ...any) error {
			return &lineError{line: item.Line, err: fmt.Errorf(format, args...)}
		}
		var name string
		switch {
		case item.Kind == yaml.ScalarNode && item.ShortTag() == "!!str":
			name = item.Value
			if !mcpconfig.ValidName(name) {
				return nil, bad("%q is not a server name", name)
			}
			m.Names = append(m.Names, name)
		case item.Kind == yaml.MappingNode && len(item.Content) == 2:
			name = item.Content[0].Value
			var entry any
			if err := item.Content[1].Decode(&entry); err != nil {
				return nil, bad("server %q: %v", name, err)
			}
			raw, err := json.Marshal(entry)
			if err != nil {
				return nil, bad("server %q: %v", name, err)
			}
			s, err := mcpconfig.ParseEntry(name, raw, file)
			if err != nil {
				// The entry's own message, without the file (ParseError adds it).
				if e, ok := err.(*mcpconfig.Error); ok {
					return nil, bad("server %q: %s", name, e.Msg)
				}
				return nil, bad("%v", err)
			}
			m.Inline = append(m.Inline, s)
		default:
			return nil, bad("an item is a server name or one NAME: {command: …} entry, got %s", describe(item))
		}
		if seen[name] {
			return nil, bad("server %q is listed twice", name)
		}
		seen[name] = true
	}
	return m, nil
}
