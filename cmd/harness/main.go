// Command harness runs Claude Code turns from the terminal and serves them
// over HTTP to the Chirality command center.
//
//	harness turn [flags] MESSAGE          one turn in the current directory
//	harness serve [flags]                 the /api/harness gateway and web console
//	harness replay SESSION_ID MESSAGE     re-run a turn exactly as the gateway would
//	harness sessions list|show|rm         stored sessions
//	harness personas list|show|prompt     personas and the prompt they build
//	harness agent serve [flags]           one conversation over HTTP (what harness tui talks to)
//	harness agents start|status|…         agents on IRC, one daemon each (agents.yaml)
//	harness channel send|read|ask|…       an IRC agent's skill CLI (needs HARNESS_NICK)
//	harness version                       versions of harness, the pinned CLI and Go
//
// Run `harness COMMAND --help` for a command's flags: help goes to stdout
// and exits 0, for every command.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/persona"
	"github.com/chirality/harness/session"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// commands maps a subcommand to its entry point. Each returns the exit
// status: 0 success, 1 failure, 2 usage error.
var commands = map[string]func(args []string, stdout, stderr io.Writer) int{}

func register(name string, fn func(args []string, stdout, stderr io.Writer) int) {
	commands[name] = fn
}

func run(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		usage(stderr)
		return 2
	case args[0] == "-h" || args[0] == "--help":
		usage(stdout)
		return 0
	case args[0] == "help" && len(args) == 1:
		usage(stdout)
		return 0
	case args[0] == "help":
		return run(append(args[1:2], "--help"), stdout, stderr)
	case args[0] == "--version" || args[0] == "-version":
		printVersion(stdout)
		return 0
	}
	fn, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "harness: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if wantsHelp(args[1:]) {
		// Help is uniform: on stdout, exit 0, whatever the command's own
		// flag set does with -h.
		if code := fn(args[1:], stdout, stdout); code != 2 {
			return code
		}
		return 0
	}
	return fn(args[1:], stdout, stderr)
}

// wantsHelp reports whether args ask for help (before any "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--help", "-help":
			return true
		}
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: harness COMMAND [flags] [args]

commands:
  turn      run one Claude Code turn and stream its events
  serve     serve the /api/harness gateway and the web console
  replay    re-run a stored session's turn exactly as the gateway would
  sessions  list, show or remove stored sessions
  personas  list, show personas and print the prompt they build
  agent     serve one conversation over HTTP (agent serve)
  rpc       JSON-RPC 2.0 on stdin/stdout: threads, turns, approvals
  tui       a conversation with the agent in the terminal
  agents    run agents on IRC (agents start|status|pause|resume|stop|skills)
  channel   an IRC agent's own commands: send, read, ask, join, who, topic…
  version   print the versions of harness, the pinned Claude CLI and Go

Run 'harness COMMAND --help' for a command's flags.
`)
}

// parseInterleaved parses flags that may come before, between or after the
// positional arguments (`harness personas prompt ID --mode pipeline`), and
// returns the positionals. A lone "--" ends flag parsing.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if rest[0] == "--" || (len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--") {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// stringList is a repeatable or comma-separated flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*s = append(*s, part)
		}
	}
	return nil
}

// claudeBinHelp documents the one search for the claude CLI, used by
// every command.
const claudeBinHelp = "claude executable (default: $HARNESS_CLAUDE_BIN, then claude on PATH, then ./node_modules/.bin/claude, then node_modules/.bin/claude beside this harness binary)"

// parseNoArgs parses a command that takes flags only (anywhere among the
// arguments). --help prints usage and the flags to stdout. When ok is
// false the command returns code: 0 after help, 2 for a usage error.
// The usage goes to stderr: run passes stdout as stderr when help is asked
// for, so help lands on stdout and a usage error's text on stderr.
func parseNoArgs(fs *flag.FlagSet, usage string, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		flags := 0
		fs.VisitAll(func(*flag.Flag) { flags++ })
		if flags > 0 {
			fmt.Fprint(stderr, "\nflags:\n")
			fs.SetOutput(stderr)
			fs.PrintDefaults()
		}
	}
	pos, err := parseInterleaved(fs, args)
	switch {
	case err == flag.ErrHelp:
		return 0, false
	case err != nil:
		return 2, false
	case len(pos) > 0:
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), pos[0])
		return 2, false
	}
	return 0, true
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
	if errors.Is(err, session.ErrInvalidID) || errors.Is(err, harness.ErrInvalidID) || errors.Is(err, persona.ErrInvalidID) ||
		errors.Is(err, claudecode.ErrInvalidOptions) {
		return 2
	}
	return 1
}
