package sandbox

import (
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/mcpconfig"
)

// NetOf is the network a sandboxed agent of request r may use: nil
// (open) with r.OpenNetwork, else TCP connections to the ports of
// modelURLs (the model APIs the engine configured its agent with, ""
// for an API at its default https address), of the proxy the agent's
// env names and of the session's HTTP and SSE MCP servers, plus bind's
// ports (an agent that listens: 0 for an ephemeral port). Landlock's
// rules are by port: a port allowed is allowed on every host.
func NetOf(r engine.Request, env []string, bind []uint16, modelURLs ...string) *Net {
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
	n := NetFor(env, urls...)
	n.Bind = append(n.Bind, bind...)
	return n
}
