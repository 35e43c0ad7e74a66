package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/chirality/harness/persona"
)

func init() { register("personas", runPersonas) }

const personasUsage = `usage:
  harness personas list [--project-root DIR] [--json]
  harness personas show ID [--project-root DIR] [--json]
  harness personas prompt ID [--mode workbench|pipeline|direct] [--project-root DIR]

list    every persona of the project (agents/AGENT_*.md) and the built-in
        ones it does not override; exits 1 if a persona file is broken
show    one persona's settings and instructions
prompt  the system prompt assembled for ID, exactly as sent to Claude Code
`

// runPersonas implements `harness personas`. It returns the exit status:
// 0 success, 1 failure (a missing or broken persona), 2 usage error.
func runPersonas(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, personasUsage)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, personasUsage)
		return 0
	case "list":
		return personasList(args[1:], stdout, stderr)
	case "show":
		return personasShow(args[1:], stdout, stderr)
	case "prompt":
		return personasPrompt(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "harness personas: unknown subcommand %q\n%s", args[0], personasUsage)
	return 2
}

// newSubFlags returns a FlagSet that reports errors on stderr and
// the shared --project-root flag.
func newSubFlags(name string, stderr io.Writer, usage string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	root := fs.String("project-root", ".", "project root directory")
	return fs, root
}

// parseSubArgs parses flags placed anywhere and checks the positional count.
// It returns the exit status to use when ok is false.
func parseSubArgs(fs *flag.FlagSet, args []string, wantPositional int, stderr io.Writer) (pos []string, status int, ok bool) {
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, 0, false
	}
	if err != nil {
		return nil, 2, false
	}
	if len(pos) != wantPositional {
		if wantPositional == 0 {
			fmt.Fprintf(stderr, "harness %s: unexpected argument %q\n", fs.Name(), pos[0])
		} else if len(pos) < wantPositional {
			fmt.Fprintf(stderr, "harness %s: missing ID\n", fs.Name())
		} else {
			fmt.Fprintf(stderr, "harness %s: unexpected argument %q\n", fs.Name(), pos[wantPositional])
		}
		fs.Usage()
		return nil, 2, false
	}
	return pos, 0, true
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

func personasList(args []string, stdout, stderr io.Writer) int {
	fs, root := newSubFlags("personas list", stderr, personasUsage)
	asJSON := fs.Bool("json", false, "print JSON")
	if _, status, ok := parseSubArgs(fs, args, 0, stderr); !ok {
		return status
	}
	entries, err := persona.List(*root)
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
	if *asJSON {
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

func personasShow(args []string, stdout, stderr io.Writer) int {
	fs, root := newSubFlags("personas show", stderr, personasUsage)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, status, ok := parseSubArgs(fs, args, 1, stderr)
	if !ok {
		return status
	}
	p, err := persona.Load(*root, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "harness: %s\n", userError(err))
		return 1
	}
	if *asJSON {
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

func personasPrompt(args []string, stdout, stderr io.Writer) int {
	fs, root := newSubFlags("personas prompt", stderr, personasUsage)
	modeFlag := fs.String("mode", string(persona.ModeWorkbench), "workbench, pipeline or direct")
	pos, status, ok := parseSubArgs(fs, args, 1, stderr)
	if !ok {
		return status
	}
	mode, err := persona.ParseMode(*modeFlag)
	if err != nil {
		fmt.Fprintf(stderr, "harness: --mode: %s\n", userError(err))
		return 2
	}
	p, err := persona.Load(*root, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "harness: %s\n", userError(err))
		return 1
	}
	prompt, err := persona.BuildSystemPrompt(*root, p, mode)
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
