package codextest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// FakeAPI is a fake OpenAI Responses API on loopback: POST /v1/responses
// with "stream": true, answered as server-sent events with event: lines,
// the shapes Codex 0.169.0 reads. Each request takes the next scripted
// Reply (Script), or, when the script is used up, the Default. Safe for
// concurrent use; Close stops it.
type FakeAPI struct {
	// URL is the API's base URL, "http://127.0.0.1:PORT/v1".
	URL string

	srv *http.Server
	ln  net.Listener

	mu        sync.Mutex
	script    []Reply
	def       Reply
	responder func(*Request) Reply
	requests  []Request
	seq       int
	headers   map[string]string
}

// Reply is one scripted answer.
type Reply struct {
	// Text is the assistant's answer, sent as Deltas output_text.delta
	// events (1 when 0) and then the completed message.
	Text   string
	Deltas int
	// Reasoning, when set, is sent first as a reasoning summary.
	Reasoning string
	// Call asks the agent to run a function (after Text, when both are
	// set): Call.Tool names a tool of the request's tools list ("" = the shell tool: exec_command, or
	// shell_command / shell, whichever the request offers) with Args.
	Call *Call
	// Status and ErrorMessage answer with an HTTP error instead.
	Status       int
	ErrorMessage string
	// Delay waits before answering; ChunkDelay between deltas. Both end
	// early when the client goes away.
	Delay, ChunkDelay time.Duration
	// InputTokens and OutputTokens are the usage reported (defaults 10, 5).
	InputTokens, OutputTokens int
}

// Call is a function call a Reply makes.
type Call struct {
	Tool string
	// Namespace is the namespace tool Tool belongs to (Codex offers an
	// MCP server's tools as the namespace mcp__SERVER), "" for none.
	Namespace string
	// Args is the arguments object; for the shell tool Command fills it
	// ({"cmd": Command} for exec_command, {"command": …} otherwise).
	Args    map[string]any
	Command string
}

// Request is one request the fake received, decoded where it matters.
type Request struct {
	Path         string
	Model        string
	Stream       bool
	Instructions string
	// Tools are the names of the tools offered.
	Tools []string
	// Input is the request's input items, raw.
	Input []json.RawMessage
	Body  []byte
}

// inputMessage is the part of an input item Texts, CollaborationMode and
// LastUserText read.
type inputMessage struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
}

// messages decodes the input's message items, in order.
func (r *Request) messages() []inputMessage {
	var out []inputMessage
	for _, raw := range r.Input {
		var it inputMessage
		if json.Unmarshal(raw, &it) == nil && (it.Type == "message" || it.Type == "") {
			out = append(out, it)
		}
	}
	return out
}

// Texts returns every text of the input's messages, in order: the
// conversation the agent sent (its first exchange included on a resumed
// thread).
func (r *Request) Texts() []string {
	var out []string
	for _, it := range r.messages() {
		for _, c := range it.Content {
			if c.Text != "" {
				out = append(out, c.Text)
			}
		}
	}
	return out
}

// CollaborationMode is the Codex collaboration mode the request runs in,
// by the last <collaboration_mode> developer text Codex put in its input:
// "plan" (Codex's Plan Mode instructions), "default", or "" when Codex
// sent none (a thread never given a collaboration mode).
func (r *Request) CollaborationMode() string {
	mode := ""
	for _, it := range r.messages() {
		if it.Role != "developer" {
			continue
		}
		for _, c := range it.Content {
			body, ok := strings.CutPrefix(c.Text, "<collaboration_mode>")
			switch {
			case !ok:
			case strings.HasPrefix(body, "# Plan Mode"):
				mode = "plan"
			case strings.HasPrefix(body, "# Collaboration Mode: Default"):
				mode = "default"
			default:
				mode = "other"
			}
		}
	}
	return mode
}

// LastUserText is the text of the input's last user message ("" if none).
func (r *Request) LastUserText() string {
	text := ""
	for _, it := range r.messages() {
		if it.Role == "user" && len(it.Content) > 0 {
			text = it.Content[len(it.Content)-1].Text
		}
	}
	return text
}

// FunctionOutputs returns the outputs of function_call_output items.
func (r *Request) FunctionOutputs() []string {
	var out []string
	for _, raw := range r.Input {
		var it struct {
			Type   string          `json:"type"`
			Output json.RawMessage `json:"output"`
		}
		if json.Unmarshal(raw, &it) != nil || it.Type != "function_call_output" {
			continue
		}
		var s string
		if json.Unmarshal(it.Output, &s) == nil {
			out = append(out, s)
		} else {
			out = append(out, string(it.Output))
		}
	}
	return out
}

// NewFakeAPI starts a fake on 127.0.0.1 answering def once the script is
// used up.
func NewFakeAPI(def Reply) (*FakeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &FakeAPI{ln: ln, def: def, URL: "http://" + ln.Addr().String() + "/v1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/responses", f.serve)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

// Script queues replies for the next requests.
func (f *FakeAPI) Script(r ...Reply) {
	f.mu.Lock()
	f.script = append(f.script, r...)
	f.mu.Unlock()
}

// SetResponder answers every request that finds the script used up with
// fn's reply instead of the default (nil = the default again): a model
// that answers by what it was asked, such as DemoResponder.
func (f *FakeAPI) SetResponder(fn func(*Request) Reply) {
	f.mu.Lock()
	f.responder = fn
	f.mu.Unlock()
}

// SetHeaders sends headers with every answer from now on:
// x-codex-primary-used-percent and its kin make Codex report its rate
// limits.
func (f *FakeAPI) SetHeaders(h map[string]string) {
	f.mu.Lock()
	f.headers = h
	f.mu.Unlock()
}

// Requests returns a copy of the requests received so far.
func (f *FakeAPI) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// Close stops the server, ending open streams.
func (f *FakeAPI) Close() error {
	return f.srv.Close()
}

// WriteConfig writes codexHome/config.toml with a provider that points at
// the fake (no retries, no WebSockets, no analytics) and returns its
// path. extra lines are appended verbatim.
func (f *FakeAPI) WriteConfig(codexHome string, extra ...string) (string, error) {
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		return "", err
	}
	cfg := fmt.Sprintf(`model = "mock-model"
model_provider = "mock_provider"

%s

[model_providers.mock_provider]
name = "Mock provider"
base_url = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
supports_websockets = false

[analytics]
enabled = false

[feedback]
enabled = false
`, strings.Join(extra, "\n"), f.URL)
	p := filepath.Join(codexHome, "config.toml")
	return p, os.WriteFile(p, []byte(cfg), 0o600)
}

func (f *FakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in struct {
		Model        string            `json:"model"`
		Stream       bool              `json:"stream"`
		Instructions string            `json:"instructions"`
		Input        []json.RawMessage `json:"input"`
		Tools        []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, "bad json: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{Path: r.URL.Path, Model: in.Model, Stream: in.Stream, Instructions: in.Instructions, Input: in.Input, Body: body}
	for _, t := range in.Tools {
		if t.Name != "" {
			req.Tools = append(req.Tools, t.Name)
		}
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	rep, responder := f.def, f.responder
	scripted := len(f.script) > 0
	if scripted {
		rep = f.script[0]
		f.script = f.script[1:]
	}
	f.seq++
	n := f.seq
	f.mu.Unlock()
	if !scripted && responder != nil {
		rep = responder(&req)
	}

	if !wait(r, rep.Delay) {
		return
	}
	if rep.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": rep.ErrorMessage, "type": "fake_error"}})
		return
	}
	f.mu.Lock()
	for k, v := range f.headers {
		w.Header().Set(k, v)
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		if fl != nil {
			fl.Flush()
		}
	}
	respID := fmt.Sprintf("resp_%d", n)
	send("response.created", map[string]any{"response": map[string]any{"id": respID}})
	if rep.Reasoning != "" {
		rid := fmt.Sprintf("rs_%d", n)
		send("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{"type": "reasoning", "id": rid, "summary": []any{}}})
		send("response.reasoning_summary_text.delta", map[string]any{"item_id": rid, "output_index": 0, "summary_index": 0, "delta": rep.Reasoning})
		send("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{"type": "reasoning", "id": rid,
			"summary": []any{map[string]any{"type": "summary_text", "text": rep.Reasoning}}}})
	}
	index := 0
	if rep.Reasoning != "" {
		index = 1
	}
	if rep.Text != "" || rep.Call == nil {
		mid := fmt.Sprintf("msg_%d", n)
		send("response.output_item.added", map[string]any{"output_index": index, "item": map[string]any{"type": "message", "role": "assistant", "id": mid, "content": []any{}}})
		for _, d := range split(rep.Text, rep.Deltas) {
			if !wait(r, rep.ChunkDelay) {
				return
			}
			send("response.output_text.delta", map[string]any{"item_id": mid, "output_index": index, "content_index": 0, "delta": d})
		}
		send("response.output_item.done", map[string]any{"output_index": index, "item": map[string]any{"type": "message", "role": "assistant", "id": mid,
			"content": []any{map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}}}}})
		index++
	}
	if rep.Call != nil {
		name, args := callFor(rep.Call, req.Tools)
		a, _ := json.Marshal(args)
		item := map[string]any{"type": "function_call",
			"id": fmt.Sprintf("fc_%d", n), "call_id": fmt.Sprintf("call_%d", n), "name": name, "arguments": string(a)}
		if rep.Call.Namespace != "" {
			item["namespace"] = rep.Call.Namespace
		}
		send("response.output_item.done", map[string]any{"output_index": index, "item": item})
	}
	in0, out0 := rep.InputTokens, rep.OutputTokens
	if in0 == 0 {
		in0 = 10
	}
	if out0 == 0 {
		out0 = 5
	}
	send("response.completed", map[string]any{"response": map[string]any{"id": respID, "usage": map[string]any{
		"input_tokens": in0, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": out0, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": in0 + out0}}})
}

// callFor resolves a Call against the offered tools.
func callFor(c *Call, tools []string) (string, map[string]any) {
	name := c.Tool
	if name == "" {
		name = "exec_command"
		for _, pref := range []string{"exec_command", "shell_command", "shell"} {
			if contains(tools, pref) {
				name = pref
				break
			}
		}
	}
	args := c.Args
	if args == nil {
		args = map[string]any{}
		switch name {
		case "exec_command":
			args["cmd"] = c.Command
		case "shell":
			args["command"] = []string{"bash", "-lc", c.Command}
		default:
			args["command"] = c.Command
		}
	}
	return name, args
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// split cuts s into n pieces of about equal size (1 when n < 1).
func split(s string, n int) []string {
	if n < 1 {
		n = 1
	}
	r := []rune(s)
	if n > len(r) {
		n = max(len(r), 1)
	}
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, string(r[i*len(r)/n:(i+1)*len(r)/n]))
	}
	return out
}

func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}
