// Command harness runs coding-agent turns from the terminal and serves them
// over HTTP, JSON-RPC and IRC to the Chirality command center.
//
//	harness turn [flags] MESSAGE               one turn in the current directory
//	harness serve [flags]                      the /api/harness gateway and web console
//	harness replay SESSION_ID MESSAGE          re-run a turn exactly as the gateway would
//	harness sessions list|show|rm              stored sessions
//	harness personas list|show|prompt          personas and the prompt they build
//	harness trust list|show|accept             see and trust what an agent cannot grant itself
//	harness usage [--by session|engine|model|day]  what the sessions' turns used and cost
//	harness nodes [--url URL] [--json]         a cluster's nodes (serve --node) and the sessions each owns
//	harness nodes move SESSION NODE            move a session to a node that sees its root (shared storage)
//	harness agent serve [flags]                one conversation over HTTP (what harness tui talks to)
//	harness rpc [flags]                        JSON-RPC 2.0 on stdin/stdout: threads, turns, approvals
//	harness tui [flags]                        a conversation with the agent in the terminal
//	harness mcp [flags]                        the harness as an MCP server on stdin/stdout (package mcpserver)
//	harness agents start|status|pause|resume|stop|skills install
//	                                           agents on IRC, one daemon each (agents.yaml)
//	harness channel send|read|ask|join|part|channels|who|topic|compact|clear
//	                                           an IRC agent's skill CLI (needs HARNESS_NICK)
//	harness completion bash|zsh|fish           a shell completion script on stdout
//	harness version                            versions of harness, the pinned CLI and Go
//	harness help [COMMAND…]                    a command's help
//
// The commands are github.com/spf13/cobra commands (main.go builds the
// tree); a flag several commands take is declared once, in flags.go.
// Flags may come before, between or after the arguments; "--" ends them.
// Run `harness COMMAND --help` (or -h, or `harness help COMMAND`) for a
// command's flags: help goes to stdout and exits 0, for every command.
//
// MCP servers: serve, agent serve, tui, rpc, mcp and turn take --mcp-config
// FILE (.mcp.json form, repeatable): harness.Config.MCP, merged over each
// project's .mcp.json and under a persona's mcp_servers. A turn run
// straight on an engine (turn without --session/--persona) gets the
// project's .mcp.json and the flag's servers the same way.
//
// Exit status: 0 success, 1 failure, 2 a usage error (an unknown flag or
// command, a missing or extra argument, a malformed value: the message
// names it on stderr, nothing goes to stdout), 130 a turn interrupted.
package main
