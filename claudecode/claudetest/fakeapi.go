package claudetest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FakeAPI is a local stand-in for the Anthropic Messages API, good enough
// for the real Claude Code CLI to stream, run tools and resume against it
// offline. Point the CLI at it with [FakeAPI.Env].
//
// Each POST /v1/messages is answered by the [Reply] that [FakeAPI.Script]
// queued next, or, when the queue is empty, by the Responder (which
// defaults to a short text answer). Requests are recorded in a bounded
// window and can be inspected with [FakeAPI.Requests]: the newest
// [DefaultKeptRequests] requests as long as they hold at most
// [DefaultKeptBytes] (twice the size of their bodies: raw and decoded;
// the newest one is always kept, whatever its size); older ones
// are forgotten, so a long-lived fake (`harness serve --demo`) does not
// grow with every conversation it answers. [FakeAPI.SetRequestWindow]
// changes the window.
//
// A FakeAPI is safe for concurrent use. Close it when done; Close waits
// for in-flight responses to finish or be cut off.
type FakeAPI struct {
	// URL is the base URL to give the CLI as ANTHROPIC_BASE_URL.
	URL string

	srv      *http.Server
	listener net.Listener
	done     chan struct{}
	closing  chan struct{}
	msgSeq   atomic.Int64

	mu        sync.Mutex
	queue     []Reply
	responder func(*Request) Reply
	requests  []*Request // the window, oldest first
	keptBytes int        // what requests hold (see cost)
	keepN     int
	keepBytes int
}

// The default window of recorded requests (see [FakeAPI.Requests]).
const (
	DefaultKeptRequests = 1000
	DefaultKeptBytes    = 8 << 20
)

// Request is one Messages API call as the fake saw it.
type Request struct {
	Path      string
	Model     string
	Stream    bool
	MaxTokens int
	// System is the text of every system block, in order. The CLI's
	// appended system prompt arrives as one of them.
	System []string
	// Messages is the conversation as sent.
	Messages []Message
	// Tools are the names of the tools offered to the model.
	Tools []string
	// Body is the raw request body.
	Body []byte
}

// Message is one conversation turn of a Request.
type Message struct {
	Role    string
	Content []ContentBlock
}

// ContentBlock is one block of a Message; only the fields a test asserts on
// are decoded.
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Content is a tool_result's content, flattened to text.
	Content string `json:"-"`
}

// LastUserText is the text of the last user message: the newest prompt, or
// the text of the tool results it carries.
func (r *Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != "user" {
			continue
		}
		var b strings.Builder
		for _, c := range m.Content {
			if c.Type == "text" {
				b.WriteString(c.Text)
			} else if c.Type == "tool_result" {
				b.WriteString(c.Content)
			}
		}
		return b.String()
	}
	return ""
}

// ToolResults returns every tool_result block of the conversation.
func (r *Request) ToolResults() []ContentBlock {
	var out []ContentBlock
	for _, m := range r.Messages {
		for _, c := range m.Content {
			if c.Type == "tool_result" {
				out = append(out, c)
			}
		}
	}
	return out
}

// SystemText joins the system blocks with blank lines.
func (r *Request) SystemText() string { return strings.Join(r.System, "\n\n") }

// Reply scripts the answer to one request.
type Reply struct {
	// Blocks are streamed in order as content blocks.
	Blocks []Block
	// StopReason defaults to "tool_use" when a block is a tool use and
	// "end_turn" otherwise.
	StopReason string
	// Status, when not 0 or 200, answers with that HTTP status and an
	// Anthropic error body carrying ErrorMessage.
	Status       int
	ErrorType    string
	ErrorMessage string
	// Retryable lets the client retry the error answer (x-should-retry:
	// true); by default the fake says x-should-retry: false, so an error
	// ends the turn at once.
	Retryable bool
	// Delay waits before answering; ChunkDelay waits between SSE events.
	Delay      time.Duration
	ChunkDelay time.Duration
	// ChunkSize splits text and thinking into deltas of at most this many
	// runes (default 16). Tool inputs are split into JSON pieces alike.
	ChunkSize int
	// InputTokens and OutputTokens are reported in usage (defaults 10, 5).
	InputTokens, OutputTokens int
}

// Block is one content block of a Reply. Build it with [Text], [Thinking]
// or [ToolUse].
type Block struct {
	Kind  string // "text", "thinking" or "tool_use"
	Text  string // text or thinking
	ID    string // tool_use id
	Name  string // tool name
	Input any    // tool input, marshalled to JSON
}

// Text is a streamed text block.
func Text(s string) Block { return Block{Kind: "text", Text: s} }

// Thinking is a streamed thinking block (with a fake signature).
func Thinking(s string) Block { return Block{Kind: "thinking", Text: s} }

// ToolUse asks the CLI to run a tool. An empty id gets a generated one.
func ToolUse(id, name string, input any) Block {
	return Block{Kind: "tool_use", ID: id, Name: name, Input: input}
}

// TextReply is a Reply of one text block.
func TextReply(s string) Reply { return Reply{Blocks: []Block{Text(s)}} }

// ErrorReply is a Reply that fails with an HTTP status, which the client
// does not retry (see Reply.Retryable).
func ErrorReply(status int, message string) Reply {
	return Reply{Status: status, ErrorMessage: message}
}

// NewFakeAPI starts a fake Messages API on a loopback port.
func NewFakeAPI() (*FakeAPI, error) {
	return NewFakeAPIAt("127.0.0.1:0")
}

// NewFakeAPIAt starts a fake Messages API listening on addr.
func NewFakeAPIAt(addr string) (*FakeAPI, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("claudetest: listen: %w", err)
	}
	f := &FakeAPI{
		URL:       "http://" + ln.Addr().String(),
		listener:  ln,
		done:      make(chan struct{}),
		closing:   make(chan struct{}),
		keepN:     DefaultKeptRequests,
		keepBytes: DefaultKeptBytes,
	}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(f.done)
		_ = f.srv.Serve(ln)
	}()
	return f, nil
}

// Env returns the environment entries that point the CLI at this fake:
// base URL, a dummy key, no non-essential traffic.
func (f *FakeAPI) Env() []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + f.URL,
		"ANTHROPIC_API_KEY=sk-ant-fake-for-tests",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
	}
}

// Script queues replies for the next requests, in order.
func (f *FakeAPI) Script(replies ...Reply) {
	f.mu.Lock()
	f.queue = append(f.queue, replies...)
	f.mu.Unlock()
}

// SetResponder sets the function that answers requests when no scripted
// reply is queued. nil restores the default (a short text answer).
func (f *FakeAPI) SetResponder(fn func(*Request) Reply) {
	f.mu.Lock()
	f.responder = fn
	f.mu.Unlock()
}

// SetRequestWindow sets how many of the newest requests are kept for
// Requests (n) and how many bytes they may hold (bytes: twice their
// bodies' size, raw and decoded); 0 leaves a
// bound as it is. The newest request is always kept. Requests already
// recorded are trimmed to the new window at once.
func (f *FakeAPI) SetRequestWindow(n, bytes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n > 0 {
		f.keepN = n
	}
	if bytes > 0 {
		f.keepBytes = bytes
	}
	f.trimLocked()
}

// record adds req to the window, forgetting the oldest requests beyond it.
func (f *FakeAPI) record(req *Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recordLocked(req)
}

func (f *FakeAPI) recordLocked(req *Request) {
	f.requests = append(f.requests, req)
	f.keptBytes += cost(req)
	f.trimLocked()
}

func (f *FakeAPI) trimLocked() { f.dropLocked(1, 0) }

// makeRoom forgets the oldest requests a request of n body bytes would
// push out of the window, before it is decoded: a big conversation then
// never has the previous big one beside it.
func (f *FakeAPI) makeRoom(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropLocked(0, 2*n)
}

// dropLocked forgets the oldest requests, keeping at least keep of them,
// until one more request holding extra bytes fits in the window.
func (f *FakeAPI) dropLocked(keep, extra int) {
	add := 0
	if extra > 0 {
		add = 1
	}
	drop := 0
	for len(f.requests)-drop > keep && (len(f.requests)-drop+add > f.keepN || f.keptBytes+extra > f.keepBytes) {
		f.keptBytes -= cost(f.requests[drop])
		f.requests[drop] = nil
		drop++
	}
	if drop > 0 {
		// A new backing array, so the forgotten requests can be collected.
		f.requests = append([]*Request(nil), f.requests[drop:]...)
	}
}

// cost is what a recorded request holds: its body, and about as much
// again decoded.
func cost(r *Request) int { return 2 * len(r.Body) }

// Requests returns the Messages requests received so far that are still
// in the window (see [FakeAPI]), oldest first.
func (f *FakeAPI) Requests() []*Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Request(nil), f.requests...)
}

// Pending reports how many scripted replies are still queued.
func (f *FakeAPI) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}

// Close stops the server. Responses still streaming are cut off.
func (f *FakeAPI) Close() error {
	select {
	case <-f.closing:
	default:
		close(f.closing)
	}
	err := f.srv.Close()
	<-f.done
	return err
}

// ServeHTTP implements http.Handler so a FakeAPI can also be mounted on a
// server of the caller's.
func (f *FakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v1/messages/count_tokens"):
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"input_tokens":100}`)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v1/messages"):
		f.serveMessages(w, r)
	case r.Method == http.MethodHead || r.Method == http.MethodGet:
		w.WriteHeader(http.StatusOK)
	default:
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`, http.StatusNotFound)
	}
}

func (f *FakeAPI) serveMessages(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, 256<<20)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.makeRoom(len(body))
	req, err := parseRequest(r.URL.Path, body)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if msg := missingToolResult(req); msg != "" {
		// As the real API does: every tool_use needs its tool_result in
		// the next user message.
		f.record(req)
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}

	f.mu.Lock()
	f.recordLocked(req)
	var reply Reply
	if len(f.queue) > 0 && !isSideRequest(req) {
		reply = f.queue[0]
		f.queue = f.queue[1:]
	} else if f.responder != nil {
		reply = f.responder(req)
	} else {
		reply = TextReply("OK")
	}
	f.mu.Unlock()

	if !f.sleep(r, reply.Delay) {
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		typ := reply.ErrorType
		if typ == "" {
			typ = "invalid_request_error"
		}
		if reply.Retryable {
			w.Header().Set("x-should-retry", "true")
		}
		writeAPIError(w, reply.Status, typ, reply.ErrorMessage)
		return
	}
	if !req.Stream {
		f.writeJSONReply(w, req, reply)
		return
	}
	f.streamReply(w, r, req, reply)
}

// readBody reads a request body of at most limit bytes into one buffer
// sized by its Content-Length (io.ReadAll's doubling would allocate
// twice a large conversation's size for nothing).
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength <= 0 || r.ContentLength > limit {
		return io.ReadAll(io.LimitReader(r.Body, limit))
	}
	b := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, b); err != nil {
		return nil, err
	}
	return b, nil
}

// missingToolResult names the first tool_use of an assistant message that
// the next message does not answer with a tool_result ("" when none).
func missingToolResult(req *Request) string {
	for i, m := range req.Messages {
		if m.Role != "assistant" {
			continue
		}
		for _, c := range m.Content {
			if c.Type != "tool_use" {
				continue
			}
			answered := false
			if i+1 < len(req.Messages) && req.Messages[i+1].Role == "user" {
				for _, r := range req.Messages[i+1].Content {
					if r.Type == "tool_result" && r.ToolUseID == c.ID {
						answered = true
					}
				}
			}
			if !answered {
				return fmt.Sprintf("messages.%d: tool_use ids were found without tool_result blocks immediately after: %s", i, c.ID)
			}
		}
	}
	return ""
}

// isSideRequest tells apart the CLI's own small requests (quota probes,
// titles, command-prefix checks) from the conversation: they must not eat
// replies a test scripted for the conversation.
func isSideRequest(req *Request) bool {
	if req.MaxTokens == 1 {
		return true
	}
	return len(req.Tools) == 0 && len(req.Messages) > 0 && !req.Stream
}

func (f *FakeAPI) sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-f.closing:
		return false
	}
}

func writeAPIError(w http.ResponseWriter, status int, typ, msg string) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	b, _ := json.Marshal(map[string]any{
		"type":  "error",
		"error": map[string]string{"type": typ, "message": msg},
	})
	w.Header().Set("Content-Type", "application/json")
	if w.Header().Get("x-should-retry") == "" {
		w.Header().Set("x-should-retry", "false")
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (f *FakeAPI) nextMessageID() string {
	return fmt.Sprintf("msg_fake%06d", f.msgSeq.Add(1))
}

func stopReason(reply Reply) string {
	if reply.StopReason != "" {
		return reply.StopReason
	}
	for _, b := range reply.Blocks {
		if b.Kind == "tool_use" {
			return "tool_use"
		}
	}
	return "end_turn"
}

func (f *FakeAPI) blockID(b Block, i int) string {
	if b.ID != "" {
		return b.ID
	}
	return fmt.Sprintf("toolu_fake%06d_%d", f.msgSeq.Load(), i)
}

func usage(reply Reply) (in, out int) {
	in, out = reply.InputTokens, reply.OutputTokens
	if in == 0 {
		in = 10
	}
	if out == 0 {
		out = 5
	}
	return in, out
}

func (f *FakeAPI) writeJSONReply(w http.ResponseWriter, req *Request, reply Reply) {
	id := f.nextMessageID()
	content := make([]map[string]any, 0, len(reply.Blocks))
	for i, b := range reply.Blocks {
		switch b.Kind {
		case "thinking":
			content = append(content, map[string]any{"type": "thinking", "thinking": b.Text, "signature": "fake-signature"})
		case "tool_use":
			content = append(content, map[string]any{"type": "tool_use", "id": f.blockID(b, i), "name": b.Name, "input": toolInput(b)})
		default:
			content = append(content, map[string]any{"type": "text", "text": b.Text})
		}
	}
	in, out := usage(reply)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stopReason(reply), "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": in, "output_tokens": out},
	})
}

func toolInput(b Block) json.RawMessage {
	if b.Input == nil {
		return json.RawMessage(`{}`)
	}
	if raw, ok := b.Input.(json.RawMessage); ok {
		return raw
	}
	raw, err := json.Marshal(b.Input)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return raw
}

func (f *FakeAPI) streamReply(w http.ResponseWriter, r *http.Request, req *Request, reply Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriter(w)
	rc := http.NewResponseController(w)
	send := func(event string, data any) bool {
		b, err := json.Marshal(data)
		if err != nil {
			return false
		}
		fmt.Fprintf(bw, "event: %s\ndata: %s\n\n", event, b)
		if reply.ChunkDelay > 0 {
			if bw.Flush() != nil || rc.Flush() != nil {
				return false
			}
			return f.sleep(r, reply.ChunkDelay)
		}
		return true
	}
	chunk := reply.ChunkSize
	if chunk <= 0 {
		chunk = 16
	}
	in, out := usage(reply)
	id := f.nextMessageID()
	if !send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": in, "output_tokens": 1},
	}}) {
		return
	}
	for i, b := range reply.Blocks {
		var start map[string]any
		switch b.Kind {
		case "thinking":
			start = map[string]any{"type": "thinking", "thinking": ""}
		case "tool_use":
			start = map[string]any{"type": "tool_use", "id": f.blockID(b, i), "name": b.Name, "input": map[string]any{}}
		default:
			start = map[string]any{"type": "text", "text": ""}
		}
		if !send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start}) {
			return
		}
		var pieces []string
		var deltaType, field string
		switch b.Kind {
		case "thinking":
			pieces, deltaType, field = splitRunes(b.Text, chunk), "thinking_delta", "thinking"
		case "tool_use":
			pieces, deltaType, field = splitRunes(string(toolInput(b)), chunk), "input_json_delta", "partial_json"
		default:
			pieces, deltaType, field = splitRunes(b.Text, chunk), "text_delta", "text"
		}
		for _, p := range pieces {
			if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": deltaType, field: p}}) {
				return
			}
		}
		if b.Kind == "thinking" {
			if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "signature_delta", "signature": "fake-signature"}}) {
				return
			}
		}
		if !send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}) {
			return
		}
	}
	if !send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stopReason(reply), "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": out}}) {
		return
	}
	send("message_stop", map[string]any{"type": "message_stop"})
	_ = bw.Flush()
	_ = rc.Flush()
}

// splitRunes cuts s into pieces of at most n runes, never inside a rune.
func splitRunes(s string, n int) []string {
	if s == "" {
		return nil
	}
	var out []string
	count, start := 0, 0
	for i := range s {
		if count == n {
			out = append(out, s[start:i])
			start, count = i, 0
		}
		count++
	}
	return append(out, s[start:])
}

// parseRequest decodes the parts of a Messages request that tests look at.
func parseRequest(path string, body []byte) (*Request, error) {
	var raw struct {
		Model     string          `json:"model"`
		Stream    bool            `json:"stream"`
		MaxTokens int             `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string      `json:"role"`
			Content lazyContent `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("decode request: %w", err)
	}
	req := &Request{Path: path, Model: raw.Model, Stream: raw.Stream, MaxTokens: raw.MaxTokens, Body: body}
	req.System = textsOf(raw.System)
	for _, t := range raw.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	for _, m := range raw.Messages {
		req.Messages = append(req.Messages, Message{Role: m.Role, Content: m.Content.blocks})
	}
	return req, nil
}

// lazyContent decodes a message's content as it is read, without
// keeping a raw copy of it (a conversation can be megabytes).
type lazyContent struct{ blocks []ContentBlock }

func (c *lazyContent) UnmarshalJSON(b []byte) error {
	c.blocks = blocksOf(b)
	return nil
}

// textsOf reads a string or a list of text blocks.
func textsOf(raw json.RawMessage) []string {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	var out []string
	for _, b := range blocks {
		if b.Type == "text" || b.Type == "" {
			out = append(out, b.Text)
		}
	}
	return out
}

func blocksOf(raw json.RawMessage) []ContentBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []ContentBlock{{Type: "text", Text: s}}
	}
	var blocks []struct {
		ContentBlock
		RawContent json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	out := make([]ContentBlock, len(blocks))
	for i, b := range blocks {
		out[i] = b.ContentBlock
		if b.Type == "tool_result" {
			out[i].Content = strings.Join(textsOf(b.RawContent), "\n")
		}
	}
	return out
}
