package agentserver

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/event/fold"
)

// Event is one event of the stream (see the package doc). Which fields
// are set depends on Type.
type Event struct {
	Type      string          `json:"type"`
	Timestamp int64           `json:"timestamp"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Result    *string         `json:"result,omitempty"`
	IsError   *bool           `json:"isError,omitempty"`
	State     string          `json:"state,omitempty"`
	Message   string          `json:"message,omitempty"`
	// approval and approval_resolved.
	RequestID   string          `json:"requestId,omitempty"`
	ToolUseID   string          `json:"toolUseId,omitempty"`
	Tool        string          `json:"tool,omitempty"`
	Suggestions json.RawMessage `json:"suggestions,omitempty"`
	ExpiresAt   string          `json:"expiresAt,omitempty"`
	// Unsandboxed (approval, an extension, absent when false): once
	// allowed, the use runs outside the agent's sandbox; "always" allows
	// it once and remembers nothing (event.ApprovalRequested).
	Unsandboxed bool   `json:"unsandboxed,omitempty"`
	Decision    string `json:"decision,omitempty"`
	By          string `json:"by,omitempty"`
	// session: the server moved to session SessionID, a fork of From.
	SessionID string `json:"sessionId,omitempty"`
	From      string `json:"from,omitempty"`
	// rewound: the session went back to before the turn whose user event
	// has the seq ToTurn; Files are the paths restored, Conversation
	// whether the conversation was cut there.
	ToTurn       int64    `json:"toTurn,omitempty"`
	Files        []string `json:"files,omitempty"`
	Conversation *bool    `json:"conversation,omitempty"`
	// trust: what the turn does not honour until a person trusts it
	// (event.TrustRequired: TrustKind is its kind; Name, Message too).
	TrustKind string              `json:"trustKind,omitempty"`
	Path      string              `json:"path,omitempty"`
	Hash      string              `json:"hash,omitempty"`
	Changes   []event.TrustChange `json:"changes,omitempty"`
	Rules     []string            `json:"rules,omitempty"`
	// plan and plan_resolved (the core's plan:ready and plan:resolved):
	// Plan is the plan's markdown; Mode and Feedback what was decided.
	PlanID   string `json:"planId,omitempty"`
	Plan     string `json:"plan,omitempty"`
	Mode     string `json:"mode,omitempty"`
	Feedback string `json:"feedback,omitempty"`
	// usage (opt-in, ?usage=1): what one model call cost and used.
	CostUSD float64 `json:"costUsd,omitempty"`
	Tokens  int64   `json:"tokens,omitempty"`
	// rate_limit (opt-in): an account limit (Limit), how much of it is
	// used (0-100, -1 unknown) and when it resets (Unix s, 0 unknown).
	Limit       string   `json:"limit,omitempty"`
	UsedPercent *float64 `json:"usedPercent,omitempty"`
	ResetsAt    int64    `json:"resetsAt,omitempty"`
}

// Position is a place in the stream: after the event Index of the events
// made from the session log's record Seq (Index 0: after all of them).
// It is what an SSE id names: "12" is Position{12, 0}, "12.1" is
// Position{12, 1}.
type Position struct {
	Seq   int64
	Index int
}

// ParsePosition reads an SSE id ("12" or "12.1"); ok is false for
// anything else.
func ParsePosition(s string) (p Position, ok bool) {
	seqS, idxS, dotted := strings.Cut(s, ".")
	seq, err := strconv.ParseInt(seqS, 10, 64)
	if err != nil || seq < 0 || seqS == "" || seqS[0] == '+' {
		return Position{}, false
	}
	p.Seq = seq
	if dotted {
		idx, err := strconv.Atoi(idxS)
		if err != nil || idx <= 0 || idxS[0] == '+' {
			return Position{}, false
		}
		p.Index = idx
	}
	return p, true
}

// String is the SSE id of p.
func (p Position) String() string {
	s := strconv.FormatInt(p.Seq, 10)
	if p.Index > 0 {
		s += "." + strconv.Itoa(p.Index)
	}
	return s
}

// delivered reports whether the i-th (1-based) of n events of record seq
// lies at or before p, that is, a client at p has it.
func (p Position) delivered(seq int64, i, n int) bool {
	switch {
	case seq < p.Seq:
		return true
	case seq > p.Seq:
		return false
	}
	return p.Index == 0 || (i < n && i <= p.Index)
}

// idOf is the SSE id of the i-th (1-based) of n events of record seq:
// the last one is the record's seq, the ones before it carry an index.
func idOf(seq int64, i, n int) Position {
	if i == n {
		return Position{Seq: seq}
	}
	return Position{Seq: seq, Index: i}
}

// mapper renders the one fold of the core's UI events (package
// event/fold), in log order, as the stream's events. text and reasoning
// are whole blocks: the fold gathers deltas and closes the block when the
// next event of another kind (another block, a tool use, chat:complete,
// the turn's end) shows that it is complete. With deltas set, every
// chat:delta and thinking:delta is also sent as text_delta /
// reasoning_delta. A mapper must see a turn from its user:message on; it
// is not safe for concurrent use.
type mapper struct {
	deltas  bool
	usage   bool   // ?usage=1: usage and rate_limit events
	session string // the session whose records it maps
	f       fold.Fold
}

// record appends the events ev makes to out and returns it.
func (m *mapper) record(ev *event.Event, out []Event) []Event {
	u := m.f.Add(ev)
	items := u.Items()
	for i := range items {
		out = m.item(&items[i], out)
	}
	return out
}

// item appends the events of one update of an item to out.
func (m *mapper) item(it *fold.Item, out []Event) []Event {
	switch it.Kind {
	case fold.KindUser:
		out = append(out, Event{Type: "user", Content: it.Text}, Event{Type: "status", State: "thinking"})
	case fold.KindText, fold.KindReasoning:
		if !it.Done {
			if m.deltas {
				typ := "text_delta"
				if it.Kind == fold.KindReasoning {
					typ = "reasoning_delta"
				}
				out = append(out, Event{Type: typ, Content: it.Delta})
			}
			break
		}
		// A block an engine gave whole in chat:complete is sent unless it
		// repeats the turn's last text or is a subagent's.
		if it.Text != "" && (!it.Whole || !it.Repeat && it.Parent == "") {
			out = append(out, Event{Type: string(it.Kind), Content: it.Text})
		}
	case fold.KindTool:
		t := it.Tool
		if it.New && t.Start != nil {
			out = append(out, Event{Type: "tool_call", ID: t.ID, Name: t.Name, Input: orNull(t.Input)},
				Event{Type: "status", State: "running_tool", Message: t.Name})
		}
		if it.Done {
			res, isErr := t.Result.Content, t.Result.IsError
			out = append(out, Event{Type: "tool_result", ID: t.Result.ToolUseID, Result: &res, IsError: &isErr},
				Event{Type: "status", State: "thinking"})
		}
	case fold.KindApproval:
		if a := it.Approval.Request; it.New && a != nil {
			out = append(out, Event{Type: "approval", RequestID: a.RequestID, ToolUseID: a.ToolUseID, Tool: a.ToolName,
				Input: orNull(a.Input), Suggestions: orNull(a.Suggestions), ExpiresAt: a.ExpiresAt, Unsandboxed: a.Unsandboxed})
		}
		if r := it.Approval.Resolved; it.Done {
			out = append(out, Event{Type: "approval_resolved", RequestID: r.RequestID, Decision: r.Decision, By: r.By, Message: r.Message})
		}
	case fold.KindPlan:
		if pr := it.Plan.Ready; it.New && pr != nil {
			out = append(out, Event{Type: "plan", PlanID: pr.PlanID, Plan: pr.Plan, ToolUseID: pr.ToolUseID, ExpiresAt: pr.ExpiresAt})
		}
		if r := it.Plan.Resolved; it.Done {
			out = append(out, Event{Type: "plan_resolved", PlanID: r.PlanID, Decision: r.Decision, Mode: r.Mode, Feedback: r.Feedback, By: r.By})
		}
	case fold.KindUsage: // opt-in (?usage=1)
		if !m.usage {
			break
		}
		if u := it.Event.Usage; u != nil {
			out = append(out, Event{Type: "usage", CostUSD: u.CostUSD, Tokens: u.Tokens()})
		} else if rl := it.Event.RateLimit; rl != nil {
			used := rl.UsedPercent
			out = append(out, Event{Type: "rate_limit", Limit: rl.Limit, UsedPercent: &used, ResetsAt: rl.ResetsAt})
		}
	case fold.KindStatus:
		out = m.status(it.Event, out)
	case fold.KindEnd:
		if !it.Done {
			break
		}
		switch e := it.End; {
		case e.Outcome == fold.Failed && e.Error != nil:
			msg := e.Error.Error
			if msg == "" {
				msg = string(e.Error.Kind)
			}
			out = append(out, Event{Type: "status", State: "error", Message: msg})
		case e.Outcome == fold.Interrupted:
			out = append(out, Event{Type: "status", State: "idle", Message: "interrupted"})
		default:
			out = append(out, Event{Type: "status", State: "idle"})
		}
	}
	return out
}

// status appends the events of a status item's event: a retry, a fork, a
// trust request, a rewind; the others are not sent.
func (m *mapper) status(ev *event.Event, out []Event) []Event {
	switch ev.Type {
	case event.TypeSessionRetry:
		// The seed's states stay as they are: still thinking, and why.
		out = append(out, Event{Type: "status", State: "thinking", Message: ev.Retry.Summary()})
	case event.TypeSessionForked:
		out = append(out, Event{Type: "session", SessionID: m.session, From: ev.Forked.From})
	case event.TypeTrustRequired:
		tr := ev.Trust
		out = append(out, Event{Type: "trust", TrustKind: tr.Kind, Name: tr.Name, Path: tr.Path, Hash: tr.Hash,
			Changes: tr.Changes, Rules: tr.Rules, Message: tr.Message})
	case event.TypeSessionRewound:
		r := ev.Rewound
		conv := r.Conversation
		out = append(out, Event{Type: "rewound", ToTurn: r.ToTurn, Files: r.Files, Conversation: &conv})
	}
	return out
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}
