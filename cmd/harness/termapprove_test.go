package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/chirality/harness/engine"
)

func bashAsk(cmd string) engine.ApprovalRequest {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return engine.ApprovalRequest{ToolName: "Bash", Input: in}
}

func TestTermApproverAnswers(t *testing.T) {
	in := strings.NewReader("maybe\nd\na\nw\n")
	var out lockedBuffer
	a := newTermApprover(in, &out)
	ctx := context.Background()

	if d := a.Ask(ctx, bashAsk("rm -rf x")); d.Allow || d.Message == "" {
		t.Fatalf("an unknown answer is asked again, then d denies with a message: %+v", d)
	}
	if !strings.Contains(out.String(), "answer a, d or w") {
		t.Fatalf("an unknown answer is not explained: %q", out.String())
	}
	if d := a.Ask(ctx, bashAsk("ls")); !d.Allow || d.Always {
		t.Fatalf("a allows once: %+v", d)
	}
	if d := a.Ask(ctx, bashAsk("make test")); !d.Allow || !d.Always {
		t.Fatalf("w allows always: %+v", d)
	}
	// the input has ended: only what "always" covered is still allowed,
	// and it is not asked again
	asked := strings.Count(out.String(), "wants to run")
	if d := a.Ask(ctx, bashAsk("make test")); !d.Allow {
		t.Fatalf("the use allowed always is allowed again: %+v", d)
	}
	if n := strings.Count(out.String(), "wants to run"); n != asked {
		t.Fatalf("the use allowed always was asked again (%d questions, then %d)", asked, n)
	}
	if d := a.Ask(ctx, bashAsk("make test && touch pwned")); d.Allow {
		t.Fatalf("always is never wider than the use the person saw: %+v", d)
	}
}

func TestTermApproverDeniesWhenTheTurnEnds(t *testing.T) {
	pr, pw := io.Pipe() // input that never answers
	defer pw.Close()
	var out lockedBuffer
	a := newTermApprover(pr, &out)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan engine.ApprovalDecision)
	go func() { done <- a.Ask(ctx, bashAsk("ls")) }()
	cancel()
	if d := <-done; d.Allow {
		t.Fatalf("a question whose turn ended is allowed: %+v", d)
	}
}

func TestTermApproverShowsNoControlCharacters(t *testing.T) {
	var out lockedBuffer
	a := newTermApprover(strings.NewReader("d\n"), &out)
	a.Ask(context.Background(), bashAsk("echo \x1b]0;owned\x07\x1b[2J\u202egnp.exe"))
	for _, c := range []string{"\x1b", "\x07", "\u202e"} {
		if strings.Contains(out.String(), c) {
			t.Fatalf("the question shows the agent's control character %q: %q", c, out.String())
		}
	}
}

// A use the engine marks as running outside the agent's sandbox says so,
// is asked each time, and "always" allows it once, remembering nothing.
func TestTermApproverUnsandboxedAskedEachTime(t *testing.T) {
	in := strings.NewReader("w\n")
	var out lockedBuffer
	a := newTermApprover(in, &out)
	q := bashAsk("make install")
	q.Unsandboxed = true
	if d := a.Ask(context.Background(), q); !d.Allow || d.Always {
		t.Fatalf("w allows an unsandboxed use once: %+v", d)
	}
	if !strings.Contains(out.String(), "wants to run (MAYBE OUTSIDE its sandbox)") {
		t.Fatalf("the question does not say the use leaves the sandbox: %q", out.String())
	}
	// the input has ended: nothing was remembered, so it is denied
	if d := a.Ask(context.Background(), q); d.Allow {
		t.Fatalf("an unsandboxed use was allowed by an earlier always: %+v", d)
	}
	if d := a.Ask(context.Background(), bashAsk("make install")); d.Allow {
		t.Fatalf("the same use in the sandbox was allowed by the unsandboxed one's always: %+v", d)
	}
}
