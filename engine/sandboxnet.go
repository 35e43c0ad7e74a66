package engine

import (
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/sandbox"
)

// SandboxNet is the network a sandboxed agent of this request may use:
// nil (open) with OpenNetwork, else TCP connections to the ports of
// modelURLs (the model APIs the engine configured its agent with, ""
// for an API at its default https address), of the proxy the agent's
// env names and of the session's HTTP and SSE MCP servers, plus bind's
// ports (an agent that listens: 0 for an ephemeral port). Landlock's
// rules are by port: a port allowed is allowed on every host.
func (r Request) SandboxNet(env []string, bind []uint16, modelURLs ...string) *sandbox.Net {
	if r.OpenNetwork {
		return nil
	}
	urls := append([]string(nil), modelURLs...)
	if r.MCP != nil {
		for _, s := range r.MCP.Servers {
			if s.Type == mcpconfig.HTTP || s.Type == mcpconfig.SSE {
				urls = append(urls, s.URL)
			}
		}
	}
	n := sandbox.NetFor(env, urls...)
	n.Bind = append(n.Bind, bind...)
	return n
}
