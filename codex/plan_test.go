package codex_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness/codex"
	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// planModel is a fake model that plans in Codex's plan collaboration
// mode (a <proposed_plan> block; v2 once the feedback "use a table"
// came), and outside it implements: a shell call writing implemented.txt,
// then a text.
func planModel(req *codextest.Request) codextest.Reply {
	switch {
	case req.CollaborationMode() == "plan" && strings.Contains(req.LastUserText(), "use a table"):
		return codextest.Reply{Text: "Revised.\n\n<proposed_plan>\n# plan v2\n\n1. a table\n</proposed_plan>\n", Deltas: 3}
	case req.CollaborationMode() == "plan":
		return codextest.Reply{Text: "Here is my plan.\n\n<proposed_plan>\n# plan v1\n\n1. a list\n</proposed_plan>\n", Deltas: 3}
	case len(req.FunctionOutputs()) == 0 && req.LastUserText() == codex.ImplementPrompt:
		return codextest.Reply{Call: &codextest.Call{Command: "echo done > implemented.txt"}}
	}
	return codextest.Reply{Text: "implemented"}
}

// planApprover answers ToolPlan questions from plans (in order) and
// allows every other tool.
type planApprover struct {
	mu    sync.Mutex
	plans []engine.ApprovalDecision
	asked []engine.ApprovalRequest
	block bool // plan questions wait for the turn's end instead
}

func (a *planApprover) Ask(ctx context.Context, req engine.ApprovalRequest) engine.ApprovalDecision {
	a.mu.Lock()
	a.asked = append(a.asked, req)
	if req.ToolName != codex.ToolPlan {
		a.mu.Unlock()
		return engine.ApprovalDecision{Allow: true}
	}
	if a.block {
		a.mu.Unlock()
		<-ctx.Done()
		return engine.ApprovalDecision{Message: "interrupted", NoAnswer: true}
	}
	defer a.mu.Unlock()
	if len(a.plans) == 0 {
		return engine.ApprovalDecision{Message: "nobody answered", NoAnswer: true}
	}
	d := a.plans[0]
	a.plans = a.plans[1:]
	return d
}

func (a *planApprover) planInputs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, q := range a.asked {
		if q.ToolName == codex.ToolPlan {
			var in struct{ Plan string }
			_ = json.Unmarshal(q.Input, &in)
			out = append(out, in.Plan)
		}
	}
	return out
}

// Codex plans in its plan collaboration mode: the plan item comes out as
// the tool that ends a plan (tool:start ExitPlanMode with the markdown)
// and the Approver is asked, with "Implement the plan." as the request's
// Next; a revise sends the feedback as the next plan turn; an approve
// ends the turn. The next turn (what the core queues), in acceptEdits on
// the resumed thread, runs in Codex's default collaboration mode and
// writes in the workspace.
func TestRealCodexPlanReviewApproveAfterRevise(t *testing.T) {
	g := newRig(t)
	g.fake.SetResponder(planModel)
	dir := t.TempDir()
	a := &planApprover{plans: []engine.ApprovalDecision{{Message: "use a table"}, {Allow: true}}}
	r := g.turn(t, engine.Request{SessionKey: "plan1", Message: "plan the work", Cwd: dir, PermissionMode: "plan", Approver: a}, nil)
	if r.err != nil {
		t.Fatalf("turn: %v %v", r.err, r.types())
	}
	if got := a.planInputs(); len(got) != 2 || got[0] != "# plan v1\n\n1. a list\n" || got[1] != "# plan v2\n\n1. a table\n" {
		t.Fatalf("plans asked %q", got)
	}
	a.mu.Lock()
	if next := a.asked[1].Next; next != codex.ImplementPrompt {
		t.Errorf("the plan's Next = %q, want %q", next, codex.ImplementPrompt)
	}
	a.mu.Unlock()
	var plans []string
	for _, ev := range r.find(event.TypeToolStart) {
		if ev.ToolStart.Name == codex.ToolPlan {
			var in struct{ Plan string }
			_ = json.Unmarshal(ev.ToolStart.Input, &in)
			plans = append(plans, in.Plan)
		}
	}
	if len(plans) != 2 {
		t.Errorf("tool:start %s: %q", codex.ToolPlan, plans)
	}
	results := r.find(event.TypeToolResult)
	if len(results) != 2 || !results[0].ToolResult.IsError || results[0].ToolResult.Content != "use a table" || results[1].ToolResult.IsError {
		t.Errorf("the plans' tool:results %+v", results)
	}
	if strings.Contains(r.text(), "proposed_plan") || r.text() != "Here is my plan.\n\nRevised.\n\n" {
		t.Errorf("chat text %q", r.text())
	}
	if c := r.find(event.TypeSessionComplete); len(c) != 1 || c[0].Complete.Checkpoint == "" || c[0].Complete.NumTurns != 2 {
		t.Errorf("session:complete %+v", c)
	}
	if _, err := os.Stat(filepath.Join(dir, "implemented.txt")); err == nil {
		t.Error("the plan turn wrote in the workspace")
	}

	// The next turn carries the plan out, out of plan mode.
	reqs := g.resumeIn(t, r, engine.Request{SessionKey: "plan1", Message: codex.ImplementPrompt, Cwd: dir, PermissionMode: "acceptEdits", Approver: a})
	var modes []string
	for _, q := range reqs {
		modes = append(modes, q.CollaborationMode()+":"+q.LastUserText())
	}
	want := []string{"plan:plan the work", "plan:use a table", "default:" + codex.ImplementPrompt, "default:" + codex.ImplementPrompt}
	if strings.Join(modes, "|") != strings.Join(want, "|") {
		t.Errorf("requests (mode:last user text)\n got %q\nwant %q", modes, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "implemented.txt")); err != nil || strings.TrimSpace(string(b)) != "done" {
		t.Errorf("the approved plan was not implemented: %q %v", b, err)
	}

	// A turn after it: default mode, no mode message of its own.
	reqs = g.resumeIn(t, r, engine.Request{SessionKey: "plan1", Message: "next", Cwd: dir, PermissionMode: "acceptEdits", Approver: a})
	if last, prev := reqs[len(reqs)-1], reqs[len(reqs)-2]; last.CollaborationMode() != "default" || modeMessages(last) != modeMessages(prev) {
		t.Errorf("the next turn's request: mode %q, %d mode messages after %d", last.CollaborationMode(), modeMessages(last), modeMessages(prev))
	}
}

// resumeIn runs req on the thread of the turn prev ran, which must
// complete, and returns the model requests so far.
func (g *rig) resumeIn(t *testing.T, prev *run, req engine.Request) []codextest.Request {
	t.Helper()
	req.Resume = prev.events[0].Init.ConversationID
	if r := g.turn(t, req, nil); r.err != nil {
		t.Fatalf("next turn: %v", r.err)
	}
	return g.fake.Requests()
}

// modeMessages counts the <collaboration_mode> texts of req's input.
func modeMessages(req codextest.Request) int {
	n := 0
	for _, raw := range req.Input {
		var it struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		_ = json.Unmarshal(raw, &it)
		for _, c := range it.Content {
			if strings.HasPrefix(c.Text, "<collaboration_mode>") {
				n++
			}
		}
	}
	return n
}

// A plan nobody answers ends the turn (session:complete, nothing
// implemented); the thread stays in plan mode, so the session's next turn
// in default mode takes Codex out of it (collaborationMode default).
// Without an Approver the plan is reported and the turn ends.
func TestRealCodexPlanNoAnswer(t *testing.T) {
	g := newRig(t)
	g.fake.SetResponder(planModel)
	dir := t.TempDir()
	a := &planApprover{}
	r := g.turn(t, engine.Request{SessionKey: "plan2", Message: "plan the work", Cwd: dir, PermissionMode: "plan", Approver: a}, nil)
	if r.err != nil {
		t.Fatalf("turn: %v", r.err)
	}
	if n := len(g.fake.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: a plan nobody answered must not go on", n)
	}
	res := r.find(event.TypeToolResult)
	if len(res) != 1 || !res[0].ToolResult.IsError || res[0].ToolResult.Content != "nobody answered" {
		t.Errorf("tool:result %+v", res)
	}
	reqs := g.resumeIn(t, r, engine.Request{SessionKey: "plan2", Message: "just do it", Cwd: dir, PermissionMode: "default", Approver: a})
	if m := reqs[len(reqs)-1].CollaborationMode(); m != "default" {
		t.Errorf("the default-mode turn after an unapproved plan runs in collaboration mode %q, want default", m)
	}

	// No approver: the plan is in the stream, not approved.
	r = g.turn(t, engine.Request{SessionKey: "plan3", Message: "plan the work", Cwd: t.TempDir(), PermissionMode: "plan"}, nil)
	if r.err != nil {
		t.Fatalf("turn without approver: %v", r.err)
	}
	st, res := r.find(event.TypeToolStart), r.find(event.TypeToolResult)
	if len(st) != 1 || st[0].ToolStart.Name != codex.ToolPlan || !strings.Contains(string(st[0].ToolStart.Input), "plan v1") || len(res) != 1 || !res[0].ToolResult.IsError {
		t.Errorf("without approver: tool:start %+v tool:result %+v", st, res)
	}
}

// An interrupt while the plan waits ends the turn interrupted; nothing
// runs after it.
func TestRealCodexPlanInterruptWhileWaiting(t *testing.T) {
	g := newRig(t)
	g.fake.SetResponder(planModel)
	a := &planApprover{block: true}
	r := g.turn(t, engine.Request{SessionKey: "plan4", Message: "plan the work", PermissionMode: "plan", Approver: a}, func(tr engine.Turn, ev event.Event) {
		if ev.Type == event.TypeToolStart && ev.ToolStart.Name == codex.ToolPlan {
			go func() { _ = tr.Interrupt() }()
		}
	})
	var te *engine.TurnError
	if !errors.As(r.err, &te) || te.Kind != event.ErrorInterrupted {
		t.Fatalf("err %v, want interrupted; %v", r.err, r.types())
	}
	if n := len(g.fake.Requests()); n != 1 {
		t.Errorf("%d model requests after the interrupt, want 1", n)
	}
}

// TestSchemaPlanMode: what plan mode relies on, in the pinned codex's
// experimental schema (`generate-json-schema --experimental`; the
// collaboration mode is experimental in 0.169, so TestSchemaContract's
// bundle lacks it): initialize's capabilities.experimentalApi; turn/start's
// collaborationMode {mode: plan|default, settings: {model*,
// reasoning_effort, developer_instructions}}, approvalPolicy,
// sandboxPolicy and permissions; the plan item (type plan, text); and
// thread/resume's collaborationMode.mode.
func TestSchemaPlanMode(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command(codexBin(t), "app-server", "generate-json-schema", "--experimental", "--out", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("generate-json-schema --experimental: %v: %s", err, out)
	}
	read := func(file string) map[string]any {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return v
	}
	// at follows keys (and a $ref's definition, or the non-null branch
	// of an anyOf) through a schema.
	at := func(root map[string]any, keys ...string) map[string]any {
		cur := root
		for _, k := range keys {
			for range 4 {
				if ref, ok := cur["$ref"].(string); ok {
					cur, _ = root["definitions"].(map[string]any)[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any)
				} else if alts, ok := cur["anyOf"].([]any); ok && cur["properties"] == nil {
					cur, _ = alts[0].(map[string]any)
				}
			}
			next, _ := cur["properties"].(map[string]any)[k].(map[string]any)
			if next == nil {
				t.Errorf("the schema has no %s", strings.Join(keys, "."))
				return map[string]any{}
			}
			cur = next
		}
		return cur
	}
	init := read("v1/InitializeParams.json")
	if init = at(init, "capabilities", "experimentalApi"); init["type"] != "boolean" {
		t.Errorf("initialize capabilities.experimentalApi %v", init)
	}
	ts := read("v2/TurnStartParams.json")
	for _, k := range [][]string{{"approvalPolicy"}, {"sandboxPolicy"}, {"permissions"}, {"collaborationMode", "settings", "developer_instructions"}, {"collaborationMode", "settings", "reasoning_effort"}} {
		at(ts, k...)
	}
	if b, _ := json.Marshal(at(ts, "collaborationMode", "mode")); !strings.Contains(string(b), "ModeKind") {
		t.Errorf("collaborationMode.mode %s", b)
	}
	mk, _ := json.Marshal(ts["definitions"].(map[string]any)["ModeKind"])
	cm, _ := json.Marshal(ts["definitions"].(map[string]any)["CollaborationMode"])
	st, _ := json.Marshal(ts["definitions"].(map[string]any)["Settings"])
	if !strings.Contains(string(mk), `"plan"`) || !strings.Contains(string(mk), `"default"`) || !strings.Contains(string(cm), `"required":["mode","settings"]`) || !strings.Contains(string(st), `"required":["model"]`) {
		t.Errorf("collaboration mode: ModeKind %s, CollaborationMode %s, Settings %s", mk, cm, st)
	}
	items, _ := json.Marshal(read("v2/ItemCompletedNotification.json")["definitions"].(map[string]any)["ThreadItem"])
	if !strings.Contains(string(items), `"title":"PlanThreadItemType"`) || !strings.Contains(string(items), `"required":["id","text","type"]`) {
		t.Error("the plan item (type plan, id, text) is not in ThreadItem")
	}
	at(read("v2/ThreadResumeResponse.json"), "collaborationMode", "mode")
}
