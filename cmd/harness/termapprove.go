package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/permrule"
)

// termApprover puts an ephemeral turn's approval questions to the person
// at the terminal, one at a time: [a]llow / [d]eny / al[w]ays. It is the
// engine.Approver of `harness turn` without a session (a session's turn
// is asked through the core, by asker). "always" allows the use it was
// asked about for the rest of the turn (permrule.Exact: never wider than
// what the person saw); nothing is kept after the turn.
//
// A question is denied when its context ends (the turn was interrupted)
// or the input ends. What the agent asked to run is shown scrubbed and
// without control characters, so a tool input cannot drive the terminal.
type termApprover struct {
	out io.Writer

	mu    sync.Mutex // one question at a time
	rules []string   // the uses a person allowed "always", this turn
	lines chan string
}

func newTermApprover(in io.Reader, out io.Writer) *termApprover {
	a := &termApprover{out: out, lines: make(chan string)}
	go func() { // the reader ends with the input; a pending read holds no lock
		defer close(a.lines)
		r := bufio.NewReader(in)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				a.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	return a
}

// Ask implements engine.Approver.
func (a *termApprover) Ask(ctx context.Context, q engine.ApprovalRequest) engine.ApprovalDecision {
	a.mu.Lock()
	defer a.mu.Unlock()
	// A use that may run outside the agent's sandbox is asked each time
	// and "always" allows it once.
	if !q.Unsandboxed && permrule.Allowed(a.rules, q.ToolName, q.Input) {
		return engine.ApprovalDecision{Allow: true}
	}
	where := ""
	if q.Unsandboxed {
		where = " (MAYBE OUTSIDE its sandbox)"
	}
	for {
		fmt.Fprintf(a.out, "\n%s wants to run%s: %s\n[a]llow / [d]eny / al[w]ays? ",
			printable(q.ToolName, 80), where, printable(secrets.Scrub(string(q.Input)), 200))
		var line string
		select {
		case <-ctx.Done():
			fmt.Fprintln(a.out, "(no answer: denied)")
			return engine.ApprovalDecision{Message: "the turn ended before a person answered"}
		case l, ok := <-a.lines:
			if !ok {
				fmt.Fprintln(a.out, "(no more input: denied)")
				return engine.ApprovalDecision{Message: "no person answered"}
			}
			line = l
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "a", "allow", "y", "yes":
			return engine.ApprovalDecision{Allow: true}
		case "d", "deny", "n", "no":
			return engine.ApprovalDecision{Message: "denied by the person at the terminal"}
		case "w", "always":
			if q.Unsandboxed {
				return engine.ApprovalDecision{Allow: true}
			}
			a.rules = append(a.rules, permrule.Exact(q.ToolName, q.Input))
			return engine.ApprovalDecision{Allow: true, Always: true}
		default:
			fmt.Fprintln(a.out, "answer a, d or w")
		}
	}
}

// printable is s on one line, at most n runes, with every control
// character shown as "?" (an agent's text must not move the cursor,
// clear the screen or retitle the terminal of the person it asks).
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t' || r == '\r':
			return ' '
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == '\u2028' || r == '\u2029' || r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069':
			return '?'
		}
		return r
	}, s)
	return oneLine(s, n)
}
