package codextest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// DemoOptions tunes DemoResponder. The zero value gives the defaults.
type DemoOptions struct {
	// LongChunks and LongChunkDelay shape the answer to a message that
	// contains "long" (defaults 600 and 50ms), so an interrupt can be
	// tried; ChunkDelay paces ordinary answers (default 15ms).
	LongChunks     int
	LongChunkDelay time.Duration
	ChunkDelay     time.Duration
	// Error, when set, says whether a prompt asks for the demo's API
	// error (answered with a 400); nil = never.
	Error func(prompt string) bool
}

// DemoResponder is the demo model on the Responses API: it answers as
// claudetest.DemoResponder does on the Messages API, so Codex in the
// demo looks like every other engine there:
//
//   - a message: a reasoning summary, streamed markdown, then the shell
//     tool running `ls -la` in the project;
//   - the follow-up request carrying the command's output: a summary
//     saying how many entries the listing had;
//   - a message containing "long": a long answer streamed slowly;
//   - a message opts.Error accepts: a 400 API error;
//   - a request in Codex's plan collaboration mode (a session in
//     permission mode plan): a proposed plan (DemoPlan), which the
//     harness puts to a person's review (plan:ready).
//
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
		prompt := req.LastPrompt()
		switch {
		case opts.Error != nil && opts.Error(prompt):
			return Reply{Status: 400, ErrorMessage: "demo: you asked for an error, so here is a 400 from the fake Responses API"}
		case req.CollaborationMode() == "plan" && !req.lastIsFunctionOutput():
			return Reply{Text: "Here is my plan.\n\n<proposed_plan>\n" + DemoPlan + "\n</proposed_plan>\n", Deltas: 12, ChunkDelay: opts.ChunkDelay}
		case req.lastIsFunctionOutput():
			outs := req.FunctionOutputs()
			out := outs[len(outs)-1]
			if !strings.Contains(out, "total ") {
				// No listing came back (denied, failed): say what did,
				// not "0 entries" (issue 34.3: the demo reads the result).
				return Reply{Text: "The listing did not run: " + oneLine(out, 200), Deltas: 8, ChunkDelay: opts.ChunkDelay}
			}
			n := countEntries(out)
			return Reply{Text: fmt.Sprintf("### Summary\n\nI saw **%d %s** in the project (not counting `.` and `..`).", n, entriesWord(n)),
				Deltas: 8, ChunkDelay: opts.ChunkDelay}
		case strings.Contains(strings.ToLower(prompt), "long"):
			var b strings.Builder
			b.WriteString("## A long answer\n\n")
			for i := 1; b.Len() < opts.LongChunks*8; i++ {
				fmt.Fprintf(&b, "%d. this line streams slowly; press stop to interrupt it\n", i)
			}
			return Reply{Text: b.String(), Deltas: opts.LongChunks, ChunkDelay: opts.LongChunkDelay}
		}
		return Reply{
			Reasoning: "The user said: " + oneLine(prompt, 120) + ". I will answer with some markdown, then look at the project with ls -la.",
			Text: "## Demo answer\n\nYou said: *" + oneLine(prompt, 200) + "*\n\nThis answer comes from the harness **demo** model:\n\n" +
				"- it streams markdown token by token,\n- it thinks first,\n- and it runs a real tool.\n\n" +
				"```go\nfmt.Println(\"hello from the demo\")\n```\n\nLet me list the project files.\n",
			Deltas: 40, ChunkDelay: opts.ChunkDelay,
			Call: &Call{Command: "ls -la"},
		}
	}
}

// DemoPlan is the plan DemoResponder proposes in Codex's plan mode.
const DemoPlan = "## Demo plan\n\n1. Read `README.md`.\n2. Add a line to it.\n3. Run the tests."

// LastPrompt is the text of the newest user message that is not context
// the agent inserted (environment, instructions: text starting with "<"
// or "# AGENTS.md").
func (r *Request) LastPrompt() string {
	for i := len(r.Input) - 1; i >= 0; i-- {
		var it struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal(r.Input[i], &it) != nil || (it.Type != "message" && it.Type != "") || it.Role != "user" {
			continue
		}
		var parts []string
		for _, c := range it.Content {
			t := strings.TrimSpace(c.Text)
			if t != "" && !strings.HasPrefix(t, "<") && !strings.HasPrefix(t, "# AGENTS.md") {
				parts = append(parts, c.Text)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n")
		}
	}
	return ""
}

func (r *Request) lastIsFunctionOutput() bool {
	if len(r.Input) == 0 {
		return false
	}
	var it struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(r.Input[len(r.Input)-1], &it) == nil && it.Type == "function_call_output"
}

// countEntries counts the entries of `ls -la` output (Codex may add a
// header before it), leaving out the "total" line and . and ..
func countEntries(out string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || len(f[0]) < 10 || !strings.ContainsAny(f[0][:1], "-dlcbps") {
			continue
		}
		if name := f[len(f)-1]; name == "." || name == ".." {
			continue
		}
		n++
	}
	return n
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// entriesWord is "entry" for one, "entries" otherwise ("1 entries" read badly).
func entriesWord(n int) string {
	if n == 1 {
		return "entry"
	}
	return "entries"
}
