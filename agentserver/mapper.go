package agentserver

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/chirality/harness/event"
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
	Decision    string          `json:"decision,omitempty"`
	By          string          `json:"by,omitempty"`
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

// mapper turns the core's UI events, in log order, into the stream's
// events. text and reasoning are whole blocks: deltas are gathered, and
// the block is sent when the next event of another kind (another block,
// a tool use, chat:complete, the turn's end) shows that it is complete.
// With deltas set, every chat:delta and thinking:delta is also sent as
// text_delta / reasoning_delta. A mapper must see a turn from its
// user:message on; it is not safe for concurrent use.
type mapper struct {
	deltas  bool
	usage   bool   // ?usage=1: usage and rate_limit events
	session string // the session whose records it maps

	kind   string // the open block: "", "text" or "reasoning"
	parent string // its parentToolUseId
	text   strings.Builder
	last   string // the text of the turn's last text block

	failed      string // the turn's failure, for its status error
	interrupted bool
}

// record appends the events ev makes to out and returns it.
func (m *mapper) record(ev *event.Event, out []Event) []Event {
	switch ev.Type {
	case event.TypeUserMessage:
		out = m.close(out)
		m.failed, m.interrupted, m.last = "", false, ""
		out = append(out, Event{Type: "user", Content: ev.Text}, Event{Type: "status", State: "thinking"})
	case event.TypeChatDelta:
		out = m.open(out, "text", ev.ParentToolUseID)
		m.text.WriteString(ev.Text)
		if m.deltas {
			out = append(out, Event{Type: "text_delta", Content: ev.Text})
		}
	case event.TypeThinkingDelta:
		out = m.open(out, "reasoning", ev.ParentToolUseID)
		m.text.WriteString(ev.Text)
		if m.deltas {
			out = append(out, Event{Type: "reasoning_delta", Content: ev.Text})
		}
	case event.TypeChatComplete:
		wasText := m.kind == "text"
		out = m.close(out)
		// An engine that did not stream the block says it here; one that
		// did repeats (part of) what was sent.
		if !wasText && ev.Text != "" && ev.Text != m.last && ev.ParentToolUseID == "" {
			m.last = ev.Text
			out = append(out, Event{Type: "text", Content: ev.Text})
		}
	case event.TypeToolStart:
		out = m.close(out)
		ts := ev.ToolStart
		out = append(out, Event{Type: "tool_call", ID: ts.ToolUseID, Name: ts.Name, Input: orNull(ts.Input)},
			Event{Type: "status", State: "running_tool", Message: ts.Name})
	case event.TypeToolResult:
		out = m.close(out)
		res, isErr := ev.ToolResult.Content, ev.ToolResult.IsError
		out = append(out, Event{Type: "tool_result", ID: ev.ToolResult.ToolUseID, Result: &res, IsError: &isErr},
			Event{Type: "status", State: "thinking"})
	case event.TypeApprovalRequested:
		out = m.close(out)
		a := ev.Approval
		out = append(out, Event{Type: "approval", RequestID: a.RequestID, ToolUseID: a.ToolUseID, Tool: a.ToolName,
			Input: orNull(a.Input), Suggestions: orNull(a.Suggestions), ExpiresAt: a.ExpiresAt})
	case event.TypeApprovalResolved:
		r := ev.Resolved
		out = append(out, Event{Type: "approval_resolved", RequestID: r.RequestID, Decision: r.Decision, By: r.By, Message: r.Message})
	case event.TypeSessionRetry:
		// The seed's states stay as they are: still thinking, and why.
		out = append(out, Event{Type: "status", State: "thinking", Message: ev.Retry.Summary()})
	case event.TypeUsageUpdate:
		if m.usage { // not a block's end: no close
			u := ev.Usage
			out = append(out, Event{Type: "usage", CostUSD: u.CostUSD, Tokens: u.Tokens()})
		}
	case event.TypeRateLimit:
		if m.usage {
			rl := ev.RateLimit
			used := rl.UsedPercent
			out = append(out, Event{Type: "rate_limit", Limit: rl.Limit, UsedPercent: &used, ResetsAt: rl.ResetsAt})
		}
	case event.TypeSessionComplete:
		out = m.close(out)
	case event.TypeSessionError:
		out = m.close(out)
		switch ev.Error.Kind {
		case event.ErrorInterrupted, event.ErrorKilled:
			m.interrupted = true
		case event.ErrorResumeNotFound:
			// The core starts a fresh conversation with the same message;
			// the turn goes on.
		default:
			m.failed = ev.Error.Error
			if m.failed == "" {
				m.failed = string(ev.Error.Kind)
			}
		}
	case event.TypeSessionForked:
		out = m.close(out)
		out = append(out, Event{Type: "session", SessionID: m.session, From: ev.Forked.From})
	case event.TypeTrustRequired:
		out = m.close(out)
		tr := ev.Trust
		out = append(out, Event{Type: "trust", TrustKind: tr.Kind, Name: tr.Name, Path: tr.Path, Hash: tr.Hash,
			Changes: tr.Changes, Rules: tr.Rules, Message: tr.Message})
	case event.TypeSessionRewound:
		out = m.close(out)
		r := ev.Rewound
		conv := r.Conversation
		out = append(out, Event{Type: "rewound", ToTurn: r.ToTurn, Files: r.Files, Conversation: &conv})
	case event.TypeProcessExit:
		out = m.close(out)
		switch {
		case m.failed != "":
			out = append(out, Event{Type: "status", State: "error", Message: m.failed})
		case m.interrupted:
			out = append(out, Event{Type: "status", State: "idle", Message: "interrupted"})
		default:
			out = append(out, Event{Type: "status", State: "idle"})
		}
	}
	return out
}

// open makes kind (of parent) the open block, sending the one before it
// if it was another.
func (m *mapper) open(out []Event, kind, parent string) []Event {
	if m.kind == kind && m.parent == parent {
		return out
	}
	out = m.close(out)
	m.kind, m.parent = kind, parent
	return out
}

// close sends the open block, if any.
func (m *mapper) close(out []Event) []Event {
	if m.kind == "" {
		return out
	}
	text := m.text.String()
	if m.kind == "text" && m.parent == "" {
		m.last = text
	}
	if text != "" {
		out = append(out, Event{Type: m.kind, Content: text})
	}
	m.kind, m.parent = "", ""
	m.text.Reset()
	return out
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}
