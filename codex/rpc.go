package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/chirality/harness/internal/jsonrpc"
)

// The app-server speaks JSON-RPC without the "jsonrpc" member, one
// message a line: the harness's one codec (internal/jsonrpc) reads and
// writes it in its Codex dialect.

// MaxLineBytes bounds one line of the app-server's output. A command's
// aggregated output travels in one notification, so the bound is large;
// a longer line fails the turn rather than growing without limit.
const MaxLineBytes = 64 << 20

// ErrLineTooLong is returned by LineReader for a line over its bound.
var ErrLineTooLong = jsonrpc.ErrLineTooLong

// LineReader reads newline-terminated lines of at most a bound (the
// newline and a trailing \r excluded). A final line without a newline is
// returned too. Not safe for concurrent use.
type LineReader = jsonrpc.LineReader

// NewLineReader reads r with lines bounded by max (MaxLineBytes when <= 0).
func NewLineReader(r io.Reader, max int) *LineReader {
	if max <= 0 {
		max = MaxLineBytes
	}
	return jsonrpc.NewLineReader(r, max)
}

// Message is one JSON-RPC message as the app-server frames it: no
// "jsonrpc" member. A request has Method and ID, a notification Method
// only, a response ID and Result or Error.
type Message = jsonrpc.Message

// RPCError is a JSON-RPC error object.
type RPCError = jsonrpc.Error

// ErrBadMessage is wrapped by DecodeMessage's errors.
var ErrBadMessage = errors.New("codex: bad message")

// DecodeMessage parses one line. A line that is not a JSON object, or is
// neither a request, a notification nor a response, is ErrBadMessage.
func DecodeMessage(line []byte) (Message, error) {
	m, _, err := jsonrpc.Codex.Decode(line)
	if err != nil {
		return Message{}, fmt.Errorf("%w: %s", ErrBadMessage, err.Message)
	}
	return m, nil
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

// read delivers messages until the stream ends (or a line is over the
// bound); then it fails the pending calls and closes in.
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
		k, _ := jsonrpc.IDKey(m.ID)
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

// write sends one encoded message and its newline.
func (p *peer) write(b []byte, err error) error {
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
	id := strconv.AppendInt(nil, p.next, 10)
	ch := make(chan Message, 1)
	k := "n" + string(id)
	p.pending[k] = ch
	p.mu.Unlock()
	if err := p.write(jsonrpc.Codex.AppendRequest(nil, id, method, params)); err != nil {
		p.mu.Lock()
		delete(p.pending, k)
		p.mu.Unlock()
		return nil, err
	}
	return ch, nil
}

func (p *peer) notify(method string, params any) error {
	return p.write(jsonrpc.Codex.AppendRequest(nil, nil, method, params))
}

// reply answers an incoming request.
func (p *peer) reply(id json.RawMessage, result any) error {
	return p.write(jsonrpc.Codex.AppendResponse(nil, id, result, nil))
}

func (p *peer) replyError(id json.RawMessage, code int, msg string) error {
	return p.write(jsonrpc.Codex.AppendResponse(nil, id, nil, &RPCError{Code: code, Message: msg}))
}
