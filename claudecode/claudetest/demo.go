package claudetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// DemoOptions tunes DemoResponder. The zero value gives the defaults.
type DemoOptions struct {
	// LongChunks and LongChunkDelay shape the answer to a message that
	// contains "long": LongChunks pieces (default 600), LongChunkDelay
	// apart (default 50ms), so the interrupt button can be tried.
	LongChunks     int
	LongChunkDelay time.Duration
	// ChunkDelay paces ordinary answers (default 15ms), so they visibly
	// stream.
	ChunkDelay time.Duration
}

// DemoAllowedTools are the --allowedTools the demo needs: in dontAsk mode
// the CLI denies any tool no rule allows, and the demo runs `ls -la`.
var DemoAllowedTools = []string{"Bash(ls:*)"}

// DemoResponder answers like a small, honest model, so the whole UI can
// be exercised without an API key (`harness serve --demo`):
//
//   - a message: a thinking block, streamed markdown (a heading, a list,
//     code), then a Bash tool use running `ls -la` in the project;
//   - the follow-up request carrying the tool result: a summary saying
//     how many entries the listing had;
//   - a message containing "long": a long answer streamed slowly;
//   - a message containing "touch": a shell tool use that creates
//     demo-marker.txt (a permission mode that asks asks for it), then a
//     summary of what its result says happened; on an engine with no
//     shell tool, an answer that says so.
//
// Failure modes need an explicit command at the start of the message, so
// ordinary words ("are there any error handling issues?") are answered
// normally (see [DemoCommandError]):
//
//   - "/demo error": a 400 API error, on every request of that turn.
//   - "/demo plan": a plan ended with ExitPlanMode (DemoPlan), when the
//     request offers that tool.
//
// The CLI's own side requests (titles, quota probes) get a short answer.
// Use it with FakeAPI.SetResponder.
func DemoResponder(opts DemoOptions) func(*Request) Reply {
	if opts.LongChunks <= 0 {
		opts.LongChunks = 600
	}
	if opts.LongChunkDelay <= 0 {
		opts.LongChunkDelay = 50 * time.Millisecond
	}
	if opts.ChunkDelay <= 0 {
		opts.ChunkDelay = 15 * time.Millisecond
	}
	return func(req *Request) Reply {
		if isSideRequest(req) || !req.Stream {
			return TextReply("Harness demo")
		}
		prompt := lastPrompt(req)
		lower := strings.ToLower(prompt)
		switch {
		case demoCommand(prompt) == DemoCommandError:
			return Reply{Status: 400, ErrorMessage: "demo: you asked for an error, so here is a 400 from the fake Messages API"}
		case lastIsToolResult(req):
			return demoSummary(req, opts)
		case demoCommand(prompt) == DemoCommandPlan:
			// The CLI may defer ExitPlanMode (not in tools until searched
			// for); it has it whenever it has Bash.
			if !offers(req, "ExitPlanMode") && !offers(req, "Bash") {
				return Reply{Blocks: []Block{Text("This engine offers me no plan tool (ExitPlanMode), so there is no plan to review here. " +
					"Try `/demo plan` in permission mode plan on claude-code.")}, ChunkSize: 6, ChunkDelay: opts.ChunkDelay}
			}
			return Reply{Blocks: []Block{Text("Here is my plan.\n"), ToolUse("", "ExitPlanMode", map[string]any{"plan": DemoPlan})},
				ChunkSize: 6, ChunkDelay: opts.ChunkDelay}
		case strings.Contains(lower, "long"):
			return demoLong(opts)
		case strings.Contains(lower, "touch"):
			// A tool that changes the project: in a permission mode that
			// asks, a person must approve it.
			shell := shellTool(req)
			if shell == "" {
				return Reply{Blocks: []Block{Text("This engine offers me no shell tool, so I cannot create `demo-marker.txt` here. " +
					"Try the same message on an engine with one (claude-code, claude-acp, opencode, copilot).")},
					ChunkSize: 6, ChunkDelay: opts.ChunkDelay}
			}
			return Reply{Blocks: []Block{Text("I will create the file `demo-marker.txt`.\n"),
				ToolUse("", shell, map[string]any{"command": DemoTouchCommand, "description": "Create a marker file"})},
				ChunkSize: 6, ChunkDelay: opts.ChunkDelay}
		}
		return Reply{
			Blocks: []Block{
				Thinking("The user said: " + oneLine(prompt, 120) + ". I will answer with some markdown, then look at the project with ls -la."),
				Text("## Demo answer\n\nYou said: *" + oneLine(prompt, 200) + "*\n\nThis answer comes from the harness **demo** model:\n\n" +
					"- it streams markdown token by token,\n- it thinks first,\n- and it runs a real tool.\n\n" +
					"```go\nfmt.Println(\"hello from the demo\")\n```\n\nLet me list the project files.\n"),
				demoTool(req),
			},
			ChunkSize:  6,
			ChunkDelay: opts.ChunkDelay,
		}
	}
}

// DemoCommandError, sent as a message of its own ("/demo error", words
// may follow), makes the demo model answer that turn with a 400 API
// error: the way to see how a failed turn looks.
const DemoCommandError = "/demo error"

// demoCommand is the demo command prompt starts with ("/demo" and the
// word after it, lower case), or "".
func demoCommand(prompt string) string {
	f := strings.Fields(oneLine(prompt, 40))
	if len(f) < 2 || !strings.EqualFold(f[0], "/demo") {
		return ""
	}
	return "/demo " + strings.ToLower(f[1])
}

// DemoCommandPlan ("/demo plan") makes the demo model end a plan with
// ExitPlanMode (DemoPlan): in permission mode plan, with approvals on,
// the turn waits for a person's review (plan:ready).
const DemoCommandPlan = "/demo plan"

// DemoPlan is the plan "/demo plan" proposes.
const DemoPlan = "## Demo plan\n\n1. Read `README.md`.\n2. Add a line to it.\n3. Run the tests."

// offers reports whether the request offers the tool name.
func offers(req *Request, name string) bool {
	for _, t := range req.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// DemoTouchCommand is the shell command the demo model asks to run when
// a message says "touch": one that changes the project, so a permission
// mode that asks puts it to a person.
const DemoTouchCommand = "touch demo-marker.txt"

// shellTool is the shell tool the request offers: Bash (the Claude Code
// CLI, claude-agent-acp), bash (OpenCode, Copilot), or "" (the native
// engine has none).
func shellTool(req *Request) string {
	for _, t := range req.Tools {
		if t == "Bash" || t == "bash" {
			return t
		}
	}
	return ""
}

// toolCommand is the shell command of the tool use id in the request's
// conversation ("" when it is not found or has none).
func toolCommand(req *Request, id string) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		for _, c := range req.Messages[i].Content {
			if c.Type == "tool_use" && c.ID == id {
				var in struct{ Command string }
				_ = json.Unmarshal(c.Input, &in)
				return in.Command
			}
		}
	}
	return ""
}

// demoTool is the demo's real tool use: Bash `ls -la` for the Claude Code
// CLI and claude-agent-acp, list_dir for the native engine (whose request
// offers it), bash `ls -la` for OpenCode and Copilot (their shell tool).
func demoTool(req *Request) Block {
	for _, t := range req.Tools {
		switch t {
		case "list_dir":
			return ToolUse("", "list_dir", map[string]any{"path": "."})
		case "bash":
			return ToolUse("", "bash", map[string]any{"command": "ls -la", "description": "List the project files"})
		}
	}
	return ToolUse("", "Bash", map[string]any{"command": "ls -la", "description": "List the project files"})
}

// lastPrompt is the text the user typed last: the last text block that
// is not a reminder the CLI inserted, in the newest user message that
// has one. Only the last block: after a failed turn its message stays
// unanswered, and the Claude Code CLI and the native engine send it again
// in one user message with the next one ("/demo error", then "hello"):
// reading them all made every later turn fail too (issue 34.4).
func lastPrompt(req *Request) string {

	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" {
			continue
		}
		for j := len(m.Content) - 1; j >= 0; j-- {
			if c := m.Content[j]; c.Type == "text" && !strings.HasPrefix(strings.TrimSpace(c.Text), "<system-reminder>") {
				return c.Text
			}
		}
	}
	return ""
}

func lastIsToolResult(req *Request) bool {
	if len(req.Messages) == 0 {
		return false
	}
	m := req.Messages[len(req.Messages)-1]
	if m.Role != "user" {
		return false
	}
	for _, c := range m.Content {
		if c.Type == "tool_result" {
			return true
		}
	}
	return false
}

// demoSummary reports what the last tool result listed.
func demoSummary(req *Request, opts DemoOptions) Reply {
	m := req.Messages[len(req.Messages)-1]
	var out, id string
	failed := false
	for _, c := range m.Content {
		if c.Type == "tool_result" {
			out, failed, id = c.Content, c.IsError, c.ToolUseID
		}
	}
	// What ran is the tool use the result answers, not what the message
	// asked for (issue 34.3: "touch" on an engine without a shell ran the
	// listing, and the summary claimed the file was made).
	touch := toolCommand(req, id) == DemoTouchCommand
	switch {
	case failed && touch:
		return Reply{Blocks: []Block{Text("The command `" + DemoTouchCommand + "` did not run, so `demo-marker.txt` was not created: " + oneLine(out, 200))}, ChunkSize: 6, ChunkDelay: opts.ChunkDelay}
	case failed:
		return Reply{Blocks: []Block{Text("The listing failed: " + oneLine(out, 200))}, ChunkSize: 6, ChunkDelay: opts.ChunkDelay}
	case touch:
		return Reply{Blocks: []Block{Text("The command `" + DemoTouchCommand + "` ran without an error: `demo-marker.txt` is in the project now.")}, ChunkSize: 6, ChunkDelay: opts.ChunkDelay}
	}
	var listed struct {
		Entries *string `json:"entries"`
	}
	if json.Unmarshal([]byte(out), &listed) == nil && listed.Entries != nil {
		out = *listed.Entries // the native engine's list_dir answers {"entries": "<ls -al>"}
	}
	n := CountListingEntries(out)
	return Reply{
		Blocks:     []Block{Text(fmt.Sprintf("### Summary\n\nI saw **%d %s** in the project (not counting `.` and `..`).", n, entriesWord(n)))},
		ChunkSize:  6,
		ChunkDelay: opts.ChunkDelay,
	}
}

// CountListingEntries counts the entries of `ls -la` output, leaving out
// the "total" line and the . and .. entries.
func CountListingEntries(out string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] == "total" {
			continue
		}
		if name := f[len(f)-1]; name == "." || name == ".." {
			continue
		}
		n++
	}
	return n
}

func demoLong(opts DemoOptions) Reply {
	var b strings.Builder
	b.WriteString("## A long answer\n\n")
	for i := 1; b.Len() < opts.LongChunks*8; i++ {
		fmt.Fprintf(&b, "%d. this line streams slowly; press stop to interrupt it\n", i)
	}
	text := b.String()
	size := len([]rune(text))/opts.LongChunks + 1
	return Reply{Blocks: []Block{Text(text)}, ChunkSize: size, ChunkDelay: opts.LongChunkDelay}
}

// oneLine is s with its runs of white space made one space, cut to n
// runes with an ellipsis. It reads only as much of s as it needs (a
// message can be megabytes).
func oneLine(s string, n int) string {
	var b strings.Builder
	count, space := 0, false
	for _, r := range strings.TrimSpace(s) {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			if count == n {
				return b.String() + "…"
			}
			b.WriteByte(' ')
			count++
			space = false
		}
		if count == n {
			return b.String() + "…"
		}
		b.WriteRune(r)
		count++
	}
	return b.String()
}

// entriesWord is "entry" for one, "entries" otherwise ("1 entries" read badly).
func entriesWord(n int) string {
	if n == 1 {
		return "entry"
	}
	return "entries"
}
