package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chirality/harness/internal/secrets"
)

// A transport delivers one notification once.
type transport interface {
	// deliver sends no; a retryable error is worth another try.
	deliver(ctx context.Context, c *http.Client, no Notification) (retry bool, err error)
	// where is the receiver for the log: scheme and host only.
	where() string
}

// sink is one receiver's bounded queue and its worker.
type sink struct {
	n       *Notifier
	t       transport
	dropped atomic.Int64

	mu     sync.Mutex
	queue  []Notification // oldest first, at most n.cfg.Queue
	wake   chan struct{}  // one slot: something was queued or the sink closed
	closed bool
}

func newSink(n *Notifier, t transport) *sink {
	return &sink{n: n, t: t, wake: make(chan struct{}, 1)}
}

// push queues no, dropping the oldest when the queue is full. It never
// blocks on the receiver.
func (s *sink) push(no Notification) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if len(s.queue) >= s.n.cfg.Queue {
		s.queue = s.queue[1:]
		s.dropped.Add(1)
	}
	s.queue = append(s.queue, no)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *sink) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest queued notification; ok is false once the sink
// is closed and empty, or the notifier cancelled.
func (s *sink) next() (Notification, bool) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			no := s.queue[0]
			s.queue[0] = Notification{}
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return no, true
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return Notification{}, false
		}
		select {
		case <-s.wake:
		case <-s.n.ctx.Done():
			return Notification{}, false
		}
	}
}

func (s *sink) run() {
	defer s.n.wg.Done()
	defer closeTransport(s.t)
	for {
		no, ok := s.next()
		if !ok {
			return
		}
		s.send(no)
	}
}

// send delivers no with retries and backoff; it gives up after
// Config.Attempts tries, at a final answer, or when the notifier closes.
func (s *sink) send(no Notification) {
	cfg := &s.n.cfg
	wait := cfg.Backoff
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(s.n.ctx, cfg.Timeout)
		retry, err := s.t.deliver(ctx, cfg.Client, no)
		cancel()
		if err == nil {
			s.n.delivered.Add(1)
			return
		}
		if !retry || attempt >= cfg.Attempts || s.n.ctx.Err() != nil {
			s.n.log.Warn().Str("to", s.t.where()).Str("type", no.Type).Str("sessionId", no.SessionID).Int("attempts", attempt).
				Str("error", secrets.Scrub(err.Error())).Msg("notification not delivered")
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.n.ctx.Done():
			t.Stop()
			return
		}
		if wait *= 2; wait > MaxBackoff {
			wait = MaxBackoff
		}
	}
}

// A closer is a transport holding a connection (IRC): closed when its
// sink's worker ends.
type closer interface{ close() }

func closeTransport(t transport) {
	if c, ok := t.(closer); ok {
		c.close()
	}
}

// closeTransports closes the transports of sinks whose workers never
// started (New failed after making them).
func (n *Notifier) closeTransports() {
	for _, s := range n.sinks {
		closeTransport(s.t)
	}
}

// errStatus is a receiver's non-2xx answer.
type errStatus int

func (e errStatus) Error() string { return fmt.Sprintf("receiver answered %d", int(e)) }

// post sends body and classifies the answer: 2xx is done; a network
// error, 408, 429 and 5xx are worth retrying; any other status is final.
func post(ctx context.Context, c *http.Client, req *http.Request) (bool, error) {
	resp, err := c.Do(req.WithContext(ctx))
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap() // the error without the URL (its path may be a key)
		}
		return true, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return false, nil
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests, code >= 500:
		return true, errStatus(code)
	default:
		return false, errStatus(code)
	}
}

// webhook POSTs the notification as JSON, signed when it has a secret.
type webhook struct {
	url, host string
	secret    []byte
}

func (w webhook) where() string { return w.host }

func (w webhook) deliver(ctx context.Context, c *http.Client, no Notification) (bool, error) {
	body, err := json.Marshal(no)
	if err != nil {
		return false, err
	}
	body = secrets.ScrubJSON(body)
	req, err := http.NewRequest(http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "harness-notify")
	req.Header.Set("X-Harness-Event", no.Type)
	if len(w.secret) > 0 {
		req.Header.Set(SignatureHeader, Sign(w.secret, body))
	}
	return post(ctx, c, req)
}

// Sign is the X-Harness-Signature value of body under secret:
// "sha256=" and the hex HMAC-SHA256. A receiver recomputes it over the
// exact bytes it received and compares in constant time (Verify).
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether signature is body's under secret.
func Verify(secret, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(signature))
}

// ntfy POSTs a text body with a Title header, as ntfy.sh topics take.
type ntfy struct{ url, host string }

func (t ntfy) where() string { return t.host }

func (t ntfy) deliver(ctx context.Context, c *http.Client, no Notification) (bool, error) {
	text := no.Title
	if no.ProjectRoot != "" {
		text += "\n" + no.ProjectRoot
	}
	text = secrets.Scrub(text)
	req, err := http.NewRequest(http.MethodPost, t.url, bytes.NewReader([]byte(text)))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("User-Agent", "harness-notify")
	req.Header.Set("Title", headerText("harness: "+no.Type))
	req.Header.Set("Tags", "robot")
	if no.Link != "" {
		req.Header.Set("Click", no.Link)
	}
	if no.Type == "approval:requested" || no.Type == "trust:required" || no.Type == TypePlanReady {
		req.Header.Set("Priority", "high")
	}
	return post(ctx, c, req)
}

// headerText is s as a header value: RFC 2047 encoded when not ASCII.
func headerText(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] < 0x20 {
			return mime.BEncoding.Encode("utf-8", s)
		}
	}
	return s
}
