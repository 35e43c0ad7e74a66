package harness

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// touchResponder makes the model run `touch marker` (times times, one
// tool use per request), then answer "done".
func touchResponder(times int) func(*claudetest.Request) claudetest.Reply {
	return func(r *claudetest.Request) claudetest.Reply {
		if n := len(r.ToolResults()); n < times {
			return claudetest.Reply{Blocks: []claudetest.Block{
				claudetest.ToolUse("", "Bash", map[string]any{"command": "touch marker", "description": "make the marker"}),
			}}
		}
		return claudetest.TextReply("done")
	}
}

func approvalEnv(t *testing.T, timeout time.Duration) *testEnv {
	return newTestEnv(t, func(c *Config) {
		c.Approvals = true
		c.PermissionMode = "default"
		c.ApprovalTimeout = timeout
	})
}

// pending waits for session id's next open approval request.
func (e *testEnv) pending(id string) event.ApprovalRequested {
	e.t.Helper()
	var got []event.ApprovalRequested
	waitFor(e.t, "an approval request", func() bool {
		got = e.h.PendingApprovals(id)
		return len(got) > 0
	})
	return got[0]
}

// runApproval starts a touch turn, answers its first request with ans,
// and returns the turn's events.
func runApproval(t *testing.T, e *testEnv, times int, answer func(id string, req event.ApprovalRequested)) []stored {
	t.Helper()
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	e.api.SetResponder(touchResponder(times))
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "make a marker"})
	if err != nil {
		t.Fatal(err)
	}
	req := e.pending(s.ID)
	var in map[string]any
	if err := json.Unmarshal(req.Input, &in); err != nil || in["command"] != "touch marker" || req.ToolName != "Bash" || req.ToolUseID == "" || req.RequestID == "" {
		t.Fatalf("request %+v: not the full tool use", req)
	}
	if answer != nil {
		answer(s.ID, req)
	}
	<-tr.Done()
	evs := e.follow(e.h, s.ID, tr.StartSeq)
	checkTurn(t, s.ID, tr.StartSeq, evs)
	if evs[0].Type != event.TypeUserMessage || evs[0].Text != "make a marker" {
		t.Fatalf("first event %+v, want user:message", evs[0].Event)
	}
	// The request is stored after its tool:start and before its result,
	// and every request is resolved exactly once within the turn.
	reqs, res := ofType(evs, event.TypeApprovalRequested), ofType(evs, event.TypeApprovalResolved)
	if len(reqs) != len(res) {
		t.Fatalf("%d requests, %d resolutions", len(reqs), len(res))
	}
	for i, r := range reqs {
		if res[i].Resolved.RequestID != r.Approval.RequestID || res[i].Seq < r.Seq {
			t.Fatalf("resolution %d %+v does not follow its request %+v", i, res[i].Resolved, r.Approval)
		}
		start := -1
		for j, ev := range evs {
			if ev.Type == event.TypeToolStart && ev.ToolStart.ToolUseID == r.Approval.ToolUseID {
				start = j
			}
			if ev.Seq == r.Seq && start < 0 {
				t.Fatalf("approval:requested before its tool:start")
			}
		}
	}
	return evs
}

func TestApprovalDenyAllowAlways(t *testing.T) {
	e := approvalEnv(t, time.Minute)
	marker := filepath.Join(e.root, "marker")

	t.Run("deny", func(t *testing.T) {
		evs := runApproval(t, e, 1, func(id string, req event.ApprovalRequested) {
			if err := e.h.Approve(id, req.RequestID, ApprovalAnswer{Decision: "deny", Message: "not today"}); err != nil {
				t.Fatal(err)
			}
		})
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the denied tool ran")
		}
		res := ofType(evs, event.TypeApprovalResolved)
		if len(res) != 1 || res[0].Resolved.Decision != "deny" || res[0].Resolved.By != "user" {
			t.Fatalf("resolved %+v", res)
		}
		results := ofType(evs, event.TypeToolResult)
		if len(results) != 1 || !results[0].ToolResult.IsError || !strings.Contains(results[0].ToolResult.Content, "not today") {
			t.Fatalf("tool results %+v: the model should see the denial", results)
		}
		if len(ofType(evs, event.TypeSessionComplete)) != 1 {
			t.Fatal("the turn did not complete after the denial")
		}
		last := e.api.Requests()
		tr := last[len(last)-1].ToolResults()
		if len(tr) != 1 || !tr[0].IsError {
			t.Fatalf("the model got %+v, want an error tool_result", tr)
		}
	})

	t.Run("allow", func(t *testing.T) {
		runApproval(t, e, 1, func(id string, req event.ApprovalRequested) {
			if err := e.h.Approve(id, req.RequestID, ApprovalAnswer{Decision: "allow"}); err != nil {
				t.Fatal(err)
			}
			// Answered: a second answer is refused, whoever sends it.
			if err := e.h.Approve(id, req.RequestID, ApprovalAnswer{Decision: "deny"}); !errors.Is(err, ErrApprovalResolved) {
				t.Fatalf("second answer: %v, want ErrApprovalResolved", err)
			}
		})
		if _, err := os.Stat(marker); err != nil {
			t.Fatalf("the allowed tool did not run: %v", err)
		}
		os.Remove(marker)
	})

	t.Run("always", func(t *testing.T) {
		var sid string
		evs := runApproval(t, e, 2, func(id string, req event.ApprovalRequested) {
			sid = id
			if err := e.h.Approve(id, req.RequestID, ApprovalAnswer{Decision: "always"}); err != nil {
				t.Fatal(err)
			}
		})
		res := ofType(evs, event.TypeApprovalResolved)
		if len(res) != 2 || res[0].Resolved.By != "user" || res[1].Resolved.By != "rule" || res[1].Resolved.Decision != "allow" {
			t.Fatalf("resolutions %+v %+v: the second identical use should be allowed by the rule", res[0].Resolved, res[len(res)-1].Resolved)
		}
		s, err := e.h.Session(sid)
		if err != nil || len(s.Rules) != 1 || s.Rules[0] != "Bash(touch marker)" {
			t.Fatalf("session rules %v (%v): the exact use's rule is not persisted", s.Rules, err)
		}
		if req := ofType(evs, event.TypeApprovalRequested)[0].Approval; req.Rule != s.Rules[0] {
			t.Fatalf("approval:requested shows rule %q, %q was stored", req.Rule, s.Rules[0])
		}
		os.Remove(marker)
	})

	t.Run("unknown and malformed", func(t *testing.T) {
		s, _ := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
		if err := e.h.Approve(s.ID, "apr_nope", ApprovalAnswer{Decision: "allow"}); !errors.Is(err, ErrApprovalNotFound) {
			t.Errorf("unknown request: %v", err)
		}
		if err := e.h.Approve(s.ID, "apr_nope", ApprovalAnswer{Decision: "maybe"}); !errors.Is(err, ErrInvalidDecision) {
			t.Errorf("bad decision: %v", err)
		}
		if err := e.h.Approve("not-a-uuid", "apr_nope", ApprovalAnswer{Decision: "allow"}); !errors.Is(err, ErrInvalidID) {
			t.Errorf("bad session: %v", err)
		}
	})
}

func TestApprovalTimeoutInterruptAndRace(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		e := approvalEnv(t, 300*time.Millisecond)
		evs := runApproval(t, e, 1, nil)
		res := ofType(evs, event.TypeApprovalResolved)
		if len(res) != 1 || res[0].Resolved.By != "timeout" || res[0].Resolved.Decision != "deny" {
			t.Fatalf("resolved %+v, want a timeout denial", res)
		}
		if len(ofType(evs, event.TypeSessionComplete)) != 1 {
			t.Fatal("the turn did not complete after the timeout")
		}
	})

	t.Run("interrupt while pending", func(t *testing.T) {
		e := approvalEnv(t, time.Minute)
		var pid int
		evs := runApproval(t, e, 1, func(id string, req event.ApprovalRequested) {
			e.h.mu.Lock()
			pid = e.h.live[id].cur.(interface{ Pid() int }).Pid()
			e.h.mu.Unlock()
			if err := e.h.Interrupt(id); err != nil {
				t.Fatal(err)
			}
		})
		res := ofType(evs, event.TypeApprovalResolved)
		if len(res) != 1 || res[0].Resolved.By != "interrupt" {
			t.Fatalf("resolved %+v, want by interrupt", res)
		}
		if processAlive(pid) {
			t.Fatalf("process %d outlived the interrupted turn", pid)
		}
	})

	t.Run("concurrent answers and a late reader", func(t *testing.T) {
		e := approvalEnv(t, time.Minute)
		runApproval(t, e, 1, func(id string, req event.ApprovalRequested) {
			// A reader joining now sees the pending request in the log.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seq, _ := e.h.Follow(ctx, id, 0)
			for rec, err := range seq {
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(rec.Event), req.RequestID) {
					break
				}
			}
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = e.h.Approve(id, req.RequestID, ApprovalAnswer{Decision: []string{"allow", "deny"}[i%2]})
				}()
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, ErrApprovalResolved):
					t.Errorf("answer: %v", err)
				}
			}
			if won != 1 {
				t.Fatalf("%d answers won, want exactly 1", won)
			}
		})
	})
}

func TestApprovalsOffOrDontAskNeverAsk(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"approvals off": func(c *Config) { c.PermissionMode = "default" },
		"dontAsk":       func(c *Config) { c.Approvals, c.PermissionMode = true, "dontAsk" },
		"rule auto-allows": func(c *Config) {
			c.Approvals, c.PermissionMode, c.AllowedTools = true, "default", []string{"Bash(touch:*)"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newTestEnv(t, mutate)
			s, _ := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
			e.api.SetResponder(touchResponder(1))
			evs, _ := e.turn(s.ID, "make a marker")
			if n := len(ofType(evs, event.TypeApprovalRequested)); n != 0 {
				t.Fatalf("%d approval requests, want none", n)
			}
		})
	}
}

// TestRuleFor: "always" remembers the exact use, not the agent's wider
// suggestion (the matching itself is permrule's, tested there).
func TestRuleFor(t *testing.T) {
	bash := func(cmd string) json.RawMessage {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return in
	}
	sugg := json.RawMessage(`[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test:*"}],"behavior":"allow","destination":"session"}]`)
	for _, c := range []struct {
		q    engine.ApprovalRequest
		want string
	}{
		{engine.ApprovalRequest{ToolName: "Bash", Input: bash("npm test"), Suggestions: sugg}, "Bash(npm test)"},
		{engine.ApprovalRequest{ToolName: "Bash", Input: bash("ls *.go")}, `Bash(ls \*.go)`},
		{engine.ApprovalRequest{ToolName: "Read", Input: json.RawMessage(`{"file_path":"/a"}`)}, "Read(/a)"},
		{engine.ApprovalRequest{ToolName: "Bash", Input: bash("")}, ""},
	} {
		if got := ruleFor(c.q); got != c.want {
			t.Errorf("ruleFor(%s) = %q, want %q", c.q.Input, got, c.want)
		}
	}
}

// processAlive reports whether pid's process group still has a member.
func processAlive(pid int) bool {
	return pid > 0 && !errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH)
}
