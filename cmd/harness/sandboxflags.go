package main

import "github.com/spf13/cobra"

// --sandbox-open-network: the engines whose sandboxed agents keep an open
// network (harness.Config.SandboxOpenNetwork).
func flagSandboxOpenNetwork(cmd *cobra.Command, p *[]string) {
	cmd.Flags().StringSliceVar(p, "sandbox-open-network", nil, "with --sandbox: engines whose agents keep an open network (comma-separated; * = all). The others connect over TCP only to their model API's port, their proxy's and their HTTP MCP servers', and listen on none but their own loopback port (opencode's) (Landlock's network rules, Linux 6.7+; by port, not by host; UDP and Unix sockets are not limited)")
}
