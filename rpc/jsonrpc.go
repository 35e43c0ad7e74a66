package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
)

// JSON-RPC 2.0 error codes: the standard ones and this protocol's.
const (
	CodeParseError      = -32700
	CodeInvalidRequest  = -32600
	CodeMethodNotFound  = -32601
	CodeInvalidParams   = -32602
	CodeInternalError   = -32603
	CodeThreadNotFound  = -32001
	CodeTurnBusy        = -32002
	CodeTurnNotFound    = -32003
	CodeApprovalMissing = -32004 // ApprovalNotFound
)

// Error is a JSON-RPC error object; handlers return it to choose the code.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

func errorf(code int, msg string) *Error { return &Error{Code: code, Message: msg} }

// Request is one decoded JSON-RPC request or notification.
type Request struct {
	ID     json.RawMessage // nil for a notification
	Method string
	Params json.RawMessage // nil when absent
}

// IsNotification reports whether the request has no id (and so gets no
// answer).
func (r *Request) IsNotification() bool { return r.ID == nil }

type wireRequest struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// DecodeMessage parses one line: a request, or a batch (a JSON array).
// A parse failure is *Error CodeParseError. Each element of a batch is
// decoded with DecodeRequest; the batch itself fails only when it is not
// valid JSON or empty (CodeInvalidRequest).
func DecodeMessage(line []byte) (reqs []json.RawMessage, batch bool, err *Error) {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		return nil, false, errorf(CodeParseError, "parse error: the line is not valid JSON")
	}
	if len(line) > 0 && line[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(line, &items); err != nil {
			return nil, true, errorf(CodeParseError, "parse error: "+err.Error())
		}
		if len(items) == 0 {
			return nil, true, errorf(CodeInvalidRequest, "invalid request: an empty batch")
		}
		return items, true, nil
	}
	return []json.RawMessage{line}, false, nil
}

// DecodeRequest checks one request object strictly: "jsonrpc" must be
// "2.0", "method" a string, "id" (when present) a string, a number or
// null, "params" (when present) an object or an array. On failure the
// returned id is the request's when it could be read (else null).
func DecodeRequest(raw json.RawMessage) (*Request, json.RawMessage, *Error) {
	var w wireRequest
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, nil, errorf(CodeInvalidRequest, "invalid request: not a JSON object")
	}
	id := w.ID
	hasID := hasKey(raw, "id")
	if hasID {
		if len(id) == 0 {
			id = json.RawMessage("null")
		}
		switch id[0] {
		case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		default:
			return nil, nil, errorf(CodeInvalidRequest, "invalid request: id must be a string, a number or null")
		}
	}
	if w.JSONRPC == nil || *w.JSONRPC != "2.0" {
		return nil, idOrNull(id), errorf(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
	}
	if w.Method == nil || *w.Method == "" {
		return nil, idOrNull(id), errorf(CodeInvalidRequest, `invalid request: "method" must be a non-empty string`)
	}
	if len(w.Params) > 0 && w.Params[0] != '{' && w.Params[0] != '[' && string(w.Params) != "null" {
		return nil, idOrNull(id), errorf(CodeInvalidRequest, `invalid request: "params" must be an object or an array`)
	}
	r := &Request{Method: *w.Method, Params: w.Params}
	if hasID {
		r.ID = id
	}
	return r, r.ID, nil
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

// hasKey reports whether the JSON object raw has a top-level key.
func hasKey(raw json.RawMessage, key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, ok := m[key]
	return ok
}

// response builds a response object.
func response(id json.RawMessage, result any, e *Error) ([]byte, error) {
	out := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *Error          `json:"error,omitempty"`
	}{JSONRPC: "2.0", ID: idOrNull(id)}
	if e != nil {
		out.Error = e
	} else {
		if result == nil {
			result = struct{}{}
		}
		out.Result = result
	}
	return json.Marshal(out)
}

// lineWriter writes whole lines, one at a time, to the client.
type lineWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

func newLineWriter(w io.Writer) *lineWriter { return &lineWriter{w: bufio.NewWriterSize(w, 64<<10)} }

// write sends one line (b must not contain a newline) and flushes.
func (l *lineWriter) write(b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeLocked(b, true)
}

func (l *lineWriter) writeLocked(b []byte, flush bool) error {
	if l.err != nil {
		return l.err
	}
	if _, l.err = l.w.Write(b); l.err == nil {
		l.err = l.w.WriteByte('\n')
	}
	if l.err == nil && flush {
		l.err = l.w.Flush()
	}
	return l.err
}

// ErrLineTooLong: a request line over the reader's bound.
var ErrLineTooLong = errors.New("rpc: request line too long")

// readLine reads one line of at most max bytes (without its newline). A
// longer line is consumed and reported as ErrLineTooLong.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > max+1 {
			buf = nil
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, ErrLineTooLong
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if len(buf) > 0 && errors.Is(err, io.EOF) {
				return buf, nil
			}
			return nil, err
		}
		return bytes.TrimRight(buf, "\r\n"), nil
	}
}
