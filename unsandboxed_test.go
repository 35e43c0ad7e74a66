package harness

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/event"
)

// A Codex command the model asks to run outside the sandbox
// (sandbox_permissions require_escalated) is put to a person, marked
// unsandboxed on approval:requested, although a session rule allows
// every shell command, and "always" allows it once, remembering nothing;
// so is one without a justification, whose request looks like a plain
// command's, and so a plain command too (real codex on the fake
// Responses API, default mode).
func TestUnsandboxedCodexAlwaysAsked(t *testing.T) {
	e, fake, id := codexPlanEnv(t)
	mode := "default"
	if _, err := e.h.UpdateSession(id, SessionUpdate{PermissionMode: &mode}); err != nil {
		t.Fatal(err)
	}
	s, err := e.h.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	s.Rules = []string{"shell"}
	if err := e.h.Store().Save(s); err != nil {
		t.Fatal(err)
	}
	if err := e.h.trust.AddRule(s.ProjectRoot, s.ID, "shell"); err != nil { // as a person's "always" records it
		t.Fatal(err)
	}
	turn := func(call *codextest.Call, answer string) []stored {
		t.Helper()
		fake.Script(codextest.Reply{Call: call}, codextest.Reply{Text: "done"})
		tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: id, Message: "run it"})
		if err != nil {
			t.Fatal(err)
		}
		if answer != "" {
			req := e.pending(id)
			if !req.Unsandboxed {
				t.Errorf("request %+v is not marked unsandboxed", req)
			}
			if err := e.h.Approve(id, req.RequestID, ApprovalAnswer{Decision: answer}); err != nil {
				t.Fatal(err)
			}
		}
		<-tr.Done()
		return e.follow(e.h, id, tr.StartSeq)
	}
	escalated := &codextest.Call{Tool: "exec_command", Args: map[string]any{"cmd": "echo x > escalated.txt",
		"sandbox_permissions": "require_escalated", "justification": "to write outside the sandbox"}}
	evs := turn(escalated, "always")
	asked, res := ofType(evs, event.TypeApprovalRequested), ofType(evs, event.TypeApprovalResolved)
	if len(asked) != 1 || !asked[0].Approval.Unsandboxed || len(res) != 1 || res[0].Resolved.By != event.ByUser {
		t.Fatalf("requested %+v resolved %+v: want one request marked unsandboxed, answered by the person", asked, res)
	}
	if _, err := os.Stat(filepath.Join(e.root, "escalated.txt")); err != nil {
		t.Errorf("the person allowed the command, it did not run: %v", err)
	}
	if got, err := e.h.Session(id); err != nil || !slices.Equal(got.Rules, []string{"shell"}) {
		t.Fatalf("rules %v (%v): always on an unsandboxed use must remember nothing", got.Rules, err)
	}
	// Without a justification, and a plain command: asked all the same.
	for _, call := range []*codextest.Call{
		{Tool: "exec_command", Args: map[string]any{"cmd": "echo z > bare.txt", "sandbox_permissions": "require_escalated"}},
		{Command: "echo y > plain.txt"},
	} {
		evs = turn(call, "allow")
		asked, res = ofType(evs, event.TypeApprovalRequested), ofType(evs, event.TypeApprovalResolved)
		if len(asked) != 1 || !asked[0].Approval.Unsandboxed || len(res) != 1 || res[0].Resolved.By != event.ByUser {
			t.Fatalf("%+v: requested %+v resolved %+v: want one request marked unsandboxed, answered by the person", call, asked, res)
		}
	}
	// And asked again the next time, whatever "always" said.
	evs = turn(escalated, "deny")
	if res := ofType(evs, event.TypeApprovalResolved); len(res) != 1 || res[0].Resolved.By != event.ByUser {
		t.Fatalf("resolved %+v: the second escalation must be answered by the person", res)
	}
}
