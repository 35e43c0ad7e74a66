package acp

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
)

// Mapper turns one turn's session/update stream into UI events (the
// package doc's table). It knows nothing about processes: parser tests
// replay recorded streams through it. Not safe for concurrent use.
type Mapper struct {
	msgOpen bool
	msgID   string
	msg     strings.Builder
	tools   map[string]*toolState
	order   []string
	costUSD float64
	hasCost bool
	mcp     []string // the session's MCP server names, longest first
}

type toolState struct {
	name, title, kind string
	input             json.RawMessage
	started, ended    bool
	content           []ToolContent
	rawOutput         json.RawMessage
}

// NewMapper returns a Mapper for one turn.
func NewMapper() *Mapper { return &Mapper{tools: map[string]*toolState{}} }

// SetMCPServers gives the names of the session's MCP servers (Request.MCP),
// so that their tools are named mcpconfig.ToolName (mcp__SERVER__TOOL) in
// events and approvals whatever the agent calls them: claude-agent-acp
// already says mcp__everything__echo, OpenCode 1.18.33 titles the call
// everything_echo and Copilot 1.0.102 everything-echo (both kind
// "other"). A name of the form SERVER_TOOL or SERVER-TOOL, for a server
// of the session, is read as that server's tool; the longest server name
// that fits wins.
func (m *Mapper) SetMCPServers(names []string) {
	m.mcp = slices.Clone(names)
	slices.SortStableFunc(m.mcp, func(a, b string) int { return len(b) - len(a) })
}

// mcpName is name as mcp__SERVER__TOOL when it is one of the session's
// MCP servers' tools in an agent's own form; else name.
func (m *Mapper) mcpName(name string) string {
	if strings.HasPrefix(name, "mcp__") {
		return name
	}
	for _, srv := range m.mcp {
		for _, sep := range []string{"_", "-"} {
			if tool, ok := strings.CutPrefix(name, srv+sep); ok && tool != "" {
				return mcpconfig.ToolName(srv, tool)
			}
		}
	}
	return name
}

// Handle maps one update to the events it produces (none for kinds that
// are not shown).
func (m *Mapper) Handle(u Update) []event.Event {
	var out []event.Event
	switch u.Kind {
	case KindAgentMessageChunk:
		if u.Informational {
			out = m.closeMessage(out)
			if s := u.Content.render(); s != "" {
				out = append(out, event.Event{Type: event.TypeThinkingDelta, Text: s + "\n"})
			}
			return out
		}
		if m.msgOpen && u.MessageID != "" && m.msgID != "" && u.MessageID != m.msgID {
			out = m.closeMessage(out)
		}
		s := u.Content.render()
		if s == "" {
			return out
		}
		m.msgOpen = true
		if u.MessageID != "" {
			m.msgID = u.MessageID
		}
		m.msg.WriteString(s)
		out = append(out, event.Event{Type: event.TypeChatDelta, Text: s})
	case KindAgentThoughtChunk:
		out = m.closeMessage(out)
		if s := u.Content.render(); s != "" {
			out = append(out, event.Event{Type: event.TypeThinkingDelta, Text: s})
		}
	case KindPlan:
		out = m.closeMessage(out)
		out = append(out, event.Event{Type: event.TypeThinkingDelta, Text: RenderPlan(u.Entries)})
	case KindToolCall, KindToolCallUpdate:
		out = m.closeMessage(out)
		out = m.tool(u, out)
	case KindUsageUpdate:
		if u.HasCost {
			m.costUSD, m.hasCost = u.CostUSD, true
		}
	}
	return out
}

func (m *Mapper) state(id string) *toolState {
	ts := m.tools[id]
	if ts == nil {
		ts = &toolState{}
		m.tools[id] = ts
		m.order = append(m.order, id)
	}
	return ts
}

func (m *Mapper) tool(u Update, out []event.Event) []event.Event {
	if u.ToolCallID == "" {
		return out
	}
	ts := m.state(u.ToolCallID)
	if ts.ended {
		return out // a late update of a finished tool call
	}
	if u.ToolName != "" {
		ts.name = u.ToolName
	}
	if ts.title == "" && u.Title != "" {
		ts.title = u.Title
	}
	if u.ToolKind != "" {
		ts.kind = u.ToolKind
	}
	if u.RawInput != nil && !ts.started {
		ts.input = u.RawInput
	}
	if u.HasToolContent {
		ts.content = u.ToolContent
	}
	if u.RawOutput != nil {
		ts.rawOutput = u.RawOutput
	}
	switch u.Status {
	case "in_progress":
		out = m.start(u.ToolCallID, ts, out)
	case "completed", "failed":
		out = m.start(u.ToolCallID, ts, out)
		ts.ended = true
		out = append(out, event.Event{Type: event.TypeToolResult, ToolResult: &event.ToolResult{
			ToolUseID: u.ToolCallID, Content: ts.result(u), IsError: u.Status == "failed",
		}})
	}
	return out
}

// EnsureStarted emits the tool:start of a tool call a permission request
// is about, if not yet emitted, with the request's view of the call
// merged in.
func (m *Mapper) EnsureStarted(u Update) []event.Event {
	out := m.closeMessage(nil)
	if u.ToolCallID == "" {
		return out
	}
	ts := m.state(u.ToolCallID)
	if u.ToolName != "" {
		ts.name = u.ToolName
	}
	if ts.title == "" {
		ts.title = u.Title
	}
	if u.ToolKind != "" && ts.kind == "" {
		ts.kind = u.ToolKind
	}
	if u.RawInput != nil && !ts.started {
		ts.input = u.RawInput
	}
	return m.start(u.ToolCallID, ts, out)
}

// ToolName is the name a tool call is shown and asked about with.
func (m *Mapper) ToolName(id string) string {
	if ts := m.tools[id]; ts != nil {
		return m.mcpName(ts.displayName())
	}
	return "tool"
}

// ToolInput is the input a tool call started with.
func (m *Mapper) ToolInput(id string) json.RawMessage {
	if ts := m.tools[id]; ts != nil {
		return ts.inputOrEmpty()
	}
	return json.RawMessage("{}")
}

func (m *Mapper) start(id string, ts *toolState, out []event.Event) []event.Event {
	if ts.started {
		return out
	}
	ts.started = true
	return append(out, event.Event{Type: event.TypeToolStart, ToolStart: &event.ToolStart{
		ToolUseID: id, Name: m.mcpName(ts.displayName()), Input: ts.inputOrEmpty(),
	}})
}

func (ts *toolState) displayName() string {
	switch {
	case ts.name != "":
		return ts.name
	case ts.kind != "" && ts.kind != "other":
		return ts.kind
	case ts.title != "":
		return ts.title
	}
	return "tool"
}

func (ts *toolState) inputOrEmpty() json.RawMessage {
	if len(ts.input) > 0 && ts.input[0] == '{' {
		return ts.input
	}
	if len(ts.input) > 0 {
		b, _ := json.Marshal(map[string]json.RawMessage{"input": ts.input})
		return b
	}
	return json.RawMessage("{}")
}

// result is a finished tool call's output: the content of its final
// update, else that update's rawOutput, else the last content or
// rawOutput seen (content sent before a tool runs can be a preview — its
// description — so the final update's own output wins).
func (ts *toolState) result(final Update) string {
	switch {
	case final.HasToolContent && len(final.ToolContent) > 0:
		return RenderToolContent(final.ToolContent)
	case len(final.RawOutput) > 0:
		return rawText(final.RawOutput)
	case len(ts.content) > 0:
		return RenderToolContent(ts.content)
	}
	return rawText(ts.rawOutput)
}

func rawText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}

func (m *Mapper) closeMessage(out []event.Event) []event.Event {
	if !m.msgOpen {
		return out
	}
	out = append(out, event.Event{Type: event.TypeChatComplete, Text: m.msg.String()})
	m.msgOpen, m.msgID = false, ""
	m.msg.Reset()
	return out
}

// Flush ends the turn's stream: the open message gets its chat:complete
// and a tool call that never started or ended gets its tool:start (so
// the UI shows what ran; it has no result).
func (m *Mapper) Flush() []event.Event {
	out := m.closeMessage(nil)
	for _, id := range m.order {
		if ts := m.tools[id]; !ts.started {
			out = m.start(id, ts, out)
		}
	}
	return out
}

// CostUSD is the last cost in USD an agent reported (usage_update), if
// any. claude-agent-acp reports the session's running total.
func (m *Mapper) CostUSD() (float64, bool) { return m.costUSD, m.hasCost }
