package claudecode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/chirality/harness/event"
)

// DefaultMaxLineBytes bounds one NDJSON line. The CLI prints whole answers,
// tool results and images on one line, so the bound is generous; a longer
// line is reported as a [LineError] and skipped, never fatal.
const DefaultMaxLineBytes = 128 << 20

// Frame is one line of the CLI's stdout as the decoder classified it.
// Raw aliases the decoder's buffer: it is valid only until the callback
// that received it returns.
type Frame struct {
	Type            string // "system", "stream_event", "assistant", "user", "result", "control_response", …
	Subtype         string // system and result subtypes; the raw event type for stream_event
	SessionID       string // Claude's session id, when the frame carries one
	ParentToolUseID string // set on subagent frames
	Raw             []byte
}

// LineError describes a line that could not be used: malformed JSON, a
// known frame with a field of the wrong type, or a line over the bound.
// Decoding goes on after it.
type LineError struct {
	Line     int    // 1-based line number
	Prefix   string // the first 500 bytes of the line
	Err      error
	Oversize bool
}

func (e *LineError) Error() string {
	if e.Oversize {
		return fmt.Sprintf("claudecode: line %d over the size bound, skipped", e.Line)
	}
	return fmt.Sprintf("claudecode: line %d: %v: %.500q", e.Line, e.Err, e.Prefix)
}

func (e *LineError) Unwrap() error { return e.Err }

// DecoderOptions tune a Decoder. The zero value is ready to use.
type DecoderOptions struct {
	// SessionID is stamped on every event as sessionId.
	SessionID string
	// MaxLineBytes bounds a line (default DefaultMaxLineBytes).
	MaxLineBytes int
	// OnFrame, when set, sees every non-blank line, including those that
	// produce no event (unknown types, control messages). It must not keep
	// Frame.Raw after it returns.
	OnFrame func(Frame)
	// OnLineError, when set, is told of every skipped line.
	OnLineError func(*LineError)
}

// Decoder turns the CLI's stream-json stdout into UI events. It knows
// nothing about processes: the driver feeds it the child's stdout, tests
// feed it recorded transcripts.
//
//	d := claudecode.NewDecoder(r, claudecode.DecoderOptions{SessionID: "s1"})
//	for d.Next() {
//		ev := d.Event()
//		…
//	}
//	if err := d.Err(); err != nil { … } // read errors only
//
// Bad lines are skipped (see OnLineError); unknown frame types are
// ignored. A Decoder is not safe for concurrent use.
type Decoder struct {
	lr      *lineReader
	m       *mapper
	opts    DecoderOptions
	pending []event.Event
	next    int
	cur     event.Event
	err     error
}

// NewDecoder returns a Decoder reading r.
func NewDecoder(r io.Reader, opts DecoderOptions) *Decoder {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	return &Decoder{
		lr:   newLineReader(r, opts.MaxLineBytes),
		m:    newMapper(opts.SessionID),
		opts: opts,
	}
}

// Next advances to the next event, reading as many lines as it takes. It
// returns false at the end of the input or on a read error (see Err).
func (d *Decoder) Next() bool {
	for d.next >= len(d.pending) {
		if d.err != nil {
			return false
		}
		d.pending, d.next = d.pending[:0], 0
		d.step()
	}
	d.cur = d.pending[d.next]
	d.pending[d.next] = event.Event{}
	d.next++
	return true
}

// step decodes one line into d.pending; at the end it sets d.err.
func (d *Decoder) step() {
	line, err := d.lr.next()
	if err != nil {
		var le *LineError
		if errors.As(err, &le) {
			if d.opts.OnLineError != nil {
				d.opts.OnLineError(le)
			}
			return
		}
		d.err = err
		return
	}
	frame, err := d.m.feed(line, func(e event.Event) { d.pending = append(d.pending, e) })
	if err != nil && d.opts.OnLineError != nil {
		d.opts.OnLineError(&LineError{Line: d.lr.lineNo, Prefix: prefix(line, 500), Err: err})
	}
	if frame.Type != "" && d.opts.OnFrame != nil {
		d.opts.OnFrame(frame)
	}
}

// Event returns the event Next advanced to.
func (d *Decoder) Event() event.Event { return d.cur }

// Err returns the first read error, not counting the end of input.
func (d *Decoder) Err() error {
	if errors.Is(d.err, io.EOF) {
		return nil
	}
	return d.err
}

// Result reports what the turn's result frame said, once it was seen.
func (d *Decoder) Result() (ResultInfo, bool) { return d.m.result, d.m.gotResult }

// ConversationID is the session id the CLI reported in system/init.
func (d *Decoder) ConversationID() string { return d.m.conversationID }

func prefix(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

// lineReader reads newline-terminated lines of any length up to max,
// reusing one buffer. Blank lines are skipped.
type lineReader struct {
	src    *fullReads
	br     *bufio.Reader
	max    int
	buf    []byte
	lineNo int
}

// lineBufSize is what one read can return from a pipe (its default
// capacity on Linux): a larger buffer reads no more at a time. A turn
// starts with startBufSize and grows to it once a read fills the buffer
// (the child writes faster than the turn reads: a long stream, where the
// larger reads save syscalls) or a line does not fit. Most turns never
// do: a model's deltas come a line at a time, and 50 turns starting
// together then allocate 50 × 4 KB, not 50 × 64 KB that made the GC
// cycles whose assists stalled every other session's stream. Longer
// lines are assembled in lineReader.buf.
const (
	lineBufSize  = 64 << 10
	startBufSize = 4 << 10
)

// fullReads notes whether a read ever filled the buffer it was given.
type fullReads struct {
	r    io.Reader
	full bool
}

func (f *fullReads) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n == len(p) && n > 0 {
		f.full = true
	}
	return n, err
}

func newLineReader(r io.Reader, max int) *lineReader {
	src := &fullReads{r: r}
	return &lineReader{src: src, br: bufio.NewReaderSize(src, startBufSize), max: max}
}

// grow moves to a lineBufSize buffer. The new reader reads through the
// old one: first what the old one holds, then (the old one empty and the
// reads larger than its buffer) straight from the source.
func (l *lineReader) grow() {
	if l.br.Size() < lineBufSize {
		l.br = bufio.NewReaderSize(l.br, lineBufSize)
	}
}

// next returns the next non-blank line without its terminator. The slice
// is valid until the following call. An oversized line yields a
// *LineError (and is consumed); the end of input yields io.EOF.
func (l *lineReader) next() ([]byte, error) {
	for {
		line, err := l.readLine()
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return line, nil
	}
}

func (l *lineReader) readLine() ([]byte, error) {
	// Let a buffer that grew for one huge line go, so a turn that once
	// printed 50 MB does not keep it for the rest of its life.
	if cap(l.buf) > 4<<20 {
		l.buf = nil
	}
	l.buf = l.buf[:0]
	if l.src.full {
		l.grow() // between lines: nothing of this one was read yet
	}
	oversize := false
	for {
		frag, err := l.br.ReadSlice('\n')
		if !oversize {
			if len(l.buf)+len(frag) > l.max+1 {
				oversize = true
				l.buf = l.buf[:0]
			} else if err == nil && len(l.buf) == 0 {
				// The common case: the whole line is in bufio's buffer.
				l.lineNo++
				return frag[:len(frag)-1], nil
			} else {
				l.buf = append(l.buf, frag...)
			}
		}
		switch {
		case err == nil:
			l.lineNo++
			if oversize {
				return nil, &LineError{Line: l.lineNo, Oversize: true, Err: errLineTooLong}
			}
			return l.buf[:len(l.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			// frag is in l.buf (or dropped, oversize) and the buffer is
			// empty: the rest of the line comes through a larger one.
			l.grow()
			continue
		case errors.Is(err, io.EOF):
			if oversize {
				l.lineNo++
				return nil, &LineError{Line: l.lineNo, Oversize: true, Err: errLineTooLong}
			}
			if len(l.buf) > 0 {
				l.lineNo++
				return l.buf, nil // a last line without a newline
			}
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

var errLineTooLong = errors.New("line too long")

// ResultInfo is what a result frame said, for the driver and for callers
// that want more than the events carry.
type ResultInfo struct {
	Subtype        string
	IsError        bool
	Result         string
	CostUSD        float64
	Usage          json.RawMessage
	NumTurns       int
	DurationMS     int64
	APIErrorStatus int
	TerminalReason string
	Errors         []string
}

// mapper holds the per-turn state that turns frames into events.
type mapper struct {
	sessionID      string
	conversationID string

	// tool_use blocks being streamed, by parent and content index.
	blocks map[blockKey]*toolBlock
	// tool use ids already announced with tool:start.
	started map[string]struct{}
	// message ids whose content arrived as stream events, so their
	// assistant frames must not repeat the text.
	streamed map[string]struct{}
	// the id of the message each parent is currently streaming.
	current map[string]string
	// the usage of the model call each parent is streaming, from its
	// message_start, completed by its message_delta (usage.go).
	calls map[string]*event.UsageUpdate

	interruptRequested atomic.Bool // set by the driver before it asks the CLI to stop
	sawInterruptMarker bool        // the CLI's "[Request interrupted by user]"
	gotResult          bool
	result             ResultInfo
	// lastAssistant is the uuid of the turn's last assistant frame (not
	// a subagent's): session:complete's Checkpoint, what
	// --resume-session-at takes.
	lastAssistant string

	// interned holds the short strings every line repeats (frame and
	// event types, the session id, a subagent's parent id), by their raw
	// JSON body; last, what each field had on the line before: see str.
	interned map[string]string
	last     [lastFields]string
}

// The fields whose last value mapper.last keeps.
const (
	lastType = iota
	lastSubtype
	lastSessionID
	lastParent
	lastEventType
	lastDeltaType
	lastFields
)

// Bounds of mapper.interned: a turn's lines repeat a few dozen short
// strings; anything else is decoded afresh each time.
const (
	maxInterned      = 64
	maxInternedBytes = 128
)

// str is stringValue for the short strings every line repeats: after
// the first time, the same raw bytes give the same string without
// allocating one per line. last is the field's value on the line before
// (most lines repeat it); the others are looked up in m.interned. Only
// strings without escapes are kept, so the raw body is the value.
func (m *mapper) str(raw []byte, last *string) (string, error) {
	if len(raw) < 2 || len(raw) > maxInternedBytes+2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return stringValue(raw)
	}
	body := raw[1 : len(raw)-1]
	if len(body) > 0 && string(body) == *last {
		return *last, nil
	}
	if s, ok := m.interned[string(body)]; ok {
		*last = s
		return s, nil
	}
	s, err := stringValue(raw)
	if err == nil && s == string(body) {
		if len(m.interned) < maxInterned {
			m.interned[s] = s
		}
		*last = s
	}
	return s, err
}

type blockKey struct {
	parent string
	index  int
}

type toolBlock struct {
	id, name string
	input    []byte
}

func newMapper(sessionID string) *mapper {
	return &mapper{
		sessionID: sessionID,
		blocks:    map[blockKey]*toolBlock{},
		started:   map[string]struct{}{},
		streamed:  map[string]struct{}{},
		current:   map[string]string{},
		calls:     map[string]*event.UsageUpdate{},
		interned:  make(map[string]string, maxInterned),
	}
}

// feed maps one line. It returns the frame's classification (Type empty
// when the line is not a JSON object) and an error for a malformed line.
func (m *mapper) feed(line []byte, emit func(event.Event)) (Frame, error) {
	f := Frame{Raw: line}
	var event, message []byte
	var resultLine bool
	var uuid string
	var uuidRaw []byte
	// ev holds what the walk found in the event member when it is an
	// object (the hot path: every stream_event line), so the event and
	// its delta are not walked a second and a third time.
	var ev eventFields
	evWalked := false
	err := m.walkLine(line, &ev, &evWalked, func(key, value []byte) bool {
		var err error
		switch {
		case keyIs(key, "type"):
			f.Type, err = m.str(value, &m.last[lastType])
		case keyIs(key, "subtype"):
			f.Subtype, err = m.str(value, &m.last[lastSubtype])
		case keyIs(key, "session_id"):
			f.SessionID, err = m.str(value, &m.last[lastSessionID])
		case keyIs(key, "parent_tool_use_id"):
			f.ParentToolUseID, err = m.str(value, &m.last[lastParent])
		case keyIs(key, "event"):
			event = value
		case keyIs(key, "message"):
			message = value
		case keyIs(key, "uuid"):
			// Every line has its own uuid and only an assistant
			// frame's is kept: check it now, decode it then.
			uuidRaw, err = value, checkString(value)
		}
		return err == nil
	})
	if err != nil {
		return Frame{}, err
	}
	if f.Type == "assistant" && uuidRaw != nil {
		uuid, _ = stringValue(uuidRaw) // checked above
	}
	switch f.Type {
	case "stream_event":
		if event == nil {
			return f, nil
		}
		if evWalked {
			return f, m.applyEvent(&f, &ev, emit)
		}
		return f, m.streamEvent(&f, event, emit)
	case "system":
		switch f.Subtype {
		case "init":
			return f, m.systemInit(line, emit)
		case "api_retry":
			return f, m.apiRetry(f.ParentToolUseID, line, emit)
		}
	case "rate_limit_event":
		return f, m.rateLimit(line, emit)
	case "assistant":
		if f.ParentToolUseID == "" && uuid != "" {
			m.lastAssistant = uuid
		}
		if message != nil {
			return f, m.assistant(f.ParentToolUseID, message, emit)
		}
	case "user":
		if message != nil {
			return f, m.user(f.ParentToolUseID, message, emit)
		}
	case "result":
		resultLine = true
	}
	if resultLine {
		return f, m.resultFrame(line, emit)
	}
	return f, nil
}

func (m *mapper) event(t event.Type, parent string) event.Event {
	return event.Event{Type: t, SessionID: m.sessionID, ParentToolUseID: parent}
}

// eventFields is what streamEvent reads of a stream_event's event.
type eventFields struct {
	typ                   string
	index                 int
	delta, block, message []byte
	usage                 []byte // message_delta's
	// deltaWalked: delta is an object whose members are in d.
	deltaWalked bool
	d           deltaFields
}

// deltaFields is what blockDelta reads of a content_block_delta's delta.
type deltaFields struct {
	typ           string
	text, partial []byte
}

// eventField reads one member of an event into ev. It reports false on
// the first member it cannot read, after which no other member is read.
func (m *mapper) eventField(ev *eventFields, key, value []byte) bool {
	var err error
	switch {
	case keyIs(key, "type"):
		ev.typ, err = m.str(value, &m.last[lastEventType])
	case keyIs(key, "index"):
		ev.index, err = intValue(value)
	case keyIs(key, "delta"):
		ev.delta, ev.deltaWalked = value, false
	case keyIs(key, "content_block"):
		ev.block = value
	case keyIs(key, "message"):
		ev.message = value
	case keyIs(key, "usage"):
		ev.usage = value
	}
	return err == nil
}

// deltaField reads one member of a delta into d, like eventField.
func (m *mapper) deltaField(d *deltaFields, key, value []byte) bool {
	var err error
	switch {
	case keyIs(key, "type"):
		d.typ, err = m.str(value, &m.last[lastDeltaType])
	case keyIs(key, "text"), keyIs(key, "thinking"):
		d.text = value
	case keyIs(key, "partial_json"):
		d.partial = value
	}
	return err == nil
}

// walkLine is eachField(line, fn) that also reads, in the same walk, the
// members of an "event" member that is an object, and of its "delta"
// member, into ev (*walked: the last "event" member was such an object),
// as streamEvent and blockDelta would read them from the event's raw
// bytes: each stops reading at the first member it cannot read, and
// the line is still walked, and checked, to its end.
func (m *mapper) walkLine(line []byte, ev *eventFields, walked *bool, fn func(key, value []byte) bool) error {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return errSyntax
	}
	end, err := walkObject(line, i, func(key []byte, vs int) (int, error) {
		var i int
		var err error
		if keyIs(key, "event") && vs < len(line) && line[vs] == '{' {
			*ev, *walked = eventFields{}, true
			reading := true
			i, err = walkObject(line, vs, func(key []byte, vs int) (int, error) {
				if reading && keyIs(key, "delta") && vs < len(line) && line[vs] == '{' {
					ev.d, ev.deltaWalked = deltaFields{}, false
					dReading := true
					end, err := walkObject(line, vs, func(key []byte, vs int) (int, error) {
						end, err := skipValueDepth(line, vs, 2)
						if err == nil && dReading {
							dReading = m.deltaField(&ev.d, key, line[vs:end])
						}
						return end, err
					})
					if err == nil {
						reading = m.eventField(ev, key, line[vs:end])
						ev.deltaWalked = true
					}
					return end, err
				}
				end, err := skipValueDepth(line, vs, 1)
				if err == nil && reading {
					reading = m.eventField(ev, key, line[vs:end])
				}
				return end, err
			})
		} else {
			if keyIs(key, "event") {
				*walked = false
			}
			i, err = skipValueDepth(line, vs, 0)
		}
		if err != nil {
			return i, err
		}
		if !fn(key, line[vs:i]) {
			return i, errStopWalk
		}
		return i, nil
	})
	switch {
	case err == errStopWalk:
		return nil
	case err != nil:
		return err
	}
	return trailing(line, end)
}

func (m *mapper) streamEvent(f *Frame, raw []byte, emit func(event.Event)) error {
	var ev eventFields
	err := eachField(raw, func(key, value []byte) bool { return m.eventField(&ev, key, value) })
	if err != nil {
		return err
	}
	return m.applyEvent(f, &ev, emit)
}

// applyEvent maps a stream_event's event, read into ev.
func (m *mapper) applyEvent(f *Frame, ev *eventFields, emit func(event.Event)) error {
	typ, index, delta, block, message := ev.typ, ev.index, ev.delta, ev.block, ev.message
	f.Subtype = typ
	parent := f.ParentToolUseID
	switch typ {
	case "content_block_delta":
		if delta == nil {
			return nil
		}
		if ev.deltaWalked {
			return m.applyDelta(parent, index, &ev.d, emit)
		}
		return m.blockDelta(parent, index, delta, emit)
	case "content_block_start":
		if block == nil {
			return nil
		}
		return m.blockStart(parent, index, block)
	case "content_block_stop":
		return m.blockStop(parent, index, emit)
	case "message_start":
		if message != nil {
			var id string
			err := eachField(message, func(key, value []byte) bool {
				if keyIs(key, "id") {
					id, _ = stringValue(value)
					return false
				}
				return true
			})
			if err != nil {
				return err
			}
			if id != "" {
				m.streamed[id] = struct{}{}
				m.current[parent] = id
			}
			return m.callStart(parent, message)
		}
	case "message_delta":
		return m.callEnd(parent, ev.usage, emit)
	}
	return nil
}

func (m *mapper) blockDelta(parent string, index int, raw []byte, emit func(event.Event)) error {
	var d deltaFields
	err := eachField(raw, func(key, value []byte) bool { return m.deltaField(&d, key, value) })
	if err != nil {
		return err
	}
	return m.applyDelta(parent, index, &d, emit)
}

// applyDelta maps a content_block_delta's delta, read into d.
func (m *mapper) applyDelta(parent string, index int, d *deltaFields, emit func(event.Event)) error {
	typ, text, partial := d.typ, d.text, d.partial
	switch typ {
	case "text_delta", "thinking_delta":
		if text == nil {
			return nil
		}
		s, err := stringValue(text)
		if err != nil {
			return err
		}
		t := event.TypeChatDelta
		if typ == "thinking_delta" {
			t = event.TypeThinkingDelta
		}
		e := m.event(t, parent)
		e.Text = s
		emit(e)
	case "input_json_delta":
		b := m.blocks[blockKey{parent, index}]
		if b == nil || partial == nil {
			return nil
		}
		s, err := stringValue(partial)
		if err != nil {
			return err
		}
		b.input = append(b.input, s...)
	}
	return nil
}

func (m *mapper) blockStart(parent string, index int, raw []byte) error {
	var typ, id, name string
	err := eachField(raw, func(key, value []byte) bool {
		var err error
		switch {
		case keyIs(key, "type"):
			typ, err = stringValue(value)
		case keyIs(key, "id"):
			id, err = stringValue(value)
		case keyIs(key, "name"):
			name, err = stringValue(value)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if typ == "tool_use" || typ == "server_tool_use" || typ == "mcp_tool_use" {
		m.blocks[blockKey{parent, index}] = &toolBlock{id: id, name: name}
	}
	return nil
}

func (m *mapper) blockStop(parent string, index int, emit func(event.Event)) error {
	k := blockKey{parent, index}
	b := m.blocks[k]
	if b == nil {
		return nil
	}
	delete(m.blocks, k)
	input := bytes.TrimSpace(b.input)
	if len(input) == 0 || !json.Valid(input) {
		input = []byte("{}")
	}
	m.toolStart(parent, b.id, b.name, input, emit)
	return nil
}

// toolStart announces a tool use once, whichever of the stream and the
// assistant frame completes it first.
func (m *mapper) toolStart(parent, id, name string, input []byte, emit func(event.Event)) {
	if id == "" {
		return
	}
	if _, done := m.started[id]; done {
		return
	}
	m.started[id] = struct{}{}
	e := m.event(event.TypeToolStart, parent)
	e.ToolStart = &event.ToolStart{ToolUseID: id, Name: name, Input: append(json.RawMessage(nil), input...)}
	emit(e)
}

func (m *mapper) systemInit(line []byte, emit func(event.Event)) error {
	var f struct {
		SessionID      string   `json:"session_id"`
		Model          string   `json:"model"`
		Tools          []string `json:"tools"`
		Version        string   `json:"claude_code_version"`
		PermissionMode string   `json:"permissionMode"`
		Cwd            string   `json:"cwd"`
		Parent         *string  `json:"parent_tool_use_id"`
		MCPServers     []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Error  string `json:"error"`
		} `json:"mcp_servers"`
	}
	if err := json.Unmarshal(line, &f); err != nil {
		return err
	}
	if f.Tools == nil {
		f.Tools = []string{}
	}
	parent := ""
	if f.Parent != nil {
		parent = *f.Parent
	}
	if parent == "" {
		m.conversationID = f.SessionID
	}
	e := m.event(event.TypeSessionInit, parent)
	e.Init = &event.SessionInit{ConversationID: f.SessionID, Model: f.Model, Tools: f.Tools,
		CLIVersion: f.Version, PermissionMode: f.PermissionMode, Cwd: f.Cwd}
	for _, s := range f.MCPServers {
		e.Init.MCPServers = append(e.Init.MCPServers, event.MCPServerStatus{Name: s.Name, Status: s.Status, Error: s.Error})
	}
	emit(e)
	return nil
}

// apiRetry maps the CLI's report of a failed Messages API request it will
// send again: {"type":"system","subtype":"api_retry","attempt":1,
// "max_retries":10,"retry_delay_ms":583,"error_status":529,
// "error":"overloaded"}. error is the CLI's category word; "unknown" with
// no status is a request that got no answer (connection refused, DNS,
// timeout), shown as "API unreachable".
func (m *mapper) apiRetry(parent string, line []byte, emit func(event.Event)) error {
	var f struct {
		Attempt     int     `json:"attempt"`
		MaxRetries  int     `json:"max_retries"`
		DelayMS     float64 `json:"retry_delay_ms"`
		ErrorStatus *int    `json:"error_status"`
		Error       string  `json:"error"`
	}
	if err := json.Unmarshal(line, &f); err != nil {
		return err
	}
	r := &event.SessionRetry{Attempt: f.Attempt, MaxRetries: f.MaxRetries, DelayMS: int64(f.DelayMS)}
	if f.ErrorStatus != nil {
		r.APIErrorStatus = *f.ErrorStatus
	}
	switch {
	case r.APIErrorStatus == 0 && (f.Error == "unknown" || f.Error == ""):
		r.Error = "API unreachable"
	default:
		r.Error = event.RetryErrorText(f.Error)
	}
	e := m.event(event.TypeSessionRetry, parent)
	e.Retry = r
	emit(e)
	return nil
}

// assistant reads a completed content block. Its text was already
// streamed when the message's stream events were seen; tool uses are
// announced here (the frame has the full input) unless the stream did it.
func (m *mapper) assistant(parent string, raw []byte, emit func(event.Event)) error {
	var id, model string
	var content []byte
	err := eachField(raw, func(key, value []byte) bool {
		var err error
		switch {
		case keyIs(key, "id"):
			id, err = stringValue(value)
		case keyIs(key, "model"):
			model, err = stringValue(value)
		case keyIs(key, "content"):
			content = value
		}
		return err == nil
	})
	if err != nil || content == nil || content[0] != '[' {
		return err
	}
	_, streamed := m.streamed[id]
	// The CLI reports API errors as a "<synthetic>" assistant message too;
	// the result's session:error says it once, with its kind.
	synthetic := model == "<synthetic>"
	var inner error
	err = eachElement(content, func(block []byte) bool {
		var typ, bid, name string
		var text, input []byte
		inner = eachField(block, func(key, value []byte) bool {
			var err error
			switch {
			case keyIs(key, "type"):
				typ, err = stringValue(value)
			case keyIs(key, "id"):
				bid, err = stringValue(value)
			case keyIs(key, "name"):
				name, err = stringValue(value)
			case keyIs(key, "text"), keyIs(key, "thinking"):
				text = value
			case keyIs(key, "input"):
				input = value
			}
			return err == nil
		})
		if inner != nil {
			return false
		}
		switch typ {
		case "tool_use", "server_tool_use", "mcp_tool_use":
			if input == nil {
				input = []byte("{}")
			}
			m.toolStart(parent, bid, name, input, emit)
		case "text", "thinking":
			if streamed || synthetic || text == nil {
				return true
			}
			s, err := stringValue(text)
			if err != nil {
				inner = err
				return false
			}
			t := event.TypeChatDelta
			if typ == "thinking" {
				t = event.TypeThinkingDelta
			}
			e := m.event(t, parent)
			e.Text = s
			emit(e)
		}
		return true
	})
	if err != nil {
		return err
	}
	return inner
}

func (m *mapper) user(parent string, raw []byte, emit func(event.Event)) error {
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		return err
	}
	if len(msg.Content) == 0 || msg.Content[0] != '[' {
		var s string
		if json.Unmarshal(msg.Content, &s) == nil && strings.HasPrefix(s, "[Request interrupted") {
			m.sawInterruptMarker = true
		}
		return nil
	}
	var blocks []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	if err := json.Unmarshal(msg.Content, &blocks); err != nil {
		return err
	}
	for _, b := range blocks {
		switch b.Type {
		case "tool_result":
			e := m.event(event.TypeToolResult, parent)
			e.ToolResult = &event.ToolResult{ToolUseID: b.ToolUseID, Content: flattenContent(b.Content), IsError: b.IsError}
			emit(e)
		case "text":
			if strings.HasPrefix(b.Text, "[Request interrupted") {
				m.sawInterruptMarker = true
			}
		}
	}
	return nil
}

// flattenContent turns a tool_result's content (a string or a list of
// blocks) into text. Text blocks are joined by newlines; other blocks
// (images, documents) are named by a placeholder so the GUI shows that
// something was there.
func flattenContent(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

func (m *mapper) resultFrame(line []byte, emit func(event.Event)) error {
	var f struct {
		Subtype        string          `json:"subtype"`
		IsError        bool            `json:"is_error"`
		Result         string          `json:"result"`
		CostUSD        float64         `json:"total_cost_usd"`
		Usage          json.RawMessage `json:"usage"`
		NumTurns       int             `json:"num_turns"`
		DurationMS     int64           `json:"duration_ms"`
		APIErrorStatus *int            `json:"api_error_status"`
		TerminalReason string          `json:"terminal_reason"`
		Errors         []string        `json:"errors"`
		Parent         *string         `json:"parent_tool_use_id"`
	}
	if err := json.Unmarshal(line, &f); err != nil {
		return err
	}
	if f.Parent != nil && *f.Parent != "" {
		return nil // a subagent's result is not the turn's
	}
	if len(f.Usage) == 0 || string(f.Usage) == "null" {
		f.Usage = json.RawMessage("{}")
	}
	m.gotResult = true
	m.result = ResultInfo{Subtype: f.Subtype, IsError: f.IsError, Result: f.Result, CostUSD: f.CostUSD,
		Usage: f.Usage, NumTurns: f.NumTurns, DurationMS: f.DurationMS, TerminalReason: f.TerminalReason, Errors: f.Errors}
	if f.APIErrorStatus != nil {
		m.result.APIErrorStatus = *f.APIErrorStatus
	}
	if f.Subtype == "success" && !f.IsError {
		e := m.event(event.TypeChatComplete, "")
		e.Text = f.Result
		emit(e)
		e = m.event(event.TypeSessionComplete, "")
		e.Complete = &event.SessionComplete{CostUSD: f.CostUSD, Usage: f.Usage, NumTurns: f.NumTurns, DurationMS: f.DurationMS,
			Checkpoint: m.lastAssistant}
		emit(e)
		return nil
	}
	e := m.event(event.TypeSessionError, "")
	e.Error = m.classify(m.result)
	emit(e)
	return nil
}

// classify says what an error result means. The CLI reports API errors
// and missing credentials under subtype "success" with is_error set, so
// the text matters as much as the subtype.
func (m *mapper) classify(r ResultInfo) *event.SessionError {
	se := &event.SessionError{Subtype: r.Subtype, APIErrorStatus: r.APIErrorStatus, CostUSD: r.CostUSD}
	detail := r.Result
	if detail == "" && len(r.Errors) > 0 {
		detail = strings.Join(r.Errors, "; ")
	}
	switch {
	case r.Subtype == "error_max_turns" || r.TerminalReason == "max_turns":
		se.Kind = event.ErrorMaxTurns
		se.Error = orDefault(detail, "the turn reached its maximum number of turns")
	case r.Subtype == "error_max_budget_usd":
		se.Kind = event.ErrorMaxBudget
		se.Error = orDefault(detail, "the turn reached its budget")
	case m.interruptRequested.Load() || m.sawInterruptMarker:
		se.Kind = event.ErrorInterrupted
		se.Error = "interrupted"
	case strings.Contains(detail, "No conversation found"), strings.Contains(detail, "No message found with message.uuid"):
		// The second: --resume-session-at named a message the transcript
		// no longer has (a cut whose point is gone, as the conversation).
		se.Kind = event.ErrorResumeNotFound
		se.Error = detail
	case strings.Contains(detail, "Not logged in") || strings.Contains(detail, "Invalid API key"):
		se.Kind = event.ErrorNotLoggedIn
		se.Error = detail
	case r.APIErrorStatus != 0 || strings.HasPrefix(detail, "API Error") || r.TerminalReason == "api_error":
		se.Kind = event.ErrorAPI
		se.Error = orDefault(detail, "API error")
	default:
		se.Kind = event.ErrorExecution
		se.Error = orDefault(detail, "the CLI ended the turn with "+orDefault(r.Subtype, "an error"))
	}
	return se
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
