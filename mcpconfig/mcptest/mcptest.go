// Package mcptest finds the MCP reference servers pinned in package.json
// (installed with the other agents into the module root's node_modules)
// and builds the configurations the engines' MCP tests share.
package mcptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chirality/harness/mcpconfig"
)

// EverythingEntry is server-everything's start script inside node_modules.
const EverythingEntry = "@modelcontextprotocol/server-everything/dist/index.js"

// Find returns the path of entry (a path under node_modules) in the
// working directory's node_modules or any parent's.
func Find(entry string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "node_modules", entry)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("mcptest: no node_modules/%s in the working directory or a parent; run `make cli`", entry)
		}
		dir = parent
	}
}

// Everything is the reference server-everything (stdio, run with node)
// under name, with env given to it. It fails t when the server or node is
// missing: the MCP tests must not pass without it.
func Everything(t testing.TB, name string, env map[string]string) mcpconfig.Server {
	t.Helper()
	p, err := Find(EverythingEntry)
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("mcptest: node: %v", err)
	}
	return mcpconfig.Server{Name: name, Type: mcpconfig.Stdio, Command: node, Args: []string{p, "stdio"}, Env: env}
}

// Broken is a stdio server whose command does not exist: it fails to
// start.
func Broken(name string) mcpconfig.Server {
	return mcpconfig.Server{Name: name, Type: mcpconfig.Stdio, Command: "/nonexistent/harness-mcptest-server"}
}

// Config is a configuration of servers.
func Config(servers ...mcpconfig.Server) *mcpconfig.Config {
	return &mcpconfig.Config{Servers: servers}
}
