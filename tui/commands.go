package tui

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Command is a slash command typed in the input box instead of a message.
//
//	/model NAME     the model of the next turns
//	/agent NAME     the persona (agent) of the next turns
//	/mode NAME      the permission mode of the next turns
//	/fork           continue in a copy of the conversation (the server moves to it)
//	/rewind [N]     go back N turns (default 1): asks whether to restore the files,
//	                cut the conversation, or both; --files, --conversation or
//	                --both answer it on the line
//	/trust          trust, as shown, the persona file and MCP servers the last
//	                turn did not honour (its trust notices)
//	/queue          the prompts queued behind the running turn (a message sent
//	                while a turn runs is queued); /queue edit N TEXT,
//	                /queue move N M and /queue delete N change the Nth
//	                (1 = next to run)
//	/steer TEXT     put TEXT into the running turn (the agent takes it at its
//	                next step, where its engine can); refused when no turn runs
//	/sessions       the project's sessions: which runs, which waits, and the
//	                branch of each one in a git worktree of its own
//	/help           the keys and commands
//
// A line that starts with "//" is a message starting with "/" (one slash
// is dropped); any other line starting with "/" that is not one of these
// commands is a message too (the demo's "/demo error").
type Command struct {
	Name string // model, agent, mode, fork, rewind, trust, queue, steer, sessions, help
	Arg  string // model, agent, mode: the name asked for; queue edit, steer: the text
	// rewind: how many turns back (1 = before the last turn), and what to
	// undo; neither set means the TUI asks.
	Turns               int
	Files, Conversation bool
	// queue: Sub is "" (list), edit, move or delete; Index the prompt
	// (1 = next to run), To where move puts it (1 = next).
	Sub       string
	Index, To int
}

// Commands are the slash commands, as the help modal lists them.
var Commands = [][2]string{
	{"/model NAME", "the model of the next turns"},
	{"/agent NAME", "the agent (persona) of the next turns"},
	{"/mode NAME", "the permission mode (default, plan, …)"},
	{"/fork", "continue in a copy of this conversation"},
	{"/rewind [N]", "undo N turns: asks files, conversation or"},
	{"", "both (or say it: --files, --conversation, --both)"},
	{"/trust", "trust what the last turn's notices show"},
	{"/sessions", "the project's sessions, each worktree's branch"},
	{"//text", "send a message that starts with /"},
	{"/queue", "the prompts sent while a turn ran, queued"},
	{"", "/queue edit N TEXT · move N M · delete N"},
	{"/steer TEXT", "put TEXT into the running turn"},
}

// ErrCommand is matched by every error of a malformed command.
var ErrCommand = errors.New("command")

// MaxRewindTurns bounds /rewind N.
const MaxRewindTurns = 1000

// ParseCommand reads a line of input. isCmd is false for a message: msg is
// then what to send (line, or line without its first slash for "//…"). A
// malformed command is isCmd true with an error matching ErrCommand that
// says how to write it.
func ParseCommand(line string) (c Command, isCmd bool, msg string, err error) {
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "//") {
		return Command{}, false, line[1:], nil
	}
	if !strings.HasPrefix(line, "/") {
		return Command{}, false, line, nil
	}
	fields := strings.Fields(line[1:])
	if len(fields) == 0 {
		return Command{}, false, line, nil
	}
	c.Name, fields = fields[0], fields[1:]
	bad := func(format string, args ...any) (Command, bool, string, error) {
		return Command{}, true, "", fmt.Errorf("%w: "+format, append([]any{ErrCommand}, args...)...)
	}
	switch c.Name {
	case "model", "agent", "mode":
		if len(fields) != 1 {
			return bad("/%s takes one name: /%s NAME", c.Name, c.Name)
		}
		c.Arg = fields[0]
	case "fork", "help", "trust", "sessions":
		if len(fields) != 0 {
			return bad("/%s takes nothing", c.Name)
		}
	case "rewind":
		c.Turns = 1
		seenN := false
		for _, f := range fields {
			switch f {
			case "--files", "-f":
				c.Files = true
			case "--conversation", "--conv", "-c":
				c.Conversation = true
			case "--both", "-b":
				c.Files, c.Conversation = true, true
			default:
				n, err := strconv.Atoi(f)
				if err != nil || seenN || n < 1 || n > MaxRewindTurns {
					return bad("/rewind [N] [--files | --conversation | --both]: N is how many turns back (1 to %d); got %q", MaxRewindTurns, clipArg(f))
				}
				c.Turns, seenN = n, true
			}
		}
	case "queue":
		return parseQueue(line, fields)
	case "steer":
		if len(fields) == 0 {
			return bad("/steer takes the message for the running turn: /steer TEXT")
		}
		c.Arg = strings.TrimSpace(line[len("/steer"):]) // as typed
	default:
		return Command{}, false, line, nil // a message (the demo's "/demo error")
	}
	return c, true, "", nil
}

// MaxQueueIndex bounds /queue's N and M (the core queues at most 100).
const MaxQueueIndex = 1000

// parseQueue reads /queue's forms; line is the whole line (edit keeps
// its text as typed).
func parseQueue(line string, fields []string) (Command, bool, string, error) {
	c := Command{Name: "queue"}
	usage := func(got string) (Command, bool, string, error) {
		return Command{}, true, "", fmt.Errorf("%w: /queue, /queue edit N TEXT, /queue move N M or /queue delete N (N from 1, the next to run); got %q", ErrCommand, clipArg(got))
	}
	index := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= 1 && n <= MaxQueueIndex
	}
	if len(fields) == 0 {
		return c, true, "", nil
	}
	var ok bool
	switch c.Sub = fields[0]; c.Sub {
	case "edit":
		if len(fields) < 3 {
			return usage(strings.Join(fields, " "))
		}
		if c.Index, ok = index(fields[1]); !ok {
			return usage(fields[1])
		}
		// the text after N, as typed
		rest := strings.TrimSpace(line[strings.Index(line, "edit")+len("edit"):])
		c.Arg = strings.TrimSpace(strings.TrimPrefix(rest, fields[1]))
	case "move":
		if len(fields) != 3 {
			return usage(strings.Join(fields, " "))
		}
		if c.Index, ok = index(fields[1]); !ok {
			return usage(fields[1])
		}
		if c.To, ok = index(fields[2]); !ok {
			return usage(fields[2])
		}
	case "delete", "rm":
		c.Sub = "delete"
		if len(fields) != 2 {
			return usage(strings.Join(fields, " "))
		}
		if c.Index, ok = index(fields[1]); !ok {
			return usage(fields[1])
		}
	default:
		return usage(c.Sub)
	}
	return c, true, "", nil
}

func clipArg(s string) string {
	if r := []rune(s); len(r) > 32 {
		return string(r[:32]) + "…"
	}
	return s
}

// turnsText is "1 turn", "3 turns".
func turnsText(n int) string {
	if n == 1 {
		return "1 turn"
	}
	return strconv.Itoa(n) + " turns"
}
