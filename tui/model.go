package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// MaxResultLines is how much of a tool result a tool part shows.
const MaxResultLines = 100

// part is one block of the conversation.
type part struct {
	kind      string // user, text, reasoning, tool, approval, note, info
	text      string
	streaming bool // text or reasoning still growing by deltas
	id        string
	name      string
	input     string
	result    *string
	isError   bool
	// approval: the request (id), its tool (name), input, and once
	// answered the decision and who made it.
	decision, by string
	lines        []string // rendered, cached until the part changes
	width        int

	// unsandboxed approval: once allowed the use runs outside the agent's
	// sandbox; the card says so and offers no "always" (the core would
	// allow it once and remember nothing).
	unsandboxed bool
}

// Messages the model gets besides keys and sizes.
type (
	// EventMsg is a decoded server event.
	EventMsg Event
	// ConnMsg reports the event stream's state ("" = connected).
	ConnMsg string
	// ErrMsg is a failed request (prompt, cancel).
	ErrMsg struct{ Err error }
	// NoteMsg is a line for the conversation: what a command did, or
	// (Err) why it could not.
	NoteMsg struct {
		Text string
		Err  bool
	}
	// PreviewMsg is what a /rewind of Turns turns would undo: the turn's
	// message, the files it would restore ("path (op)"), or why its files
	// cannot be (FilesError); Err when the preview failed (no such turn).
	PreviewMsg struct {
		Turns      int
		Text       string
		Files      []string
		FilesError string
		Err        error
	}
)

// Actions are what the model asks its runner to do (the HTTP calls).
type Actions struct {
	Prompt func(string) tea.Cmd
	Cancel func() tea.Cmd
	// Approve answers approval request id: allow, deny or always.
	Approve func(id, decision string) tea.Cmd
	// DecidePlan answers the plan the turn waits with: approve (mode
	// default or acceptEdits) or revise (feedback).
	DecidePlan func(decision, mode, feedback string) tea.Cmd
	Copy       func(string) tea.Cmd // OSC 52
	// Switch changes what the next turns run with: what is "model",
	// "persona" or "permissionMode" (the commands /model, /agent, /mode).
	Switch func(what, name string) tea.Cmd
	// Fork moves the session to a copy of its conversation (/fork).
	Fork func() tea.Cmd
	// Rewind undoes the last turns: their files, their conversation or
	// both (/rewind).
	Rewind func(turns int, files, conversation bool) tea.Cmd
	// Preview asks what undoing the last turns would change (a PreviewMsg),
	// shown while /rewind asks; nil: the question shows no preview.
	Preview func(turns int) tea.Cmd
	// Trust trusts what a trust event showed (/trust): its kind, name,
	// path and hash.
	Trust func(kind, name, path, hash string) tea.Cmd
	// The session's prompt queue (queue.go): Queue queues a message
	// behind the running turn; QueueList, QueueEdit (a new text and/or
	// position, 0 = next) and QueueDelete change it. Each answers with
	// a QueueMsg; asked says a person asked for the list (/queue).
	Queue       func(text string) tea.Cmd
	QueueList   func(asked bool) tea.Cmd
	QueueEdit   func(promptID string, message *string, position *int) tea.Cmd
	QueueDelete func(promptID string) tea.Cmd
	// Steer puts text into the running turn (/steer; POST /steer). The
	// server's stream then shows it as a user event of the turn; a
	// refusal answers a NoteMsg with the server's why.
	Steer func(text string) tea.Cmd
	// Sessions lists the project's sessions with their branches
	// (/sessions), as a NoteMsg.
	Sessions func() tea.Cmd
}

// Model is the TUI's state: the conversation, the status, the input.
type Model struct {
	th       Theme
	act      Actions
	hist     *History
	parts    []*part
	status   string // idle, thinking, running_tool, error
	statusM  string
	conn     string
	input    []rune
	width    int
	height   int
	scroll   int  // lines scrolled up from the bottom
	newBelow bool // content arrived while scrolled up
	help     bool
	selected string         // text chosen for copying (the last assistant part)
	asking   *part          // the approval card waiting for a, d or w
	planning *part          // the plan card waiting for a, e or feedback and Enter
	rewind   *Command       // a /rewind waiting for f, c or b
	preview  string         // what it would undo, once known
	stopping bool           // Ctrl+C sent during a turn
	trusts   []Event        // the trust notices of the current turn, for /trust
	queue    []QueuedPrompt // the session's queued prompts, as last listed
	spent    float64        // the session's cost so far (usage events), USD
	limits   []Event        // the latest rate_limit of each limit
}

// NewModel returns a model using act for its requests and hist for the
// prompt history.
func NewModel(th Theme, act Actions, hist *History) *Model {
	return &Model{th: th, act: act, hist: hist, status: "idle", width: 80, height: 24}
}

// Init implements tea.Model.
func (m *Model) Init() tea.Cmd { return nil }

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		for _, p := range m.parts {
			p.lines = nil
		}
	case EventMsg:
		m.apply(Event(msg))
		if msg.Type == "user" && len(m.queue) > 0 && m.act.QueueList != nil {
			return m, m.act.QueueList(false) // a queued prompt may have started
		}
	case QueueMsg:
		m.queue = msg.Prompts
		if msg.Listed && len(msg.Prompts) == 0 {
			m.parts = append(m.parts, &part{kind: "info", text: "Nothing is queued (a message sent while a turn runs is)."})
		}
	case ConnMsg:
		m.conn = string(msg)
	case ErrMsg:
		m.status, m.statusM = "error", msg.Err.Error()
	case PreviewMsg:
		if m.rewind == nil || m.rewind.Turns != msg.Turns {
			break // answered or cancelled meanwhile
		}
		if msg.Err != nil {
			m.rewind, m.preview = nil, ""
			m.parts = append(m.parts, &part{kind: "info", text: msg.Err.Error(), isError: true})
			break
		}
		m.preview = previewText(msg)
	case NoteMsg:
		m.parts = append(m.parts, &part{kind: "info", text: msg.Text, isError: msg.Err})
		if m.scroll > 0 {
			m.newBelow = true
		}
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.PasteMsg:
		m.input = append(m.input, []rune(msg.Content)...)
	}
	return m, nil
}

func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	s := k.String()
	if m.help {
		if s == "esc" || s == "?" || s == "f1" || s == "q" {
			m.help = false
		}
		return nil
	}
	if m.rewind != nil && len(m.input) == 0 {
		c := *m.rewind
		switch s {
		case "f":
			c.Files = true
		case "c":
			c.Conversation = true
		case "b":
			c.Files, c.Conversation = true, true
		case "esc":
			m.rewind, m.preview = nil, ""
			return nil
		}
		if c.Files || c.Conversation {
			m.rewind, m.preview = nil, ""
			return m.run(c)
		}
	}
	if m.asking != nil && len(m.input) == 0 && m.act.Approve != nil {
		decision := map[string]string{"a": "allow", "d": "deny", "w": "always"}[s]
		if decision == "always" && m.asking.unsandboxed {
			decision = "" // not offered: the core would allow it once
		}
		if decision != "" {
			id := m.asking.id
			m.asking.decision, m.asking.by, m.asking.lines = "sent:"+decision, "", nil
			m.asking = nil
			return m.act.Approve(id, decision)
		}
	}
	if m.planning != nil && m.act.DecidePlan != nil {
		// a approve · e approve, accept edits (with an empty input);
		// text and Enter: keep planning, with the text as feedback.
		mode := map[string]string{"a": "default", "e": "acceptEdits"}[s]
		text := strings.TrimSpace(string(m.input))
		if (mode != "" && len(m.input) == 0) || (s == "enter" && text != "") {
			p := m.planning
			m.planning, p.lines = nil, nil
			if mode != "" {
				p.decision = "sent:approve"
				return m.act.DecidePlan("approve", mode, "")
			}
			m.input = nil
			p.decision = "sent:revise"
			return m.act.DecidePlan("revise", "", text)
		}
	}
	switch s {
	case "enter":
		text := strings.TrimSpace(string(m.input))
		if text == "" {
			return nil
		}
		c, isCmd, msg, err := ParseCommand(text)
		if !isCmd && m.busy() {
			if m.act.Queue == nil {
				return nil
			}
			m.input = nil
			_ = m.hist.Add(text)
			return m.act.Queue(msg) // it runs when the turn ends
		}
		m.input = nil
		m.scroll, m.newBelow = 0, false
		_ = m.hist.Add(text)
		switch {
		case err != nil:
			m.parts = append(m.parts, &part{kind: "info", text: err.Error(), isError: true})
		case isCmd:
			return m.run(c)
		case m.act.Prompt != nil:
			return m.act.Prompt(msg)
		}
	case "ctrl+enter", "alt+enter", "ctrl+j":
		m.input = append(m.input, '\n')
	case "ctrl+c":
		if m.busy() {
			m.stopping = true
			if m.act.Cancel != nil {
				return m.act.Cancel()
			}
			return nil
		}
		return tea.Quit
	case "up":
		if p, ok := m.hist.Prev(string(m.input)); ok {
			m.input = []rune(p)
		}
	case "down":
		if p, ok := m.hist.Next(); ok || p != "" {
			m.input = []rune(p)
		}
	case "pgup":
		m.scroll += m.convHeight() - 1
		if max := m.maxScroll(); m.scroll > max {
			m.scroll = max
		}
	case "pgdown":
		m.scroll -= m.convHeight() - 1
		if m.scroll <= 0 {
			m.scroll, m.newBelow = 0, false
		}
	case "ctrl+u":
		m.input = nil
	case "ctrl+shift+c":
		if m.act.Copy != nil && m.selected != "" {
			return m.act.Copy(m.selected)
		}
	case "f1":
		m.help = true
	case "?":
		if len(m.input) == 0 {
			m.help = true
			return nil
		}
		m.input = append(m.input, '?')
	case "esc":
		m.selected = ""
		m.rewind, m.preview = nil, ""
	case "backspace":
		if len(m.input) > 0 {
			m.input = m.input[:len(m.input)-1]
		}
	default:
		if k.Text != "" {
			m.input = append(m.input, []rune(k.Text)...)
		}
	}
	return nil
}

func (m *Model) busy() bool { return m.status == "thinking" || m.status == "running_tool" }

// apply adds a server event to the conversation.
func (m *Model) apply(ev Event) {
	last := func() *part {
		if len(m.parts) == 0 {
			return nil
		}
		return m.parts[len(m.parts)-1]
	}
	switch ev.Type {
	case "user":
		m.parts = append(m.parts, &part{kind: "user", text: ev.Content})
		m.stopping = false
		m.trusts = nil
	case "trust":
		m.endStreaming()
		m.trusts = append(m.trusts, ev)
		m.parts = append(m.parts, &part{kind: "info", text: trustText(ev), isError: true})
	case "text_delta", "reasoning_delta":
		kind := strings.TrimSuffix(ev.Type, "_delta")
		if p := last(); p != nil && p.kind == kind && p.streaming {
			p.text += ev.Content
			p.lines = nil
		} else {
			m.parts = append(m.parts, &part{kind: kind, text: ev.Content, streaming: true})
		}
	case "text", "reasoning":
		// The whole block: it replaces what its deltas built.
		if p := last(); p != nil && p.kind == ev.Type && p.streaming {
			p.text, p.streaming, p.lines = ev.Content, false, nil
		} else {
			m.parts = append(m.parts, &part{kind: ev.Type, text: ev.Content})
		}
		if ev.Type == "text" {
			m.selected = ev.Content
		}
	case "tool_call":
		m.endStreaming()
		m.parts = append(m.parts, &part{kind: "tool", id: ev.ID, name: ev.Name, input: pretty(ev.Input)})
	case "tool_result":
		for i := len(m.parts) - 1; i >= 0; i-- {
			if p := m.parts[i]; p.kind == "tool" && p.id == ev.ID {
				p.result, p.isError, p.lines = ev.Result, *ev.IsError, nil
				break
			}
		}
	case "approval":
		m.endStreaming()
		p := &part{kind: "approval", id: ev.RequestID, name: ev.Tool, input: pretty(ev.Input), unsandboxed: ev.Unsandboxed}
		m.parts = append(m.parts, p)
		m.asking = p
	case "approval_resolved":
		for i := len(m.parts) - 1; i >= 0; i-- {
			if p := m.parts[i]; p.kind == "approval" && p.id == ev.RequestID {
				p.decision, p.by, p.lines = ev.Decision, ev.By, nil
				if m.asking == p {
					m.asking = nil
				}
				break
			}
		}
	case "plan":
		m.endStreaming()
		p := &part{kind: "plan", id: ev.PlanID, text: ev.Plan}
		m.parts = append(m.parts, p)
		m.planning = p
	case "plan_resolved":
		for i := len(m.parts) - 1; i >= 0; i-- {
			if p := m.parts[i]; p.kind == "plan" && p.id == ev.PlanID {
				p.decision, p.by, p.name, p.lines = ev.Decision, ev.By, ev.Mode+ev.Feedback, nil
				if m.planning == p {
					m.planning = nil
				}
				break
			}
		}
	case "session":
		m.endStreaming()
		m.parts = append(m.parts, &part{kind: "info", text: "Forked: this is now session " + ev.SessionID + ", a copy of " + ev.From})
	case "rewound":
		m.endStreaming()
		m.parts = append(m.parts, &part{kind: "info", text: rewoundText(ev)})
	case "usage":
		m.spent += ev.CostUSD
	case "rate_limit":
		m.limits = slices.DeleteFunc(m.limits, func(l Event) bool { return l.Limit == ev.Limit })
		m.limits = append(m.limits, ev)
	case "status":
		m.status, m.statusM = ev.State, ev.Message
		if ev.State == "idle" || ev.State == "error" {
			m.endStreaming()
			m.asking, m.planning = nil, nil
			if ev.State == "idle" && (ev.Message == "interrupted" || m.stopping) {
				m.parts = append(m.parts, &part{kind: "note", text: "Interrupted"})
			}
			m.stopping = false
		}
	}
	if m.scroll > 0 && ev.Type != "status" && ev.Type != "usage" && ev.Type != "rate_limit" {
		m.newBelow = true
	}
}

// endStreaming ends a part still growing by deltas (its block event
// never came: the turn was cut).
func (m *Model) endStreaming() {
	if n := len(m.parts); n > 0 {
		m.parts[n-1].streaming = false
	}
}

// pretty indents a JSON input for a tool or approval part.
func pretty(input json.RawMessage) string {
	in := string(input)
	var v any
	if json.Unmarshal(input, &v) == nil {
		if b, err := json.MarshalIndent(v, "", "  "); err == nil {
			in = string(b)
		}
	}
	return in
}

// resultText shows a native tool's one-field JSON answer ({"content": …},
// {"entries": …}, {"error": …}) as its text; anything else as it is.
func resultText(r string) string {
	var m map[string]string
	if json.Unmarshal([]byte(r), &m) == nil && len(m) == 1 {
		for _, v := range m {
			return v
		}
	}
	return r
}

// StatusLine is the status text the contract gives each state; a thinking
// status with a message (agent serve's retry of the model API) shows it.
func StatusLine(state, message string) string {
	switch state {
	case "thinking":
		if message != "" { // why it takes long: "Retrying 3/10 in 4 s — API unreachable"
			return "Thinking... " + message
		}
		return "Thinking..."
	case "running_tool":
		return "Running: " + message + "..."
	case "error":
		return "Error: " + message
	}
	return ""
}

func (m *Model) render(p *part) []string {
	if p.lines != nil && p.width == m.width {
		return p.lines
	}
	w := max(20, m.width-2)
	wrap := lipgloss.NewStyle().Width(w)
	var lines []string
	switch p.kind {
	case "user":
		bar := m.th.style(m.th.User).Render("▌ ")
		for _, l := range strings.Split(wrap.Width(w-2).Render(p.text), "\n") {
			lines = append(lines, bar+m.th.style(m.th.User).Render(l))
		}
	case "text":
		for _, l := range RenderMarkdown(p.text, m.th) {
			lines = append(lines, strings.Split(wrap.Render(l), "\n")...)
		}
	case "reasoning":
		st := m.th.style(m.th.Reasoning).Italic(true).Faint(true)
		for _, l := range strings.Split(wrap.Render(p.text), "\n") {
			lines = append(lines, st.Render(l))
		}
	case "tool":
		lines = append(lines, m.th.style(m.th.ToolName).Bold(true).Render("⚙ "+p.name))
		for _, l := range strings.Split(p.input, "\n") {
			lines = append(lines, "  "+l)
		}
		if p.result != nil {
			st := m.th.style(m.th.Text)
			if p.isError {
				st = m.th.style(m.th.Error)
			}
			for _, l := range strings.Split(Truncate(resultText(*p.result), MaxResultLines), "\n") {
				lines = append(lines, st.Render("  │ "+l))
			}
		}
	case "approval":
		lines = append(lines, m.approvalCard(p, w)...)
	case "plan":
		lines = append(lines, m.planCard(p, w)...)
	case "note":
		lines = append(lines, m.th.style(m.th.Status).Italic(true).Render("⏹ "+p.text))
	case "info":
		st, mark := m.th.style(m.th.Status), "» "
		if p.isError {
			st, mark = m.th.style(m.th.Error), "✗ "
		}
		for _, l := range strings.Split(wrap.Width(w-2).Render(p.text), "\n") {
			lines = append(lines, st.Render(mark+strings.TrimRight(l, " ")))
			mark = "  "
		}
	}
	p.lines, p.width = append(lines, ""), m.width
	return p.lines
}

// unsandboxedWarning is on the card of a use that, once allowed, may run
// outside the agent's sandbox (the approval event's unsandboxed).
const unsandboxedWarning = "⚠ may run OUTSIDE its sandbox once allowed (the agent does not say whether it will)"

// approvalCard is an approval request in a box: the tool, its input, and
// the keys while it waits, or its outcome.
func (m *Model) approvalCard(p *part, w int) []string {
	var b strings.Builder
	b.WriteString(m.th.style(m.th.ToolName).Bold(true).Render("? Allow "+p.name+"?") + "\n")
	b.WriteString(Truncate(p.input, 20) + "\n")
	if p.unsandboxed {
		b.WriteString(m.th.style(m.th.Error).Bold(true).Render(unsandboxedWarning) + "\n")
	}
	switch {
	case p.decision == "" && p.unsandboxed:
		b.WriteString(m.th.style(m.th.Status).Render("a allow once · d deny"))
	case p.decision == "":
		b.WriteString(m.th.style(m.th.Status).Render("a allow · d deny · w always allow"))
	case strings.HasPrefix(p.decision, "sent:"):
		b.WriteString(m.th.style(m.th.Status).Render("answering: " + strings.TrimPrefix(p.decision, "sent:") + "…"))
	case p.decision == "allow":
		b.WriteString(m.th.style(m.th.User).Render("✓ allowed (" + p.by + ")"))
	default:
		b.WriteString(m.th.style(m.th.Error).Render("✗ denied (" + p.by + ")"))
	}
	box := lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color(m.th.Border)).Padding(0, 1).Width(max(10, w))
	return strings.Split(box.Render(b.String()), "\n")
}

// planCard is a plan waiting for review in a box: the plan (markdown),
// and the keys while it waits, or what was decided.
func (m *Model) planCard(p *part, w int) []string {
	var b strings.Builder
	b.WriteString(m.th.style(m.th.ToolName).Bold(true).Render("▤ The agent has a plan") + "\n")
	for _, l := range RenderMarkdown(p.text, m.th) {
		b.WriteString(l + "\n")
	}
	switch {
	case p.decision == "":
		b.WriteString(m.th.style(m.th.Status).Render(planKeys))
	case strings.HasPrefix(p.decision, "sent:"):
		b.WriteString(m.th.style(m.th.Status).Render("deciding: " + strings.TrimPrefix(p.decision, "sent:") + "…"))
	case p.decision == "approve":
		b.WriteString(m.th.style(m.th.User).Render("✓ approved, goes on in " + p.name + " (" + p.by + ")"))
	default:
		b.WriteString(m.th.style(m.th.Error).Render("↺ back to planning (" + p.by + "): " + p.name))
	}
	box := lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color(m.th.Border)).Padding(0, 1).Width(max(10, w))
	return strings.Split(box.Render(b.String()), "\n")
}

// planKeys says how a plan card is answered.
const planKeys = "a approve · e approve, accept edits · or type what to change + Enter"

func (m *Model) convLines() []string {
	var all []string
	for _, p := range m.parts {
		all = append(all, m.render(p)...)
	}
	return all
}

func (m *Model) convHeight() int {
	h := m.height - 1 - strings.Count(m.inputBox(), "\n") - 1 - strings.Count(m.statusLine(), "\n") - len(m.queueLines())
	return max(1, h)
}

// statusLine is the status (and connection state), wrapped at the
// terminal's width: an error is shown whole, never cut.
func (m *Model) statusLine() string {
	status := StatusLine(m.status, m.statusM)
	if m.asking != nil {
		status = "Waiting for your answer: " + m.asking.name + " (a allow · d deny · w always)"
		if m.asking.unsandboxed {
			status = "Waiting for your answer: " + m.asking.name + ", maybe OUTSIDE its sandbox (a allow once · d deny)"
		}
	}
	if m.planning != nil {
		status = "Plan ready: " + planKeys
	}
	if m.rewind != nil {
		status = "Rewind " + turnsText(m.rewind.Turns) + m.preview + ": f files · c conversation · b both · Esc cancel"
	}
	if u := m.usageText(); u != "" {
		status = strings.TrimSpace(status + "  " + u)
	}
	if m.conn != "" {
		status = strings.TrimSpace(status + "  [" + m.conn + "]")
	}
	stStyle := m.th.style(m.th.Status)
	if m.status == "error" {
		stStyle = m.th.style(m.th.Error)
	}
	if lipgloss.Width(status) > m.width {
		status = lipgloss.NewStyle().Width(max(10, m.width)).Render(status)
	}
	var out []string
	for _, l := range strings.Split(status, "\n") {
		out = append(out, stStyle.Render(strings.TrimRight(l, " ")))
	}
	return strings.Join(out, "\n")
}

// inputBox is the rendered input: the text (or a hint) in a rounded box.
func (m *Model) inputBox() string {
	box := lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color(m.th.Border)).Width(max(10, m.width))
	in := string(m.input)
	if in == "" {
		in = m.th.style(m.th.Reasoning).Render("Message  (Enter send · Ctrl+J newline · ? help)")
	}
	return box.Render(in)
}

func (m *Model) maxScroll() int { return max(0, len(m.convLines())-m.convHeight()) }

// View implements tea.Model: the conversation (scrolled), the status line,
// the input box; the help modal over them when open.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Frame())
	v.AltScreen = true
	v.BackgroundColor = lipgloss.Color(m.th.Background)
	v.ForegroundColor = lipgloss.Color(m.th.Text)
	return v
}

// Frame is the whole screen as text (golden tests compare it).
func (m *Model) Frame() string {
	lines := m.convLines()
	h := m.convHeight()
	end := len(lines) - m.scroll
	if end < 0 {
		end = 0
	}
	start := max(0, end-h)
	view := append([]string(nil), lines[start:end]...)
	for len(view) < h {
		view = append([]string{""}, view...)
	}
	if m.newBelow && m.scroll > 0 {
		view[len(view)-1] = m.th.style(m.th.Status).Render("↓ New content")
	}
	frame := strings.Join(view, "\n") + "\n" + m.statusLine() + "\n"
	for _, l := range m.queueLines() {
		frame += l + "\n"
	}
	frame += m.inputBox()
	if m.help {
		return overlay(frame, m.helpBox(), m.width, m.height)
	}
	return frame
}

// Bindings are the keys, as the help modal lists them.
var Bindings = [][2]string{
	{"Enter", "send the message"},
	{"Ctrl+Enter", "new line (Alt+Enter or Ctrl+J where the"},
	{"", "terminal cannot send Ctrl+Enter)"},
	{"Ctrl+C", "stop the running agent; quit when idle"},
	{"a / d / w", "a tool asks: allow, deny, always allow"},
	{"Up / Down", "prompt history"},
	{"PageUp / PageDown", "scroll the conversation"},
	{"Ctrl+U", "clear the input"},
	{"Ctrl+Shift+C", "copy the last answer (OSC 52)"},
	{"? or F1", "this help"},
	{"Esc", "close help / cancel the selection"},
}

func (m *Model) helpBox() string {
	var b strings.Builder
	b.WriteString(lipgloss.NewStyle().Bold(true).Render("Keys") + "\n\n")
	for _, kb := range Bindings {
		fmt.Fprintf(&b, "%-18s %s\n", kb[0], kb[1])
	}
	b.WriteString("\n" + lipgloss.NewStyle().Bold(true).Render("Commands") + "\n")
	for _, kb := range Commands {
		fmt.Fprintf(&b, "%-18s %s\n", kb[0], kb[1])
	}
	st := lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1)
	if w := lipgloss.Width(b.String()); w+4 > m.width {
		st = st.Width(max(10, m.width-2))
	}
	return st.Render(strings.TrimRight(b.String(), "\n"))
}

// overlay centres box over frame.
func overlay(frame, box string, width, height int) string {
	fl := strings.Split(frame, "\n")
	bl := strings.Split(box, "\n")
	top := max(0, (len(fl)-len(bl))/2)
	left := max(0, (width-lipgloss.Width(bl[0]))/2)
	for i, l := range bl {
		if top+i < len(fl) {
			fl[top+i] = strings.Repeat(" ", left) + l
		}
	}
	return strings.Join(fl, "\n")
}

// run carries out a command: /help here, the others through Actions.
func (m *Model) run(c Command) tea.Cmd {
	refuse := func(text string) tea.Cmd {
		m.parts = append(m.parts, &part{kind: "info", text: text, isError: true})
		return nil
	}
	switch c.Name {
	case "help":
		m.help = true
	case "sessions":
		if m.act.Sessions == nil {
			return refuse("/sessions is not available here")
		}
		return m.act.Sessions()
	case "model", "agent", "mode":
		if m.act.Switch == nil {
			return refuse("/" + c.Name + " is not available here")
		}
		return m.act.Switch(map[string]string{"model": "model", "agent": "persona", "mode": "permissionMode"}[c.Name], c.Arg)
	case "trust":
		if m.act.Trust == nil {
			return refuse("/trust is not available here")
		}
		var cmds []tea.Cmd
		for _, t := range m.trusts {
			if t.TrustKind == "persona" || t.TrustKind == "mcp" {
				cmds = append(cmds, m.act.Trust(t.TrustKind, t.Name, t.Path, t.Hash))
			}
		}
		if len(cmds) == 0 {
			return refuse("/trust: the last turn showed nothing a person can trust here (a session file's rules are granted by answering \"always\")")
		}
		m.trusts = nil
		return tea.Batch(cmds...)
	case "queue":
		return m.runQueue(c, refuse)
	case "steer":
		if m.act.Steer == nil {
			return refuse("/steer is not available here")
		}
		if !m.busy() {
			return refuse("/steer: no turn is running to steer; send the message as a prompt")
		}
		return m.act.Steer(c.Arg)
	case "fork", "rewind":
		if m.busy() {
			return refuse("/" + c.Name + ": a turn is running; wait for its end or stop it with Ctrl+C")
		}
		if c.Name == "fork" {
			if m.act.Fork == nil {
				return refuse("/fork is not available here")
			}
			return m.act.Fork()
		}
		if m.act.Rewind == nil {
			return refuse("/rewind is not available here")
		}
		if !c.Files && !c.Conversation {
			m.rewind, m.preview = &c, "" // ask
			if m.act.Preview != nil {
				return m.act.Preview(c.Turns)
			}
			return nil
		}
		return m.act.Rewind(c.Turns, c.Files, c.Conversation)
	}
	return nil
}

// trustText is a trust notice: what was not honoured, each widened
// grant, and how to trust it.
func trustText(ev Event) string {
	var b strings.Builder
	b.WriteString("Not honoured: " + ev.Message)
	for _, c := range ev.Changes {
		fmt.Fprintf(&b, "\n  %s: %s → %s", c.Field, c.Trusted, c.Now)
	}
	if len(ev.Rules) > 0 {
		b.WriteString("\n  rules: " + strings.Join(ev.Rules, ", "))
	}
	if ev.TrustKind == "persona" || ev.TrustKind == "mcp" {
		b.WriteString("\n  /trust to trust it as shown")
	}
	return b.String()
}

// rewoundText says what a rewind did.
func rewoundText(ev Event) string {
	var what []string
	if n := len(ev.Files); n > 0 {
		shown := ev.Files[:min(n, 10)]
		more := ""
		if n > len(shown) {
			more = fmt.Sprintf(" and %d more", n-len(shown))
		}
		what = append(what, fmt.Sprintf("%d file(s) restored: %s%s", n, strings.Join(shown, ", "), more))
	}
	if ev.Conversation != nil && *ev.Conversation {
		what = append(what, "the conversation continues from before that turn")
	}
	if len(what) == 0 {
		what = append(what, "nothing had changed")
	}
	return "Rewound: " + strings.Join(what, "; ")
}

// previewText is the question's account of what a rewind would undo:
// ` (to before “…”; files to restore: a.go (modified), …)`.
func previewText(p PreviewMsg) string {
	text := []rune(strings.Join(strings.Fields(p.Text), " "))
	if len(text) > 40 {
		text = append(text[:40], '…')
	}
	var files string
	switch {
	case p.FilesError != "":
		files = "its files cannot be restored (" + p.FilesError + ")"
	case len(p.Files) == 0:
		files = "no file changed since"
	default:
		shown := p.Files[:min(len(p.Files), 5)]
		files = "files to restore: " + strings.Join(shown, ", ")
		if n := len(p.Files) - len(shown); n > 0 {
			files += fmt.Sprintf(" and %d more", n)
		}
	}
	return " (to before “" + string(text) + "”; " + files + ")"
}

// usageText is what the session spent and its nearest rate limit (the
// most used): "$0.0123 · five_hour 83% (resets 14:05)"; empty before any.
func (m *Model) usageText() string {
	var parts []string
	if m.spent != 0 {
		parts = append(parts, fmt.Sprintf("$%.4f", m.spent))
	}
	var near *Event
	for i := range m.limits {
		if l := &m.limits[i]; near == nil || *l.UsedPercent > *near.UsedPercent {
			near = l
		}
	}
	if near != nil {
		t := near.Limit
		if *near.UsedPercent >= 0 {
			t += fmt.Sprintf(" %.0f%%", *near.UsedPercent)
		}
		if near.ResetsAt > 0 {
			t += " (resets " + time.Unix(near.ResetsAt, 0).Local().Format("Jan 2 15:04") + ")"
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, " · ")
}
