package mcpconfig_test

import (
	"fmt"

	"github.com/chirality/harness/mcpconfig"
)

func Example() {
	project, _ := mcpconfig.Parse([]byte(`{"mcpServers": {
		"everything": {"command": "npx", "args": ["@modelcontextprotocol/server-everything"]},
		"tracker": {"type": "http", "url": "http://127.0.0.1:8080/mcp", "headers": {"Authorization": "Bearer ${TRACKER_TOKEN}"}}
	}}`), ".mcp.json")
	flag, _ := mcpconfig.Parse([]byte(`{"mcpServers": {"tracker": {"command": "tracker-mcp"}}}`), "--mcp-config")
	cfg, _ := mcpconfig.Merge(project, flag).Expand(func(string) (string, bool) { return "t0ken", true })
	for _, s := range cfg.Servers {
		fmt.Println(s)
	}
	fmt.Println(mcpconfig.ToolName("everything", "echo"))
	// Output:
	// everything (stdio: npx)
	// tracker (stdio: tracker-mcp)
	// mcp__everything__echo
}
