package codex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// MaxLineBytes bounds one line of the app-server's output. A command's
// aggregated output travels in one notification, so the bound is large;
// a longer line fails the turn rather than growing without limit.
const MaxLineBytes = 64 << 20

// ErrLineTooLong is returned by LineReader for a line over its bound.
var ErrLineTooLong = errors.New("codex: line too long")

// LineReader reads newline-terminated lines of at most max bytes (the
// newline and a trailing \r excluded). A final line without a newline is
// returned too. Not safe for concurrent use.
type LineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// NewLineReader reads r with lines bounded by max (MaxLineBytes when <= 0).
func NewLineReader(r io.Reader, max int) *LineReader {
	if max <= 0 {
		max = MaxLineBytes
	}
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Line returns the next line, valid until the next call. It returns
// io.EOF at the end and ErrLineTooLong (then further calls fail too) for
// an overlong line.
func (l *LineReader) Line() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		frag, err := l.r.ReadSlice('\n')
		l.buf = append(l.buf, frag...)
		if len(l.buf) > l.max+2 {
			return nil, ErrLineTooLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(l.buf) > 0 {
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

// Message is one JSON-RPC message as the app-server frames it: no
// "jsonrpc" member. A request has Method and ID, a notification Method
// only, a response ID and Result or Error.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
}

// IsRequest reports whether m is a request (it expects an answer).
func (m *Message) IsRequest() bool { return m.Method != "" && len(m.ID) > 0 }

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	return "codex: rpc error " + strconv.Itoa(e.Code) + ": " + e.Message
}

// ErrBadMessage is wrapped by DecodeMessage's errors.
var ErrBadMessage = errors.New("codex: bad message")

// DecodeMessage parses one line. A line that is not a JSON object, or is
// neither a request, a notification nor a response, is ErrBadMessage.
func DecodeMessage(line []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	if m.Method == "" && len(m.ID) == 0 {
		return Message{}, fmt.Errorf("%w: neither method nor id", ErrBadMessage)
	}
	if m.Method == "" && m.Result == nil && m.Error == nil {
		return Message{}, fmt.Errorf("%w: response without result or error", ErrBadMessage)
	}
	if len(m.ID) > 0 {
		if _, err := idKey(m.ID); err != nil {
			return Message{}, err
		}
	}
	return m, nil
}

// idKey normalises an id (a number or a string) to a map key.
func idKey(id json.RawMessage) (string, error) {
	var n json.Number
	if err := json.Unmarshal(id, &n); err == nil {
		return "n" + n.String(), nil
	}
	var s string
	if err := json.Unmarshal(id, &s); err == nil {
		return "s" + s, nil
	}
	return "", fmt.Errorf("%w: id %s", ErrBadMessage, id)
}

// peer is one connection to an app-server: calls with correlated
// responses, and every incoming request and notification, in order, on
// in. The reader goroutine is the only one that reads; writes are
// serialised.
type peer struct {
	wmu sync.Mutex
	w   io.Writer

	mu      sync.Mutex
	next    int64
	pending map[string]chan Message
	closed  error

	in    chan Message
	done  chan struct{}
	onMsg func(Message)
}

func newPeer(r io.Reader, w io.Writer, onBad func(error), onMsg func(Message)) *peer {
	p := &peer{onMsg: onMsg, w: w, pending: map[string]chan Message{}, in: make(chan Message, 256), done: make(chan struct{})}
	go p.read(NewLineReader(r, MaxLineBytes), onBad)
	return p
}

// read delivers messages until the stream ends; then it fails the pending
// calls and closes in.
func (p *peer) read(lr *LineReader, onBad func(error)) {
	defer close(p.done)
	defer close(p.in)
	var end error
	for {
		line, err := lr.Line()
		if err != nil {
			end = err
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, err := DecodeMessage(line)
		if err != nil {
			if onBad != nil {
				onBad(err)
			}
			continue
		}
		if p.onMsg != nil {
			p.onMsg(m)
		}
		if m.Method != "" {
			p.in <- m
			continue
		}
		k, _ := idKey(m.ID)
		p.mu.Lock()
		ch := p.pending[k]
		delete(p.pending, k)
		p.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
	if end == io.EOF {
		end = io.ErrUnexpectedEOF
	}
	p.mu.Lock()
	p.closed = end
	for k, ch := range p.pending {
		close(ch)
		delete(p.pending, k)
	}
	p.mu.Unlock()
}

func (p *peer) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, err = p.w.Write(b)
	return err
}

// call sends a request and returns a channel that receives its response
// (closed without one when the connection ends).
func (p *peer) call(method string, params any) (<-chan Message, error) {
	p.mu.Lock()
	if p.closed != nil {
		p.mu.Unlock()
		return nil, p.closed
	}
	p.next++
	id := p.next
	ch := make(chan Message, 1)
	p.pending["n"+strconv.FormatInt(id, 10)] = ch
	p.mu.Unlock()
	err := p.write(struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{id, method, params})
	if err != nil {
		p.mu.Lock()
		delete(p.pending, "n"+strconv.FormatInt(id, 10))
		p.mu.Unlock()
		return nil, err
	}
	return ch, nil
}

func (p *peer) notify(method string, params any) error {
	return p.write(struct {
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{method, params})
}

// reply answers an incoming request.
func (p *peer) reply(id json.RawMessage, result any) error {
	return p.write(struct {
		ID     json.RawMessage `json:"id"`
		Result any             `json:"result"`
	}{id, result})
}

func (p *peer) replyError(id json.RawMessage, code int, msg string) error {
	return p.write(struct {
		ID    json.RawMessage `json:"id"`
		Error RPCError        `json:"error"`
	}{id, RPCError{Code: code, Message: msg}})
}
