package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chirality/harness/persona"
)

const personasUsage = `usage:
  harness personas list [--project-root DIR] [--json]
  harness personas show ID [--project-root DIR] [--json]
  harness personas prompt ID [--mode workbench|pipeline|direct] [--project-root DIR]

list    every persona of the project (agents/AGENT_*.md) and the built-in
        ones it does not override; exits 1 if a persona file is broken
show    one persona's settings and instructions
prompt  the system prompt assembled for ID, exactly as sent to Claude Code
`

func (c *cli) personasCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "personas list|show|prompt",
		Short: "list, show personas and print the prompt they build",
		Long:  personasUsage,
		Args:  cobra.ArbitraryArgs,
	}
	cmd.RunE = c.group("subcommand")
	var root, mode string
	var asJSON bool
	list := &cobra.Command{
		Use: "list [--project-root DIR] [--json]", Short: "every persona of the project and the built-in ones it does not override",
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return exitWith(personasList(root, asJSON, c.stdout, c.stderr)) },
	}
	show := &cobra.Command{
		Use: "show ID [--project-root DIR] [--json]", Short: "one persona's settings and instructions",
		Args: exactArgs("ID"),
		RunE: func(_ *cobra.Command, args []string) error {
			return exitWith(personasShow(root, args[0], asJSON, c.stdout, c.stderr))
		},
	}
	prompt := &cobra.Command{
		Use: "prompt ID [--mode workbench|pipeline|direct] [--project-root DIR]", Short: "the system prompt assembled for ID, exactly as sent",
		Args: exactArgs("ID"),
		RunE: func(_ *cobra.Command, args []string) error {
			return exitWith(personasPrompt(root, args[0], mode, c.stdout, c.stderr))
		},
	}
	flagMode(prompt, &mode, string(persona.ModeWorkbench), "workbench, pipeline or direct")
	for _, sub := range []*cobra.Command{list, show, prompt} {
		flagProjectRoot(sub, &root, ".", "project root directory")
		if sub != prompt {
			flagJSON(sub.Flags(), &asJSON, "print JSON")
		}
		cmd.AddCommand(sub)
	}
	return cmd
}

// runPersonas is `harness personas ARGS…`.
func runPersonas(args []string, stdout, stderr io.Writer) int {
	return run(append([]string{"personas"}, args...), stdout, stderr)
}

// personaJSON is the --json form of a persona: the persona's own JSON
// fields (unset lists null, an empty list "none"), plus the body for
// `show` and the error of a broken file for `list`.
type personaJSON struct {
	*persona.Persona
	Body  *string `json:"body,omitempty"`
	Error string  `json:"error,omitempty"`
}

func toPersonaJSON(p *persona.Persona) personaJSON { return personaJSON{Persona: p} }

func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func personasList(root string, asJSON bool, stdout, stderr io.Writer) int {
	entries, err := persona.List(root)
	if err != nil {
		fmt.Fprintf(stderr, "harness: %s\n", userError(err))
		return 1
	}
	broken := 0
	for _, e := range entries {
		if e.Err != nil {
			broken++
		}
	}
	if asJSON {
		out := make([]personaJSON, 0, len(entries))
		for _, e := range entries {
			if e.Err != nil {
				out = append(out, personaJSON{Persona: &persona.Persona{ID: e.ID, SourceFile: e.SourceFile}, Error: e.Err.Error()})
				continue
			}
			out = append(out, toPersonaJSON(e.Persona))
		}
		if err := writeIndentedJSON(stdout, out); err != nil {
			fmt.Fprintf(stderr, "harness: %s\n", userError(err))
			return 1
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTOOLS\tSOURCE\tDESCRIPTION")
		for _, e := range entries {
			if e.Err != nil {
				fmt.Fprintf(tw, "%s\t-\t%s\tBROKEN (see below)\n", e.ID, e.SourceFile)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.ID, personaToolsText(e.Persona.Tools), e.SourceFile, e.Persona.Description)
		}
		tw.Flush()
	}
	for _, e := range entries {
		if e.Err != nil {
			fmt.Fprintf(stderr, "harness: %v\n", e.Err)
		}
	}
	if broken > 0 {
		return 1
	}
	return 0
}

// personaToolsText renders a tool list: "(unset)" for nil, "(none)" for empty.
func personaToolsText(tools []string) string {
	switch {
	case tools == nil:
		return "(unset)"
	case len(tools) == 0:
		return "(none)"
	}
	return strings.Join(tools, ",")
}

func personasShow(root, id string, asJSON bool, stdout, stderr io.Writer) int {
	p, err := persona.Load(root, id)
	if err != nil {
		fmt.Fprintf(stderr, "harness: %s\n", userError(err))
		return 1
	}
	if asJSON {
		j := toPersonaJSON(p)
		j.Body = &p.Body
		if err := writeIndentedJSON(stdout, j); err != nil {
			fmt.Fprintf(stderr, "harness: %s\n", userError(err))
			return 1
		}
		return 0
	}
	unset := func(s string) string {
		if s == "" {
			return "(unset)"
		}
		return s
	}
	maxTurns := "(unset)"
	if p.MaxTurns > 0 {
		maxTurns = fmt.Sprint(p.MaxTurns)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id:\t%s\n", p.ID)
	fmt.Fprintf(tw, "source:\t%s\n", p.SourceFile)
	fmt.Fprintf(tw, "description:\t%s\n", unset(p.Description))
	fmt.Fprintf(tw, "tools:\t%s\n", personaToolsText(p.Tools))
	fmt.Fprintf(tw, "disallowed tools:\t%s\n", personaToolsText(p.DisallowedTools))
	fmt.Fprintf(tw, "auto-approve tools:\t%s\n", personaToolsText(p.AutoApproveTools))
	fmt.Fprintf(tw, "max turns:\t%s\n", maxTurns)
	fmt.Fprintf(tw, "model:\t%s\n", unset(p.Model))
	fmt.Fprintf(tw, "permission mode:\t%s\n", unset(p.PermissionMode))
	tw.Flush()
	fmt.Fprintf(stdout, "\n%s", p.Body)
	if p.Body != "" && !strings.HasSuffix(p.Body, "\n") {
		fmt.Fprintln(stdout)
	}
	return 0
}

func personasPrompt(root, id, modeFlag string, stdout, stderr io.Writer) int {
	mode, err := persona.ParseMode(modeFlag)
	if err != nil {
		fmt.Fprintf(stderr, "harness: --mode: %s\n", userError(err))
		return 2
	}
	p, err := persona.Load(root, id)
	if err != nil {
		fmt.Fprintf(stderr, "harness: %s\n", userError(err))
		return 1
	}
	prompt, err := persona.BuildSystemPrompt(root, p, mode)
	if err != nil {
		fmt.Fprintf(stderr, "harness: %s\n", userError(err))
		return 1
	}
	if _, err := io.WriteString(stdout, prompt); err != nil {
		fmt.Fprintf(stderr, "harness: %s\n", userError(err))
		return 1
	}
	return 0
}
