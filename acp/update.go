package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The session/update kinds the engine maps (ACP protocol version 1).
// Others (available_commands_update, current_mode_update,
// config_option_update, session_info_update, user_message_chunk and kinds
// of later versions) are decoded as their kind and raw JSON, logged and
// ignored.
const (
	KindAgentMessageChunk = "agent_message_chunk"
	KindAgentThoughtChunk = "agent_thought_chunk"
	KindToolCall          = "tool_call"
	KindToolCallUpdate    = "tool_call_update"
	KindPlan              = "plan"
	KindUsageUpdate       = "usage_update"
)

// ErrBadUpdate is wrapped by DecodeUpdate's errors: the params are not a
// session/update notification at all (not an object, no update kind).
var ErrBadUpdate = errors.New("acp: bad session/update")

// Notification is one session/update's params, decoded leniently: the
// fields the engine maps are typed, the rest stays in Raw.
type Notification struct {
	SessionID string
	Update    Update
}

// Update is the update of a Notification. Kind is its sessionUpdate
// discriminator; which fields are set depends on it:
//
//	agent_message_chunk, agent_thought_chunk  Content, MessageID
//	tool_call, tool_call_update               ToolCallID, Title, ToolKind,
//	                                          Status, RawInput, RawOutput,
//	                                          Content (tool content), ToolName
//	plan                                      Entries
//	usage_update                              CostUSD (when in USD)
//
// Raw is the update object as sent (for unknown kinds, logs, recordings).
type Update struct {
	Kind      string
	MessageID string
	// Content is a chunk's content block.
	Content *ContentBlock
	// Informational marks a message chunk the agent flags as a notice,
	// not part of the answer (claude-agent-acp's
	// _meta.claudeCode.kind "informational").
	Informational bool

	ToolCallID string
	Title      string
	ToolKind   string
	Status     string
	// ToolName is the tool's own name when the agent says it
	// (claude-agent-acp's _meta.claudeCode.toolName); else "".
	ToolName string
	// RawInput and RawOutput are as sent; nil when absent.
	RawInput  json.RawMessage
	RawOutput json.RawMessage
	// ToolContent is the tool call's content list; HasToolContent says
	// whether the update carried one (an update replaces it).
	ToolContent    []ToolContent
	HasToolContent bool

	Entries []PlanEntry

	CostUSD float64
	HasCost bool

	Raw json.RawMessage
}

// ContentBlock is an ACP content block (text, image, audio,
// resource_link, resource); only Text is mapped, other types are shown
// as a placeholder.
type ContentBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	URI  string `json:"uri,omitempty"`
	Name string `json:"name,omitempty"`
}

// ToolContent is one entry of a tool call's content: "content" (a
// ContentBlock), "diff" (Path, NewText) or "terminal" (TerminalID).
type ToolContent struct {
	Type       string        `json:"type"`
	Content    *ContentBlock `json:"content,omitempty"`
	Path       string        `json:"path,omitempty"`
	OldText    *string       `json:"oldText,omitempty"`
	NewText    string        `json:"newText,omitempty"`
	TerminalID string        `json:"terminalId,omitempty"`
}

// PlanEntry is one entry of an agent's plan.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority,omitempty"`
	Status   string `json:"status,omitempty"`
}

// wireUpdate is the union of the fields of the update kinds we map.
type wireUpdate struct {
	SessionUpdate string          `json:"sessionUpdate"`
	MessageID     string          `json:"messageId"`
	Content       json.RawMessage `json:"content"`
	ToolCallID    string          `json:"toolCallId"`
	Title         string          `json:"title"`
	Kind          string          `json:"kind"`
	Status        string          `json:"status"`
	RawInput      json.RawMessage `json:"rawInput"`
	RawOutput     json.RawMessage `json:"rawOutput"`
	Entries       []PlanEntry     `json:"entries"`
	Cost          *struct {
		Amount   float64 `json:"amount"`
		Currency string  `json:"currency"`
	} `json:"cost"`
	Meta struct {
		ClaudeCode struct {
			ToolName string `json:"toolName"`
			Kind     string `json:"kind"`
		} `json:"claudeCode"`
	} `json:"_meta"`
}

// DecodeUpdate parses a session/update notification's params. Only params
// that are not an object with an "update" object carrying a string
// "sessionUpdate" are errors (ErrBadUpdate); fields of the wrong type are
// dropped field by field, unknown kinds come back with Kind and Raw only.
func DecodeUpdate(params []byte) (Notification, error) {
	var outer struct {
		SessionID json.RawMessage `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
	}
	if err := json.Unmarshal(params, &outer); err != nil {
		return Notification{}, fmt.Errorf("%w: %v", ErrBadUpdate, err)
	}
	var n Notification
	_ = json.Unmarshal(outer.SessionID, &n.SessionID)
	raw := bytes.TrimSpace(outer.Update)
	if len(raw) == 0 || raw[0] != '{' {
		return Notification{}, fmt.Errorf("%w: no update object", ErrBadUpdate)
	}
	var head struct {
		SessionUpdate string `json:"sessionUpdate"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.SessionUpdate == "" {
		return Notification{}, fmt.Errorf("%w: no sessionUpdate kind", ErrBadUpdate)
	}
	u := Update{Kind: head.SessionUpdate, Raw: append(json.RawMessage(nil), raw...)}
	n.Update = u
	switch u.Kind {
	case KindAgentMessageChunk, KindAgentThoughtChunk, KindToolCall, KindToolCallUpdate, KindPlan, KindUsageUpdate:
	default:
		return n, nil
	}
	w := decodeLenient(raw)
	u.MessageID = w.MessageID
	switch u.Kind {
	case KindAgentMessageChunk, KindAgentThoughtChunk:
		var c ContentBlock
		if json.Unmarshal(w.Content, &c) == nil && c.Type != "" {
			u.Content = &c
		}
		u.Informational = w.Meta.ClaudeCode.Kind == "informational"
	case KindToolCall, KindToolCallUpdate:
		u.ToolCallID, u.Title, u.ToolKind, u.Status = w.ToolCallID, w.Title, w.Kind, w.Status
		u.ToolName = w.Meta.ClaudeCode.ToolName
		u.RawInput = nonNull(w.RawInput)
		u.RawOutput = nonNull(w.RawOutput)
		if c := nonNull(w.Content); c != nil {
			var tc []ToolContent
			if json.Unmarshal(c, &tc) == nil {
				u.ToolContent, u.HasToolContent = tc, true
			}
		}
	case KindPlan:
		u.Entries = w.Entries
	case KindUsageUpdate:
		if w.Cost != nil && strings.EqualFold(w.Cost.Currency, "USD") {
			u.CostUSD, u.HasCost = w.Cost.Amount, true
		}
	}
	n.Update = u
	return n, nil
}

// decodeLenient decodes raw into a wireUpdate; when the whole fails (a
// field of an unexpected type), each field is decoded on its own so the
// others survive.
func decodeLenient(raw []byte) wireUpdate {
	var w wireUpdate
	if json.Unmarshal(raw, &w) == nil {
		return w
	}
	w = wireUpdate{}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return w
	}
	for k, v := range fields {
		one, err := json.Marshal(map[string]json.RawMessage{k: v})
		if err != nil {
			continue
		}
		var part wireUpdate
		if json.Unmarshal(one, &part) != nil {
			continue
		}
		switch k {
		case "sessionUpdate":
			w.SessionUpdate = part.SessionUpdate
		case "messageId":
			w.MessageID = part.MessageID
		case "content":
			w.Content = part.Content
		case "toolCallId":
			w.ToolCallID = part.ToolCallID
		case "title":
			w.Title = part.Title
		case "kind":
			w.Kind = part.Kind
		case "status":
			w.Status = part.Status
		case "rawInput":
			w.RawInput = part.RawInput
		case "rawOutput":
			w.RawOutput = part.RawOutput
		case "entries":
			w.Entries = part.Entries
		case "cost":
			w.Cost = part.Cost
		case "_meta":
			w.Meta = part.Meta
		}
	}
	return w
}

func nonNull(r json.RawMessage) json.RawMessage {
	r = bytes.TrimSpace(r)
	if len(r) == 0 || string(r) == "null" {
		return nil
	}
	return append(json.RawMessage(nil), r...)
}

// Text renders a content block: its text, else a placeholder naming its
// type (and URI).
func (c *ContentBlock) render() string {
	if c == nil {
		return ""
	}
	switch c.Type {
	case "text":
		return c.Text
	case "resource_link", "resource":
		if c.URI != "" {
			return "[" + c.Type + " " + c.URI + "]"
		}
	}
	return "[" + c.Type + "]"
}

// RenderToolContent flattens a tool call's content to the text of its
// tool:result: content blocks as text, diffs as "diff PATH" and the new
// text, terminals as a placeholder.
func RenderToolContent(tc []ToolContent) string {
	var b strings.Builder
	for _, c := range tc {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		switch c.Type {
		case "content":
			b.WriteString(c.Content.render())
		case "diff":
			b.WriteString("diff " + c.Path + "\n" + c.NewText)
		case "terminal":
			b.WriteString("[terminal " + c.TerminalID + "]")
		default:
			b.WriteString("[" + c.Type + "]")
		}
	}
	return b.String()
}

// RenderPlan is how a plan reaches the UI: a thinking:delta of one line
// per entry, "[x]" done, "[~]" in progress, "[ ]" pending.
func RenderPlan(entries []PlanEntry) string {
	var b strings.Builder
	b.WriteString("Plan:\n")
	for _, e := range entries {
		mark := "[ ]"
		switch e.Status {
		case "completed":
			mark = "[x]"
		case "in_progress":
			mark = "[~]"
		}
		b.WriteString(mark + " " + e.Content + "\n")
	}
	return b.String()
}
