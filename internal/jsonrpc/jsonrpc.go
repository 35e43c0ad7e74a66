// Package jsonrpc is the one JSON-RPC 2.0 codec of the harness, shared by
// its two JSON-RPC peers:
//
//   - the `harness rpc` door (package rpc), which is strict: every message
//     carries "jsonrpc":"2.0", the id is a string, a number or null, params
//     an object or an array, a batch is an array of at most a bounded
//     number of requests, and each fault has the specification's exact
//     error code (Strict);
//   - the Codex app-server client (package codex), whose peer frames
//     JSON-RPC without the "jsonrpc" member and is read leniently (Codex).
//
// Both read newline-delimited messages with LineReader (a hard bound on a
// line; never bufio.Scanner's) and encode with the same functions; only
// the dialect differs.
//
// Why our own and not a library: the door's contract is exact (the
// specification's codes for each fault, an invalid batch element answered
// in place, a batch of notifications answered with nothing, a batch over
// the bound refused with one error, answers streamed as they are made),
// and Codex's dialect drops the "jsonrpc" member that the libraries of the
// field (x/exp/jsonrpc2, creachadair/jrpc2, the MCP SDK's internal
// jsonrpc2) require. What is left to share is small: a line reader, a
// message type, the checks and the encoders, all here.
package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The specification's error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is a JSON-RPC error object. Data, when set, is encoded as it is.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return "rpc error " + strconv.Itoa(e.Code) + ": " + e.Message }

// Errorf returns an *Error of code with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Message is one JSON-RPC message: a request (Method and ID), a
// notification (Method, no ID) or a response (ID and Result or Error).
type Message struct {
	// ID is the raw id; nil when the message has none (a notification).
	// A request with "id":null has ID "null".
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"` // nil when absent
	Result json.RawMessage `json:"result,omitempty"` // nil when absent
	Error  *Error          `json:"error,omitempty"`
}

// IsRequest reports whether m is a request (it expects an answer).
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID != nil }

// IsNotification reports whether m is a notification (no answer).
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// Dialect is how strictly messages are checked and whether "jsonrpc":"2.0"
// is written.
type Dialect struct {
	// Version: "jsonrpc":"2.0" is written on every message and required
	// on every message read.
	Version bool
	// RequestsOnly: only requests and notifications are accepted (a
	// server's side), each fault reported with the specification's code.
	RequestsOnly bool
}

var (
	// Strict is the `harness rpc` door's dialect.
	Strict = Dialect{Version: true, RequestsOnly: true}
	// Codex is the Codex app-server's: no "jsonrpc" member, requests,
	// notifications and responses in both directions.
	Codex = Dialect{}
)

// Decode checks one message (a JSON object) by the dialect's rules. On
// failure the *Error carries the specification's code (CodeParseError for
// what is not JSON, CodeInvalidRequest for what is not a valid message)
// and id is the message's id when it could be read, else null, so a
// server can answer it.
//
// Member names are matched exactly, as JSON-RPC 2.0 spells them (never
// encoding/json's case-insensitive match): {"ID":1,…} has no id, so it is
// a notification and is not answered; {"JSONRPC":"2.0",…} lacks "jsonrpc".
// A member of the wrong type (a number as "method") is refused with the
// id still answered.
func (d Dialect) Decode(raw []byte) (m Message, id json.RawMessage, e *Error) {
	null := json.RawMessage("null")
	raw = bytes.TrimSpace(raw)
	if !json.Valid(raw) {
		return Message{}, null, Errorf(CodeParseError, "parse error: the message is not valid JSON")
	}
	if len(raw) == 0 || raw[0] != '{' {
		return Message{}, null, Errorf(CodeInvalidRequest, "invalid request: not a JSON object")
	}
	var obj map[string]json.RawMessage // keys exactly as sent
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Message{}, null, Errorf(CodeInvalidRequest, "invalid request: %v", err)
	}
	rawID, hasID := obj["id"]
	if hasID {
		switch rawID[0] {
		case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		default:
			return Message{}, null, Errorf(CodeInvalidRequest, "invalid request: id must be a string, a number or null")
		}
		id = rawID
	} else {
		id = null
	}
	if d.Version {
		var v string
		if j, ok := obj["jsonrpc"]; !ok || json.Unmarshal(j, &v) != nil || v != "2.0" {
			return Message{}, id, Errorf(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
		}
	}
	m = Message{Params: obj["params"], Result: obj["result"]}
	if hasID {
		m.ID = rawID
	}
	if j, ok := obj["error"]; ok {
		if err := json.Unmarshal(j, &m.Error); err != nil {
			return Message{}, id, Errorf(CodeInvalidRequest, `invalid message: "error" must be an error object`)
		}
	}
	rawMethod, hasMethod := obj["method"]
	if hasMethod && json.Unmarshal(rawMethod, &m.Method) != nil {
		return Message{}, id, Errorf(CodeInvalidRequest, `invalid request: "method" must be a non-empty string`)
	}
	if d.RequestsOnly || hasMethod {
		if m.Method == "" {
			return Message{}, id, Errorf(CodeInvalidRequest, `invalid request: "method" must be a non-empty string`)
		}
		if len(m.Params) > 0 && m.Params[0] != '{' && m.Params[0] != '[' && string(m.Params) != "null" {
			return Message{}, id, Errorf(CodeInvalidRequest, `invalid request: "params" must be an object or an array`)
		}
		return m, id, nil
	}
	// A response.
	if !hasID {
		return Message{}, id, Errorf(CodeInvalidRequest, "invalid message: neither method nor id")
	}
	if m.Result == nil && m.Error == nil {
		return Message{}, id, Errorf(CodeInvalidRequest, "invalid message: a response without result or error")
	}
	if _, err := IDKey(m.ID); err != nil {
		return Message{}, id, Errorf(CodeInvalidRequest, "invalid message: %v", err)
	}
	return m, id, nil
}

// IDKey normalises an id (a number or a string) to a map key, so a
// response is matched to its request whatever the peer's spelling of a
// number.
func IDKey(id json.RawMessage) (string, error) {
	if len(id) == 0 || id[0] == 'n' {
		return "", fmt.Errorf("id %s is neither a number nor a string", id)
	}
	var n json.Number
	if err := json.Unmarshal(id, &n); err == nil {
		return "n" + n.String(), nil
	}
	var s string
	if err := json.Unmarshal(id, &s); err == nil {
		return "s" + s, nil
	}
	return "", fmt.Errorf("id %s is neither a number nor a string", id)
}

// ErrBatchTooLarge is the cause of the *Error Split returns for a batch
// over its bound.
var ErrBatchTooLarge = errors.New("jsonrpc: batch too large")

// Split parses one line of the strict dialect: a single message, or a
// batch (a JSON array) of at most max elements. The elements are returned
// raw, to be checked one by one with Decode (an invalid element is
// answered in place, not the batch). The line fails as a whole, with one
// error to answer (id null), when it is not valid JSON (CodeParseError),
// is an empty array, or holds more than max elements (CodeInvalidRequest;
// the elements beyond max are never decoded).
func Split(line []byte, max int) (items []json.RawMessage, batch bool, e *Error) {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		return nil, false, Errorf(CodeParseError, "parse error: the line is not valid JSON")
	}
	if len(line) == 0 || line[0] != '[' {
		return []json.RawMessage{line}, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if _, err := dec.Token(); err != nil { // [
		return nil, true, Errorf(CodeParseError, "parse error: %v", err)
	}
	for dec.More() {
		if len(items) == max {
			return nil, true, Errorf(CodeInvalidRequest, "invalid request: a batch holds at most %d requests", max)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, true, Errorf(CodeParseError, "parse error: %v", err)
		}
		items = append(items, raw)
	}
	if len(items) == 0 {
		return nil, true, Errorf(CodeInvalidRequest, "invalid request: an empty batch")
	}
	return items, true, nil
}

// AppendResponse appends a response to b: result (nil is an empty object)
// or e. id nil is written as null.
func (d Dialect) AppendResponse(b []byte, id json.RawMessage, result any, e *Error) ([]byte, error) {
	b = d.open(b)
	b = append(b, `"id":`...)
	if len(id) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, id...)
	}
	if e != nil {
		eb, err := json.Marshal(e)
		if err != nil {
			return b, err
		}
		b = append(b, `,"error":`...)
		b = append(b, eb...)
		return append(b, '}'), nil
	}
	if result == nil {
		result = struct{}{}
	}
	rb, err := json.Marshal(result)
	if err != nil {
		return b, err
	}
	b = append(b, `,"result":`...)
	b = append(b, rb...)
	return append(b, '}'), nil
}

// AppendResponseHead appends the start of a response whose result the
// caller streams after it: `{"jsonrpc":"2.0","id":ID,"result":`. The
// caller writes the result and then ResponseTail.
func (d Dialect) AppendResponseHead(b []byte, id json.RawMessage) []byte {
	b = d.open(b)
	b = append(b, `"id":`...)
	if len(id) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, id...)
	}
	return append(b, `,"result":`...)
}

// ResponseTail ends what AppendResponseHead began.
const ResponseTail = "}"

// AppendRequest appends a request (id set) or a notification (id nil);
// params nil is omitted.
func (d Dialect) AppendRequest(b []byte, id json.RawMessage, method string, params any) ([]byte, error) {
	b = d.open(b)
	if id != nil {
		b = append(b, `"id":`...)
		b = append(b, id...)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	b = strconv.AppendQuote(b, method)
	if params != nil {
		pb, err := json.Marshal(params)
		if err != nil {
			return b, err
		}
		if string(pb) != "null" {
			b = append(b, `,"params":`...)
			b = append(b, pb...)
		}
	}
	return append(b, '}'), nil
}

func (d Dialect) open(b []byte) []byte {
	if d.Version {
		return append(b, `{"jsonrpc":"2.0",`...)
	}
	return append(b, '{')
}

// ErrLineTooLong is returned by LineReader for a line over its bound.
var ErrLineTooLong = errors.New("jsonrpc: line too long")

// LineReader reads newline-terminated lines of at most max bytes (the
// newline and a trailing \r excluded). A final line without a newline is
// returned too. Not safe for concurrent use.
type LineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// NewLineReader reads r with lines bounded by max bytes (max > 0).
func NewLineReader(r io.Reader, max int) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Line returns the next line, valid until the next call. It returns
// io.EOF at the end. A line over the bound is read to its end without
// being kept and reported as ErrLineTooLong; the reader can go on with
// the next line.
func (l *LineReader) Line() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		frag, err := l.r.ReadSlice('\n')
		if len(l.buf)+len(frag) > l.max+2 {
			l.buf = l.buf[:0]
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = l.r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, ErrLineTooLong
		}
		l.buf = append(l.buf, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(l.buf) > 0 {
				return l.trim()
			}
			return nil, err
		}
		return l.trim()
	}
}

func (l *LineReader) trim() ([]byte, error) {
	b := bytes.TrimSuffix(l.buf, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) > l.max {
		return nil, ErrLineTooLong
	}
	return b, nil
}
