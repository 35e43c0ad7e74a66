package gateway

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// chained are the forms a prompt-injected agent tries once a person has
// answered "always" to `touch ok.txt`: each runs (or writes) something
// the person never saw. None may be resolved by a rule; each must be put
// to a person (here: denied) and never run.
var chained = []string{
	"touch ok.txt $(touch pwned)",
	"touch ok.txt `touch pwned`",
	"touch ok.txt | touch pwned",
	"touch ok.txt > pwned",
	"touch ok.txt && touch pwned",
	"touch ok.txt; touch pwned",
	"touch ok.txt & touch pwned",
	"touch ok.txt\ntouch pwned",
	`touch ok.txt "$(touch pwned)"`,
	"touch ok.txt <(touch pwned)",
}

// ruleTurn is one turn of the rules test: the model runs command with
// Bash; answer says what a person answers when asked ("" = expect no
// question: the session's rule must resolve it).
type ruleTurn struct {
	command, answer string
}

// TestAlwaysNeverAllowsChainedCommands: through the gateway, with the
// real Claude Code CLI against the fake Messages API, a person answers
// "always" to `touch ok.txt`; approval:requested shows the rule that
// answer stores, and exactly that rule is stored. The same command is
// then allowed by the rule, and every chained form is put to a person
// (deny) and never runs — with the exact rule, and again with the wider
// rule Claude Code suggests (Bash(touch ok.txt *)), as a session stored
// before the core narrowed "always" holds.
func TestAlwaysNeverAllowsChainedCommands(t *testing.T) {
	s := newServerWith(t, func(c *harness.Config) { c.Approvals, c.PermissionMode = true, "default" }, nil)
	var mu sync.Mutex
	var command string
	s.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		last := r.Messages[len(r.Messages)-1]
		if slices.ContainsFunc(last.Content, func(c claudetest.ContentBlock) bool { return c.Type == "tool_result" }) {
			return claudetest.TextReply("done")
		}
		mu.Lock()
		defer mu.Unlock()
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash", map[string]any{"command": command, "description": "run it"})}}
	})
	_, out := s.createJSON(map[string]any{})
	id := sessionID(t, out)
	pwned, ok := filepath.Join(s.root, "pwned"), filepath.Join(s.root, "ok.txt")

	// turn runs one turn and returns its approval:requested and
	// approval:resolved events.
	turn := func(rt ruleTurn) (reqs []*event.ApprovalRequested, res []*event.ApprovalResolved) {
		t.Helper()
		mu.Lock()
		command = rt.command
		mu.Unlock()
		b, _ := json.Marshal(map[string]string{"sessionId": id, "message": "run the command"})
		resp := s.send("POST", "/api/harness/turn?events=all", string(b))
		defer resp.Body.Close()
		readSSE(t, resp.Body, func(e sseEvent) bool {
			switch e.Event.Type {
			case event.TypeApprovalRequested:
				reqs = append(reqs, e.Event.Approval)
				if rt.answer != "" {
					// 200 only while the request is open: a rule that
					// resolved it first makes this 409.
					body := fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":%q}`, id, e.Event.Approval.RequestID, rt.answer)
					if code, out := s.do("POST", "/api/harness/approval", body); code != 200 {
						t.Errorf("%q: answering %s got %d %s: the request was not left to a person", rt.command, rt.answer, code, out)
					}
				}
			case event.TypeApprovalResolved:
				res = append(res, e.Event.Resolved)
			}
			return e.Event.Type == event.TypeProcessExit
		})
		return reqs, res
	}

	// "always" on the harmless command: the request shows the exact rule,
	// which is what the session stores.
	reqs, res := turn(ruleTurn{"touch ok.txt", "always"})
	if len(reqs) != 1 || reqs[0].Rule != "Bash(touch ok.txt)" {
		t.Fatalf("approval:requested %+v, want one showing rule Bash(touch ok.txt)", reqs)
	}
	t.Logf("Claude Code's suggestions for touch ok.txt: %s", reqs[0].Suggestions)
	if len(res) != 1 || res[0].By != event.ByUser || res[0].Decision != event.DecisionAllow {
		t.Fatalf("resolved %s, want allowed by the person", resolutions(res))
	}
	if _, err := os.Stat(ok); err != nil {
		t.Fatalf("the allowed command did not run: %v", err)
	}
	sess, err := s.h.Session(id)
	if err != nil || !slices.Equal(sess.Rules, []string{"Bash(touch ok.txt)"}) {
		t.Fatalf("session rules %q (%v), want exactly what the request showed", sess.Rules, err)
	}

	check := func(rule string, forms []string) {
		t.Helper()
		// the command itself: resolved by the rule, nobody asked
		os.Remove(ok)
		reqs, res := turn(ruleTurn{"touch ok.txt", ""})
		if len(reqs) != 1 || len(res) != 1 || res[0].By != event.ByRule || res[0].Decision != event.DecisionAllow {
			t.Fatalf("with %s, touch ok.txt: %d requests, resolved %s, want allowed by the rule", rule, len(reqs), resolutions(res))
		}
		if _, err := os.Stat(ok); err != nil {
			t.Fatalf("with %s, touch ok.txt did not run: %v", rule, err)
		}
		for _, c := range forms {
			reqs, res := turn(ruleTurn{c, "deny"})
			if len(reqs) != 1 || len(res) != 1 || res[0].By != event.ByUser || res[0].Decision != event.DecisionDeny {
				t.Errorf("with %s, %q: %d requests, resolved %s, want put to a person and denied", rule, c, len(reqs), resolutions(res))
			}
			if _, err := os.Stat(pwned); err == nil {
				t.Fatalf("with %s, %q ran: %s exists", rule, c, pwned)
			}
		}
	}
	// (the exact rule cannot match a longer line: three forms suffice)
	check("Bash(touch ok.txt)", chained[:3])

	// The wider rule a session stored before "always" was narrowed (the
	// agent's suggestion), as a person's grant: in the trust record (what
	// is honoured) and the session file (what is shown), between turns.
	if err := s.h.Trust().AddRule(s.root, id, "Bash(touch ok.txt *)"); err != nil {
		t.Fatal(err)
	}
	path := session.FilePath(s.root, id)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["rules"] = []string{"Bash(touch ok.txt *)"}
	raw, _ = json.Marshal(m)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if sess, err := s.h.Session(id); err != nil || !slices.Equal(sess.Rules, []string{"Bash(touch ok.txt *)"}) {
		t.Fatalf("session rules %q (%v) after the edit", sess.Rules, err)
	}
	check("Bash(touch ok.txt *)", chained)
}

func resolutions(res []*event.ApprovalResolved) string {
	var out []string
	for _, r := range res {
		out = append(out, r.Decision+" by "+r.By)
	}
	return fmt.Sprint(out)
}
