package mcpserver_test

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/mcpserver"
)

// The harness as an MCP server, and a client of it in the same process.
// `harness mcp` serves it on stdio (mcp.IOTransport on stdin/stdout).
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	h, _ := harness.New(harness.Config{Roots: []string{dir}, StateDir: dir, NoProjectLogs: true,
		Engines: engines.Builtin(engines.Config{}), Aliases: engines.Aliases})
	defer h.Shutdown(context.Background())
	srv := mcpserver.New(h, mcpserver.Options{})

	ct, st := mcp.NewInMemoryTransports()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go srv.Run(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()
	tools, _ := cs.ListTools(ctx, nil)
	for _, t := range tools.Tools {
		fmt.Println(t.Name)
	}
	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_session", Arguments: map[string]any{"projectRoot": os.TempDir()}})
	fmt.Println(res.IsError)
	// Output:
	// create_session
	// get_transcript
	// get_usage
	// interrupt
	// list_engines
	// list_sessions
	// run_turn
	// true
}
