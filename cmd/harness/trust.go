package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chirality/harness/session"
	"github.com/chirality/harness/trust"
)

const trustUsage = `usage:
  harness trust list [--project-root DIR] [--state-dir DIR] [--mcp-config FILE] [--json]
  harness trust show persona|mcp NAME [--project-root DIR] [--state-dir DIR] [--json]
  harness trust accept persona|mcp NAME [--hash HASH] [--project-root DIR] [--state-dir DIR]

What an agent can write in a project (persona files, session files,
.mcp.json) grants nothing until a person trusts it. The record of what a
person trusted lives in the state directory, outside every project; these
commands work on it offline, no server needed.

list    what waits: persona files whose grants widened since a person
        trusted them (each change), project MCP servers nobody trusted
show    one of them: what changed, and its hash
accept  trust it as it is now (with --hash: only if it is still what you
        were shown, else exit 1)
`

func (c *cli) trustCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trust list|show|accept",
		Short: "see and trust what an agent cannot grant itself (persona files, .mcp.json servers)",
		Long:  trustUsage,
		Args:  cobra.ArbitraryArgs,
	}
	cmd.RunE = c.group("subcommand")
	var root, stateDir, hash string
	var asJSON bool
	var mcpFlag mcpConfigFlag
	list := &cobra.Command{
		Use: "list [--project-root DIR] [--json]", Short: "what waits for a person's trust",
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			return exitWith(trustList(root, stateDir, &mcpFlag, asJSON, c.stdout, c.stderr))
		},
	}
	show := &cobra.Command{
		Use: "show KIND NAME", Short: "one thing that waits (KIND persona or mcp): what changed and its hash",
		Args: exactArgs("KIND", "NAME"),
		RunE: func(_ *cobra.Command, args []string) error {
			return exitWith(trustShow(root, stateDir, &mcpFlag, args[0], args[1], asJSON, c.stdout, c.stderr))
		},
	}
	accept := &cobra.Command{
		Use: "accept KIND NAME [--hash HASH]", Short: "trust it (KIND persona or mcp) as it is now",
		Args: exactArgs("KIND", "NAME"),
		RunE: func(_ *cobra.Command, args []string) error {
			return exitWith(trustAccept(root, stateDir, args[0], args[1], hash, c.stdout, c.stderr))
		},
	}
	accept.Flags().StringVar(&hash, "hash", "", "the hash you were shown (list, show, the trust:required event): refuse if it changed since")
	for _, sub := range []*cobra.Command{list, show, accept} {
		flagProjectRoot(sub, &root, ".", "project root directory")
		flagStateDir(sub.Flags(), &stateDir)
		if sub != accept {
			flagJSON(sub.Flags(), &asJSON, "print JSON")
			flagMCPConfig(sub, &mcpFlag)
		}
		cmd.AddCommand(sub)
	}
	return cmd
}

// openTrust resolves the project root as the Harness does (absolute,
// symlinks resolved: the record's key) and opens the record.
func openTrust(root, stateDir string) (string, *trust.Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", nil, err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", nil, fmt.Errorf("project root: %w", err)
	}
	if stateDir == "" {
		if stateDir, err = session.DefaultStateDir(); err != nil {
			return "", nil, err
		}
	}
	st, err := trust.Open(stateDir)
	return abs, st, err
}

func pendingItems(root, stateDir string, mcpFlag *mcpConfigFlag, stderr io.Writer) (string, []trust.Item, bool) {
	abs, st, err := openTrust(root, stateDir)
	if err != nil {
		fmt.Fprintln(stderr, "harness trust:", err)
		return "", nil, false
	}
	items, err := st.Pending(abs, mcpFlag.Config())
	if err != nil {
		fmt.Fprintln(stderr, "harness trust:", err)
		if items == nil {
			return "", nil, false
		}
	}
	return abs, items, true
}

func trustList(root, stateDir string, mcpFlag *mcpConfigFlag, asJSON bool, stdout, stderr io.Writer) int {
	abs, items, ok := pendingItems(root, stateDir, mcpFlag, stderr)
	if !ok {
		return 1
	}
	if asJSON {
		return printJSON(stdout, stderr, items)
	}
	if len(items) == 0 {
		fmt.Fprintf(stdout, "nothing waits for your trust in %s\n", abs)
		return 0
	}
	for _, it := range items {
		printItem(stdout, it)
	}
	return 0
}

func printJSON(stdout, stderr io.Writer, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintln(stderr, "harness trust:", err)
		return 1
	}
	fmt.Fprintln(stdout, string(b))
	return 0
}

func printItem(w io.Writer, it trust.Item) {
	fmt.Fprintf(w, "%s %s\n", it.Kind, it.Name)
	if it.Path != "" {
		fmt.Fprintf(w, "  file:  %s\n", it.Path)
	}
	if it.Definition != "" {
		fmt.Fprintf(w, "  runs:  %s\n", it.Definition)
	}
	for _, c := range it.Changes {
		fmt.Fprintf(w, "  %s: %s → %s\n", c.Field, c.Trusted, c.Now)
	}
	fmt.Fprintf(w, "  hash:  %s\n  %s\n  trust it: harness trust accept %s %s --hash %s\n", it.Hash, it.Reason, it.Kind, it.Name, it.Hash)
}

func trustShow(root, stateDir string, mcpFlag *mcpConfigFlag, kind, name string, asJSON bool, stdout, stderr io.Writer) int {
	_, items, ok := pendingItems(root, stateDir, mcpFlag, stderr)
	if !ok {
		return 1
	}
	for _, it := range items {
		if it.Kind == kind && it.Name == name {
			if asJSON {
				return printJSON(stdout, stderr, it)
			}
			printItem(stdout, it)
			return 0
		}
	}
	fmt.Fprintf(stderr, "harness trust: %s %s does not wait for trust (see harness trust list)\n", kind, name)
	return 1
}

func trustAccept(root, stateDir, kind, name, hash string, stdout, stderr io.Writer) int {
	abs, st, err := openTrust(root, stateDir)
	if err != nil {
		fmt.Fprintln(stderr, "harness trust:", err)
		return 1
	}
	if hash == "" {
		// trusted as it is now: the person at the terminal decides
		if hash, err = currentHash(abs, kind, name); err != nil {
			fmt.Fprintln(stderr, "harness trust:", err)
			return 1
		}
	}
	it, err := st.Accept(abs, kind, name, "", hash)
	if err != nil {
		fmt.Fprintln(stderr, "harness trust:", err)
		return 1
	}
	what := it.Name
	if it.Path != "" {
		what = it.Path
	}
	fmt.Fprintf(stdout, "trusted %s %s (%s)\n", it.Kind, what, strings.TrimSpace(it.Hash))
	return 0
}

// currentHash is the hash of persona NAME's file or server NAME's
// definition now.
func currentHash(root, kind, name string) (string, error) { return trust.CurrentHash(root, kind, name) }
