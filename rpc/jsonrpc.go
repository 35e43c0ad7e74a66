package rpc

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"

	"github.com/chirality/harness/internal/jsonrpc"
)

// The door's JSON-RPC is the harness's one codec (internal/jsonrpc) in its
// strict dialect; this file is the door's face of it.

// JSON-RPC 2.0 error codes: the standard ones and this protocol's.
const (
	CodeParseError      = jsonrpc.CodeParseError
	CodeInvalidRequest  = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound  = jsonrpc.CodeMethodNotFound
	CodeInvalidParams   = jsonrpc.CodeInvalidParams
	CodeInternalError   = jsonrpc.CodeInternalError
	CodeThreadNotFound  = -32001
	CodeTurnBusy        = -32002
	CodeTurnNotFound    = -32003
	CodeApprovalMissing = -32004 // ApprovalNotFound
)

// MaxBatch is the most requests one batch may hold; a longer batch is
// answered with one error (CodeInvalidRequest) and none of it runs.
const MaxBatch = 100

// Error is a JSON-RPC error object; handlers return it to choose the code.
type Error = jsonrpc.Error

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

// DecodeMessage parses one line: a request, or a batch (a JSON array) of
// at most MaxBatch requests. A parse failure is *Error CodeParseError.
// Each element of a batch is decoded with DecodeRequest; the batch itself
// fails only when it is not valid JSON (CodeParseError), empty or over
// MaxBatch (CodeInvalidRequest).
func DecodeMessage(line []byte) (reqs []json.RawMessage, batch bool, err *Error) {
	return jsonrpc.Split(line, MaxBatch)
}

// DecodeRequest checks one request object strictly: "jsonrpc" must be
// "2.0", "method" a string, "id" (when present) a string, a number or
// null, "params" (when present) an object or an array. On failure the
// returned id is the request's when it could be read (else null).
func DecodeRequest(raw json.RawMessage) (*Request, json.RawMessage, *Error) {
	m, id, err := jsonrpc.Strict.Decode(raw)
	if err != nil {
		if err.Code == CodeParseError {
			err.Code = CodeInvalidRequest // an element of a batch that parsed
		}
		return nil, id, err
	}
	return &Request{ID: m.ID, Method: m.Method, Params: m.Params}, m.ID, nil
}

// response builds a response object.
func response(id json.RawMessage, result any, e *Error) ([]byte, error) {
	return jsonrpc.Strict.AppendResponse(nil, id, result, e)
}

// lineWriter writes whole lines, one at a time, to the client. A writer
// of a line holds mu from its first byte to its newline.
type lineWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
	buf []byte // an answer being encoded (under mu)
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

// endLocked ends the line being written and flushes; the caller holds mu.
func (l *lineWriter) endLocked() error {
	if l.err != nil {
		return l.err
	}
	if l.err = l.w.WriteByte('\n'); l.err == nil {
		l.err = l.w.Flush()
	}
	return l.err
}

// ErrLineTooLong: a request line over the reader's bound.
var ErrLineTooLong = jsonrpc.ErrLineTooLong
