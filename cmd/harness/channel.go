package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chirality/harness/ipc"
	"github.com/chirality/harness/irc"
)

const channelUsage = `usage: harness channel COMMAND [--json] [args]

The agent's own IRC commands (the skill CLI). They talk to the daemon of
the agent named by $HARNESS_NICK, which the daemon sets for its agent.

  send <channel> <message>             post (lines and long text are split;
                                       40 IRC lines at most)
  read <channel> [limit]               the last messages (default 50)
  ask <channel> [--timeout N] <question>
                                       post and wait up to N seconds (default
                                       300) for a reply addressed to the agent
  join <channel>                       join a channel
  part <channel>                       leave a channel
  channels                             the channels the agent is in
  who <target>                         who is in a channel
  topic <channel> [text]               the topic, or set it
  compact                              summarize the conversation into a new session
  clear                                start a new session for the next prompt

Quote channel names in a shell: '#dev'. --json prints the daemon's data.
A supervisor's note to the agent is printed on stderr as
"[supervisor CORRECTION] …" before the command's output.
`

// channelCommands are the channel subcommands, as its usage lists them.
var channelCommands = []struct{ use, short string }{
	{"send <channel> <message>", "post (lines and long text are split; 40 IRC lines at most)"},
	{"read <channel> [limit]", "the last messages (default 50)"},
	{"ask <channel> [--timeout N] <question>", "post and wait up to N seconds for a reply addressed to the agent"},
	{"join <channel>", "join a channel"},
	{"part <channel>", "leave a channel"},
	{"channels", "the channels the agent is in"},
	{"who <target>", "who is in a channel"},
	{"topic <channel> [text]", "the topic, or set it"},
	{"compact", "summarize the conversation into a new session"},
	{"clear", "start a new session for the next prompt"},
}

func (c *cli) channelCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "channel COMMAND [--json] [args]",
		Short: "an IRC agent's own commands: send, read, ask, join, who, topic…",
		Long:  channelUsage,
		Args:  cobra.ArbitraryArgs,
	}
	cmd.RunE = c.group("command")
	var asJSON bool
	var timeout float64
	flagJSON(cmd.PersistentFlags(), &asJSON, "print the daemon's data as JSON")
	for _, sc := range channelCommands {
		sub := &cobra.Command{
			Use: sc.use, Short: sc.short,
			Args: cobra.ArbitraryArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				return exitWith(channelRun(cmd.Name(), args, asJSON, timeout, c.stdout, c.stderr))
			},
		}
		if sub.Name() == "ask" {
			sub.Flags().Float64Var(&timeout, "timeout", 300, "seconds to wait for an answer")
		}
		cmd.AddCommand(sub)
	}
	return cmd
}

// channelRun runs the channel command cmd with its arguments pos.
func channelRun(cmd string, pos []string, asJSON bool, timeout float64, stdout, stderr io.Writer) int {
	usageErr := func(msg string) int {
		fmt.Fprintf(stderr, "harness channel %s: %s\n", cmd, msg)
		return 2
	}
	req := ipc.Request{}
	switch cmd {
	case "send":
		if len(pos) < 2 {
			return usageErr("want <channel> <message>")
		}
		req = ipc.Request{Type: ipc.CmdIRCSend, Channel: pos[0], Message: strings.Join(pos[1:], " ")}
	case "read":
		if len(pos) < 1 || len(pos) > 2 {
			return usageErr("want <channel> [limit]")
		}
		req = ipc.Request{Type: ipc.CmdIRCRead, Channel: pos[0]}
		if len(pos) == 2 {
			n, err := strconv.Atoi(pos[1])
			if err != nil || n < 1 {
				return usageErr(fmt.Sprintf("limit %q is not a positive number", pos[1]))
			}
			req.Limit = n
		}
	case "ask":
		if len(pos) < 2 {
			return usageErr("want <channel> <question>")
		}
		if timeout <= 0 || timeout > 86400 {
			return usageErr("--timeout must be between 0 and 86400 seconds")
		}
		req = ipc.Request{Type: ipc.CmdIRCAsk, Channel: pos[0], Message: strings.Join(pos[1:], " "), Timeout: timeout}
	case "join", "part":
		if len(pos) != 1 {
			return usageErr("want <channel>")
		}
		req = ipc.Request{Type: map[string]string{"join": ipc.CmdIRCJoin, "part": ipc.CmdIRCPart}[cmd], Channel: pos[0]}
	case "channels", "compact", "clear":
		if len(pos) != 0 {
			return usageErr(fmt.Sprintf("unexpected argument %q", pos[0]))
		}
		req = ipc.Request{Type: map[string]string{"channels": ipc.CmdIRCChannels, "compact": ipc.CmdCompact, "clear": ipc.CmdClear}[cmd]}
	case "who":
		if len(pos) != 1 {
			return usageErr("want <target>")
		}
		req = ipc.Request{Type: ipc.CmdIRCWho, Target: pos[0]}
	case "topic":
		if len(pos) < 1 {
			return usageErr("want <channel> [text]")
		}
		req = ipc.Request{Type: ipc.CmdIRCTopic, Channel: pos[0]}
		if len(pos) > 1 {
			t := strings.Join(pos[1:], " ")
			req.Topic = &t
		}
	}
	nick := os.Getenv("HARNESS_NICK")
	if nick == "" {
		fmt.Fprintln(stderr, "harness channel: HARNESS_NICK is not set (the agent daemon sets it for its agent)")
		return 2
	}
	resp, _, code := callDaemon(nick, req, stderr)
	if code != 0 {
		return code
	}
	if asJSON {
		stdout.Write(append(resp.Data, '\n'))
		return 0
	}
	printChannelData(cmd, resp.Data, stdout)
	return 0
}

// printChannelData prints a response readably.
func printChannelData(cmd string, data json.RawMessage, w io.Writer) {
	var d struct {
		Channel  string         `json:"channel"`
		Channels []string       `json:"channels"`
		Messages []irc.Message  `json:"messages"`
		Answer   *irc.Message   `json:"answer"`
		Users    []irc.WhoEntry `json:"users"`
		Topic    string         `json:"topic"`
		Queued   string         `json:"queued"`
	}
	_ = json.Unmarshal(data, &d)
	line := func(m irc.Message) string {
		return fmt.Sprintf("%s <%s> %s", m.Time.Local().Format(time.TimeOnly), m.Sender, m.Text)
	}
	switch cmd {
	case "send":
		fmt.Fprintf(w, "sent to %s\n", d.Channel)
	case "read":
		if len(d.Messages) == 0 {
			fmt.Fprintf(w, "no messages in %s\n", d.Channel)
		}
		for _, m := range d.Messages {
			fmt.Fprintln(w, line(m))
		}
	case "ask":
		if d.Answer != nil {
			fmt.Fprintln(w, line(*d.Answer))
		}
	case "join", "part", "channels":
		if len(d.Channels) == 0 {
			fmt.Fprintln(w, "in no channel")
		} else {
			fmt.Fprintln(w, strings.Join(d.Channels, " "))
		}
	case "who":
		for _, u := range d.Users {
			fmt.Fprintf(w, "%s (%s@%s)\n", u.Nick, u.User, u.Host)
		}
	case "topic":
		if d.Topic == "" {
			fmt.Fprintf(w, "%s has no topic\n", d.Channel)
		} else {
			fmt.Fprintf(w, "%s: %s\n", d.Channel, d.Topic)
		}
	case "compact", "clear":
		fmt.Fprintf(w, "%s queued: it runs after the current turn\n", d.Queued)
	}
}
