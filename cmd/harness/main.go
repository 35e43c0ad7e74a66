package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/lazyre"
	"github.com/chirality/harness/sandbox"
)

// The help lists the commands in the order newRoot adds them.
func init() { cobra.EnableCommandSorting = false }

func main() {
	// `harness __sandbox … -- CMD` confines itself and execs CMD; it is
	// handled before anything else is set up, so it stays cheap.
	sandbox.Main()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// cli is one run of the command line: its input and output, and what
// tests stand in for the process's signals with. Every command is built
// afresh for each run (newRoot), so no flag value outlives it.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	// serveStop, when hasServeStop, is what `serve` stops on instead of
	// SIGINT/SIGTERM (nil: never).
	serveStop    <-chan os.Signal
	hasServeStop bool
	// agentCtx, when set, is what `agent serve` stops on instead of the
	// first SIGINT/SIGTERM; agentSigs then cuts its grace period short
	// (nil: nothing does).
	agentCtx  context.Context
	agentSigs <-chan os.Signal
}

// run runs the command line args and returns the exit status: 0 success,
// 1 failure, 2 usage error.
func run(args []string, stdout, stderr io.Writer) int {
	return (&cli{stdin: os.Stdin, stdout: stdout, stderr: stderr}).run(args)
}

// exitCode is a command's exit status when it is not 0; the command has
// said why on stderr.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// usageError is a usage error found before a command runs (an argument
// missing or left over); run prints it and exits 2, as it does any error
// of cobra's or pflag's (an unknown flag or a malformed value).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func (c *cli) run(args []string) int {
	root := c.newRoot()
	root.SetArgs(append([]string{}, normalizeArgs(args)...))
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	if cmd == nil {
		cmd = root
	}
	fmt.Fprintf(c.stderr, "%s: %s\nRun '%s --help' for usage.\n", cmd.CommandPath(), err, cmd.CommandPath())
	return 2
}

// newRoot builds the command tree, with c's output, in the order the
// help lists the commands.
func (c *cli) newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "harness COMMAND [flags] [args]",
		Short:         "coding agents behind one core: a turn, a gateway, JSON-RPC, a TUI, IRC agents",
		Args:          cobra.ArbitraryArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       harnessVersion(),
	}
	root.RunE = c.group("command")
	root.SetVersionTemplate("{{ .Annotations.versionText }}")
	root.Annotations = map[string]string{"versionText": versionText()}
	root.SetIn(c.stdin)
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetHelpTemplate(helpTemplate)
	root.SetUsageTemplate(helpTemplate)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(c.turnCmd(), c.serveCmd(), c.nodesCmd(), c.replayCmd(), c.sessionsCmd(), c.personasCmd(), c.trustCmd(), c.usageCmd(), c.agentCmd(), c.rpcCmd(),
		c.tuiCmd(), c.agentsCmd(), c.channelCmd(), c.mcpCmd(), c.versionCmd(), c.completionCmd(root))
	root.SetHelpCommand(helpCmd(root))
	return root
}

// helpTemplate is every command's help: its usage text (Long, which
// begins "usage:"), or one made from Use and Short; the commands of one
// without a usage text of its own; and its flags.
const helpTemplate = `{{with .Long}}{{trimTrailingWhitespaces .}}
{{else}}usage: {{.UseLine}}

{{.Short}}
{{end}}{{if and (not .Long) .HasAvailableSubCommands}}
commands:
{{range .Commands}}{{if .IsAvailableCommand}}  {{rpad .Name .NamePadding}} {{.Short}}
{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}
flags:
{{trimTrailingWhitespaces .LocalFlags.FlagUsages}}
{{end}}{{if .HasAvailableInheritedFlags}}
flags of {{.Parent.CommandPath}}:
{{trimTrailingWhitespaces .InheritedFlags.FlagUsages}}
{{end}}{{if .HasAvailableSubCommands}}
Run '{{.CommandPath}} COMMAND --help' for a command's flags.
{{end}}`

// group is the RunE of a command made of subcommands (and of the root):
// without one it prints its help on stderr (exit 2); "help" prints it on
// stdout; any other word is an unknown subcommand.
func (c *cli) group(word string) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			cmd.SetOut(c.stderr)
			_ = cmd.Help()
			return exitCode(2)
		}
		if args[0] == "help" && len(args) == 1 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown %s %q", word, args[0])
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += " (did you mean " + strings.Join(s, " or ") + "?)"
		}
		return usageError{msg}
	}
}

// helpCmd is `harness help [COMMAND…]`: the command's help on stdout; an
// unknown command is a usage error.
func helpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND…]",
		Short: "print a command's help (the same as COMMAND --help)",
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			cmd, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, s := range cmd.Commands() {
				if s.IsAvailableCommand() {
					names = append(names, s.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 || target == nil {
				return usageErrorf("unknown command %q", strings.Join(args, " "))
			}
			target.InitDefaultHelpFlag() // as when it runs: its help lists -h
			target.SetOut(cmd.OutOrStdout())
			return target.Help()
		},
	}
}

// completionCmd is `harness completion bash|zsh|fish`: the shell's
// completion script, made by cobra from the command tree.
func (c *cli) completionCmd(root *cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "print a shell completion script (bash, zsh or fish)",
		Long: `usage: harness completion bash|zsh|fish

Prints the completion script of a shell on stdout: commands, flags and
the values of --engine, --mode and --permission-mode complete with Tab.

  bash  source <(harness completion bash)            (needs bash-completion)
  zsh   harness completion zsh > "${fpath[1]}/_harness"
  fish  harness completion fish > ~/.config/fish/completions/harness.fish
`,
		Args: cobra.ArbitraryArgs,
	}
	cmd.RunE = c.group("shell")
	for _, sh := range []struct {
		name string
		gen  func(io.Writer) error
	}{
		{"bash", func(w io.Writer) error { return root.GenBashCompletionV2(w, true) }},
		{"zsh", root.GenZshCompletion},
		{"fish", func(w io.Writer) error { return root.GenFishCompletion(w, true) }},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:   sh.name,
			Short: "the completion script of " + sh.name,
			Args:  noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if err := sh.gen(cmd.OutOrStdout()); err != nil {
					fmt.Fprintf(c.stderr, "harness completion %s: %v\n", sh.name, err)
					return exitCode(1)
				}
				return nil
			},
		})
	}
	return cmd
}

// noArgs is the Args of a command that takes flags only.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected argument %q", args[0])
	}
	return nil
}

// exactArgs is the Args of a command that takes the arguments named.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < len(names) {
			return usageErrorf("missing %s", strings.Join(names[len(args):], " and "))
		}
		if len(args) > len(names) {
			return usageErrorf("unexpected argument %q", args[len(names)])
		}
		return nil
	}
}

// exitWith turns a command's exit status into its RunE's error.
func exitWith(status int) error {
	if status == 0 {
		return nil
	}
	return exitCode(status)
}

// singleDashLong is a long flag written with one dash (-addr, -json=x), as
// Go's flag package, which harness used before cobra, took them.
var singleDashLong = lazyre.New(`^-[a-zA-Z][a-zA-Z0-9-]+(=.*)?$`)

// normalizeArgs keeps the command lines that worked before the CLI moved
// to cobra: a long flag with one dash before any "--" gets its second.
func normalizeArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if singleDashLong.MatchString(a) {
			a = "-" + a
		}
		out = append(out, a)
	}
	return out
}

// libraryPrefixes are the package names this module's errors begin with
// ("harness: root … does not exist"), which mean nothing to a person at the
// terminal.
var libraryPrefixes = []string{"harness: ", "claudecode: ", "engine: ", "engines: ", "native: ", "codex: ", "acp: ",
	"agentserver: ", "gateway: ", "session: ", "persona: ", "rpc: ", "irc: ", "daemon: ", "agents: "}

// userError is err's message for a person: without the package-name
// prefixes of the libraries it passed through.
func userError(err error) string {
	msg := err.Error()
	for trimmed := true; trimmed; {
		trimmed = false
		for _, p := range libraryPrefixes {
			if rest, ok := strings.CutPrefix(msg, p); ok {
				msg, trimmed = rest, true
			}
		}
	}
	return msg
}

// failCode is the exit status for err: 2 when it says an argument the user
// gave is malformed (a session id that is no UUID, an option the engine
// refuses), 1 for any other failure.
func failCode(err error) int {
	if errors.Is(err, engine.ErrInvalid) { // engine's error set: session.ErrInvalidID, claudecode.ErrInvalidOptions, …
		return 2
	}
	return 1
}
