package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// A request another node forwards to the owner of a session, and the
// owner's answer: HTTP over NATS request-reply. Only what the handlers
// read travels; the asking node's guard already checked the token.
type fwdRequest struct {
	Method string      `json:"method"`
	URL    string      `json:"url"` // path and query
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

type fwdReply struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

// forwardedHeaders are the request headers a handler reads.
var forwardedHeaders = []string{"Content-Type", "Accept", "Last-Event-ID"}

// fwdTimeout bounds a forwarded request's wait for its answer (a turn's
// answer comes when its stream starts).
const fwdTimeout = 60 * time.Second

// maxForwarding bounds the forwarded requests the owner serves at once.
const maxForwarding = 256

// serveForwarded answers requests forwarded to this node with the local
// handler. A streamed answer (SSE: a turn's) is sent at its first flush,
// the rest of the stream dropped: the asking node streams the events
// from JetStream. The handler runs on until it ends (the turn with it).
func (n *Node) serveForwarded() error {
	sem := make(chan struct{}, maxForwarding)
	_, err := n.nc.Subscribe(forwardSubject+n.cfg.Node+".http", func(m *nats.Msg) {
		select {
		case sem <- struct{}{}:
		default:
			b, _ := json.Marshal(fwdReply{Status: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {"1"}},
				Body: []byte(`{"error":"node busy: too many forwarded requests"}`)})
			m.Respond(b)
			return
		}
		go func() {
			defer func() { <-sem }()
			n.answer(m)
		}()
	})
	return err
}

func (n *Node) answer(m *nats.Msg) {
	var fr fwdRequest
	if err := json.Unmarshal(m.Data, &fr); err != nil {
		b, _ := json.Marshal(fwdReply{Status: http.StatusBadRequest, Body: []byte(`{"error":"bad forwarded request"}`)})
		m.Respond(b)
		return
	}
	ctx, cancel := context.WithCancel(n.ctx)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, fr.Method, fr.URL, bytes.NewReader(fr.Body))
	if err != nil {
		b, _ := json.Marshal(fwdReply{Status: http.StatusBadRequest, Body: []byte(`{"error":"bad forwarded request"}`)})
		m.Respond(b)
		return
	}
	r.Header = fr.Header
	if r.Header == nil {
		r.Header = http.Header{}
	}
	// A session that moved away since the asking node routed here is not
	// served here (its turns run on one node).
	if id, _, _ := sessionOf(&http.Request{Method: http.MethodPost, Body: io.NopCloser(bytes.NewReader(fr.Body))}, strings.TrimPrefix(r.URL.Path, APIPrefix)); id != "" {
		if e, ok := n.entry(id); ok && e.Node != n.cfg.Node {
			b, _ := json.Marshal(fwdReply{Status: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {"1"}},
				Body: []byte(`{"error":"the session moved to node ` + e.Node + `; try again"}`)})
			m.Respond(b)
			return
		}
	}
	r.RemoteAddr = "127.0.0.1:0"
	r.Host = "127.0.0.1"
	w := &replyWriter{rec: httptest.NewRecorder(), respond: m.Respond}
	n.local.ServeHTTP(w, r)
	w.finish()
}

// replyWriter answers the NATS request at the first Flush (a stream) or
// when the handler returns, whichever is first; later writes go nowhere.
type replyWriter struct {
	rec     *httptest.ResponseRecorder
	respond func([]byte) error

	mu   sync.Mutex
	sent bool
}

func (w *replyWriter) Header() http.Header { return w.rec.Header() }

func (w *replyWriter) WriteHeader(code int) { w.rec.WriteHeader(code) }

func (w *replyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent {
		return len(p), nil
	}
	if w.rec.Body.Len()+len(p) > MaxPayload-64<<10 {
		w.sendLocked()
		return len(p), nil
	}
	return w.rec.Write(p)
}

func (w *replyWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sendLocked()
}

// FlushError is for http.ResponseController.
func (w *replyWriter) FlushError() error { w.Flush(); return nil }

// SetWriteDeadline is for http.ResponseController (the SSE writer sets
// one per event); nothing here blocks.
func (w *replyWriter) SetWriteDeadline(time.Time) error { return nil }

func (w *replyWriter) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sendLocked()
}

func (w *replyWriter) sendLocked() {
	if w.sent {
		return
	}
	w.sent = true
	res := w.rec.Result()
	b, _ := json.Marshal(fwdReply{Status: res.StatusCode, Header: res.Header, Body: w.rec.Body.Bytes()})
	w.respond(b)
}

// errNodeDown is a forward to a node whose lease expired.
var errNodeDown = errors.New("the node is down")

// forward sends r to node and returns its answer.
func (n *Node) forward(ctx context.Context, node string, r *http.Request, body []byte) (*fwdReply, error) {
	fr := fwdRequest{Method: r.Method, URL: r.URL.RequestURI(), Header: http.Header{}, Body: body}
	for _, h := range forwardedHeaders {
		if v := r.Header.Values(h); len(v) > 0 {
			fr.Header[h] = v
		}
	}
	b, err := json.Marshal(fr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, fwdTimeout)
	defer cancel()
	m, err := n.nc.RequestWithContext(ctx, forwardSubject+node+".http", b)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, errNodeDown
	}
	if err != nil {
		return nil, err
	}
	var rep fwdReply
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

// writeReply writes a forwarded answer as this node's.
func writeReply(w http.ResponseWriter, rep *fwdReply) {
	for k, v := range rep.Header {
		if strings.EqualFold(k, "Content-Length") {
			continue
		}
		w.Header()[k] = v
	}
	w.WriteHeader(rep.Status)
	w.Write(rep.Body)
}
