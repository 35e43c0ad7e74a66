package fold_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/event/fold"
)

func delta(s string) event.Event    { return event.Event{Type: event.TypeChatDelta, Text: s} }
func thinking(s string) event.Event { return event.Event{Type: event.TypeThinkingDelta, Text: s} }
func user(s string) event.Event     { return event.Event{Type: event.TypeUserMessage, Text: s} }
func complete(s string) event.Event { return event.Event{Type: event.TypeChatComplete, Text: s} }
func toolStart(id, name string) event.Event {
	return event.Event{Type: event.TypeToolStart, ToolStart: &event.ToolStart{ToolUseID: id, Name: name, Input: json.RawMessage(`{"a":1}`)}}
}
func toolResult(id, content string, isErr bool) event.Event {
	return event.Event{Type: event.TypeToolResult, ToolResult: &event.ToolResult{ToolUseID: id, Content: content, IsError: isErr}}
}
func exit() event.Event { return event.Event{Type: event.TypeProcessExit, Exit: &event.ProcessExit{}} }

// show is one line per update: what the doors see.
func show(it fold.Item) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", it.ID, it.Kind)
	if it.New {
		b.WriteString(" new")
	}
	if it.Done {
		b.WriteString(" done")
	}
	if it.Parent != "" {
		fmt.Fprintf(&b, " parent=%s", it.Parent)
	}
	if it.Delta != "" {
		fmt.Fprintf(&b, " delta=%q", it.Delta)
	}
	if it.Text != "" {
		fmt.Fprintf(&b, " text=%q", it.Text)
	}
	if it.Whole {
		b.WriteString(" whole")
	}
	if it.Repeat {
		b.WriteString(" repeat")
	}
	if t := it.Tool; t != nil {
		fmt.Fprintf(&b, " tool=%s/%s", t.ID, t.Name)
		if t.Result != nil {
			fmt.Fprintf(&b, " result=%q err=%v", t.Result.Content, t.Result.IsError)
		}
	}
	if a := it.Approval; a != nil {
		fmt.Fprintf(&b, " approval=%s", a.ID)
		if a.Resolved != nil {
			fmt.Fprintf(&b, " %s", a.Resolved.Decision)
		}
	}
	if p := it.Plan; p != nil {
		fmt.Fprintf(&b, " plan=%s", p.ID)
		if p.Ready != nil {
			fmt.Fprintf(&b, " %q", p.Ready.Plan)
		}
		if p.Resolved != nil {
			fmt.Fprintf(&b, " %s", p.Resolved.Decision)
		}
	}
	if it.Kind == fold.KindUsage {
		fmt.Fprintf(&b, " event=%s", it.Event.Type)
	}
	if e := it.End; e != nil {
		fmt.Fprintf(&b, " outcome=%s", e.Outcome)
		if e.Error != nil {
			fmt.Fprintf(&b, " error=%s", e.Error.Kind)
		}
	}
	if it.Kind == fold.KindStatus {
		fmt.Fprintf(&b, " event=%s", it.Event.Type)
	}
	fmt.Fprintf(&b, " seq=%d/%d", it.OpenSeq, it.Seq)
	return b.String()
}

func run(evs []event.Event) []string {
	var f fold.Fold
	var got []string
	for i := range evs {
		u := f.AddSeq(int64(i+1), &evs[i])
		for _, it := range u.Items() {
			got = append(got, show(it))
		}
	}
	u := f.Flush()
	for _, it := range u.Items() {
		got = append(got, show(it))
	}
	return got
}

func TestFold(t *testing.T) {
	sub := delta("sub")
	sub.ParentToolUseID = "task1"
	cases := []struct {
		name string
		evs  []event.Event
		want []string
	}{{
		name: "a streamed turn: deltas joined, the repeated answer marked, the end",
		evs: []event.Event{user("hi"), {Type: event.TypeSessionInit, Init: &event.SessionInit{}}, thinking("hm"), delta("Hel"), delta("lo"),
			complete("Hello"), {Type: event.TypeSessionComplete, Complete: &event.SessionComplete{CostUSD: 1}}, exit()},
		want: []string{
			`1 user new done text="hi" seq=1/1`,
			`2 status new done event=session:init seq=2/2`,
			`3 reasoning new delta="hm" seq=3/3`,
			`3 reasoning done text="hm" seq=3/4`,
			`4 text new delta="Hel" seq=4/4`,
			`4 text delta="lo" seq=4/5`,
			`4 text done text="Hello" seq=4/6`,
			`5 end new outcome=completed seq=7/7`,
			`5 end done outcome=completed seq=7/8`,
		},
	}, {
		name: "whole text blocks (the native loop), the last one repeated",
		evs:  []event.Event{user("q"), complete("A"), complete("B"), complete("B")},
		want: []string{
			`1 user new done text="q" seq=1/1`,
			`2 text new done text="A" whole seq=2/2`,
			`3 text new done text="B" whole seq=3/3`,
			`4 text new done text="B" whole repeat seq=4/4`,
		},
	}, {
		name: "a tool call joined to its result by toolUseId; a result without a start",
		evs:  []event.Event{delta("x"), toolStart("t1", "Bash"), toolStart("t2", "Read"), toolResult("t2", "ok", false), toolResult("t1", "bad", true), toolResult("t9", "?", false)},
		want: []string{
			`1 text new delta="x" seq=1/1`,
			`1 text done text="x" seq=1/2`,
			`2 tool new tool=t1/Bash seq=2/2`,
			`3 tool new tool=t2/Read seq=3/3`,
			`3 tool done tool=t2/Read result="ok" err=false seq=3/4`,
			`2 tool done tool=t1/Bash result="bad" err=true seq=2/5`,
			`4 tool new done tool=t9/ result="?" err=false seq=6/6`,
		},
	}, {
		name: "a subagent's text is its own block; retry and resolve do not close a block",
		evs: []event.Event{delta("a"), sub, delta("b"), {Type: event.TypeSessionRetry, Retry: &event.SessionRetry{Attempt: 1}}, delta("c"),
			{Type: event.TypeApprovalRequested, Approval: &event.ApprovalRequested{RequestID: "r1"}}, delta("d"),
			{Type: event.TypeApprovalResolved, Resolved: &event.ApprovalResolved{RequestID: "r1", Decision: "allow"}}, delta("e")},
		want: []string{
			`1 text new delta="a" seq=1/1`,
			`1 text done text="a" seq=1/2`,
			`2 text new parent=task1 delta="sub" seq=2/2`,
			`2 text done parent=task1 text="sub" seq=2/3`,
			`3 text new delta="b" seq=3/3`,
			`4 status new done event=session:retry seq=4/4`,
			`3 text delta="c" seq=3/5`,
			`3 text done text="bc" seq=3/6`,
			`5 approval new approval=r1 seq=6/6`,
			`6 text new delta="d" seq=7/7`,
			`5 approval done approval=r1 allow seq=6/8`,
			`6 text delta="e" seq=7/9`,
			`6 text done text="de" seq=7/9`,
		},
	}, {
		name: "a plan joined to its decision by planId, usage and rate limits: none closes a block; a decision without a plan",
		evs: []event.Event{delta("a"), {Type: event.TypeUsageUpdate, Usage: &event.UsageUpdate{InputTokens: 3}},
			{Type: event.TypePlanReady, PlanReady: &event.PlanReady{PlanID: "p1", Plan: "# do"}}, delta("b"),
			{Type: event.TypeRateLimit, RateLimit: &event.RateLimit{Limit: "5h", UsedPercent: 40}},
			{Type: event.TypePlanResolved, PlanResolved: &event.PlanResolved{PlanID: "p1", Decision: "approve"}},
			{Type: event.TypePlanResolved, PlanResolved: &event.PlanResolved{PlanID: "p9", Decision: "revise"}},
			{Type: event.TypeUsageUpdate}, user("next"),
			{Type: event.TypePlanResolved, PlanResolved: &event.PlanResolved{PlanID: "p1", Decision: "approve"}}},
		want: []string{
			`1 text new delta="a" seq=1/1`,
			`2 usage new done event=usage:update seq=2/2`,
			`3 plan new plan=p1 "# do" seq=3/3`,
			`1 text delta="b" seq=1/4`,
			`4 usage new done event=rate_limit seq=5/5`,
			`3 plan done plan=p1 "# do" approve seq=3/6`,
			`5 plan new done plan=p9 revise seq=7/7`,
			`1 text done text="ab" seq=1/9`,
			`6 user new done text="next" seq=9/9`,
			`7 plan new done plan=p1 approve seq=10/10`,
		},
	}, {
		name: "a failure wins over an interruption; resume_not_found ends nothing",
		evs: []event.Event{
			{Type: event.TypeSessionError, Error: &event.SessionError{Kind: event.ErrorResumeNotFound}},
			{Type: event.TypeSessionError, Error: &event.SessionError{Kind: event.ErrorInterrupted}},
			{Type: event.TypeSessionError, Error: &event.SessionError{Kind: event.ErrorAPI}},
			exit(), exit()},
		want: []string{
			`1 status new done event=session:error seq=1/1`,
			`2 end new outcome=interrupted error=interrupted seq=2/2`,
			`2 end outcome=failed error=api_error seq=2/3`,
			`2 end done outcome=failed error=api_error seq=2/4`,
			`3 end new done outcome=failed error=api_error seq=5/5`,
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := run(c.evs)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestAll(t *testing.T) {
	items := fold.All([]event.Event{user("q"), delta("a"), delta("b"), toolStart("t", "Bash"), toolResult("t", "out", false), delta("c")})
	var got []string
	for _, it := range items {
		got = append(got, show(it))
	}
	want := []string{
		`1 user new done text="q" seq=0/0`,
		`2 text new done text="ab" seq=0/0`,
		`3 tool new done tool=t/Bash result="out" err=false seq=0/0`,
		`4 text new done text="c" seq=0/0`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// FuzzFold feeds events read from outside input (a log's JSON lines) and
// checks the fold's promises: every item opens once, with New, and takes no
// update after Done; a block's deltas add up to its text.
func FuzzFold(f *testing.F) {
	f.Add([]byte(`{"type":"user:message","text":"hi"}
{"type":"chat:delta","text":"a"}
{"type":"tool:start","toolUseId":"t","name":"Bash","input":{}}
{"type":"tool:result","toolUseId":"t","content":"x"}
{"type":"session:complete"}
{"type":"process:exit","code":0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var evs []event.Event
		for _, line := range bytes.Split(data, []byte("\n")) {
			var ev event.Event
			if json.Unmarshal(line, &ev) == nil {
				evs = append(evs, ev)
			}
		}
		// Also events whose payload is missing, as a caller may build them.
		for _, typ := range []event.Type{event.TypeToolStart, event.TypeToolResult, event.TypeApprovalRequested, event.TypeApprovalResolved,
			event.TypePlanReady, event.TypePlanResolved, event.TypeUsageUpdate, event.TypeRateLimit, event.TypeSessionComplete, event.TypeSessionError, event.TypeProcessExit} {
			evs = append(evs, event.Event{Type: typ})
		}
		var fo fold.Fold
		done := map[int]bool{}
		seen := map[int]bool{}
		texts := map[int]string{}
		maxID := 0
		check := func(up []fold.Item) {
			for _, it := range up {
				if it.New == seen[it.ID] {
					t.Fatalf("item %d: New=%v but seen=%v", it.ID, it.New, seen[it.ID])
				}
				if it.New && it.ID != maxID+1 {
					t.Fatalf("item %d opened after %d", it.ID, maxID)
				}
				if done[it.ID] {
					t.Fatalf("item %d updated after Done", it.ID)
				}
				if it.New {
					maxID = it.ID
				}
				seen[it.ID], done[it.ID] = true, it.Done
				if (it.Kind == fold.KindText || it.Kind == fold.KindReasoning) && !it.Whole {
					texts[it.ID] += it.Delta
					if it.Done && it.Text != texts[it.ID] {
						t.Fatalf("item %d: text %q, deltas %q", it.ID, it.Text, texts[it.ID])
					}
				}
				if it.Done && it.Kind == fold.KindTool && (it.Tool == nil || it.Tool.Result == nil) {
					t.Fatalf("tool item %d done without a result", it.ID)
				}
				if it.Done && it.Kind == fold.KindApproval && (it.Approval == nil || it.Approval.Resolved == nil) {
					t.Fatalf("approval item %d done without an answer", it.ID)
				}
				if it.Kind == fold.KindPlan && (it.Plan == nil || it.Plan.Ready == nil && !it.Done || it.Done && it.Plan.Resolved == nil) {
					t.Fatalf("plan item %d without its plan or, done, without its decision", it.ID)
				}
				if it.Kind == fold.KindUsage && (!it.New || !it.Done || it.Event == nil || it.Event.Usage == nil && it.Event.RateLimit == nil) {
					t.Fatalf("usage item %d not whole or without its usage", it.ID)
				}
				if it.Kind == fold.KindEnd && it.End == nil {
					t.Fatalf("end item %d without End", it.ID)
				}
			}
		}
		for i := range evs {
			u := fo.Add(&evs[i])
			check(u.Items())
		}
		u := fo.Flush()
		check(u.Items())
		if n := len(fold.All(evs)); n != maxID {
			t.Fatalf("All: %d items, the fold opened %d", n, maxID)
		}
	})
}

// BenchmarkFoldDelta: one streamed token through the fold (the hot path
// of every door).
func BenchmarkFoldDelta(b *testing.B) {
	var f fold.Fold
	ev := delta("a token ")
	stop := complete("")
	b.ReportAllocs()
	for i := range b.N {
		if i%1000 == 999 {
			f.Add(&stop) // a block ends now and then, as in a turn
		}
		f.Add(&ev)
	}
}
