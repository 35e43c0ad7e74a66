package notify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/session"
)

// SecretEnv names the environment variable holding the webhooks' HMAC
// key. Unset or empty: webhooks are not signed.
const SecretEnv = "HARNESS_NOTIFY_SECRET"

// SignatureHeader carries a webhook body's signature: "sha256=" and the
// lower-case hex HMAC-SHA256 of the exact body under the secret.
const SignatureHeader = "X-Harness-Signature"

// Notification types (Notification.Type) besides the events passed
// through as they are (approval:requested, trust:required, plan:ready).
const (
	TypeTurnCompleted   = "turn:completed"
	TypeTurnFailed      = "turn:failed"
	TypeTurnInterrupted = "turn:interrupted"
	TypeBudgetHit       = "budget:hit"
	TypeSessionIdle     = "session:idle"
	// TypePlanReady is the plan review's event (issue 32), passed through
	// when an engine emits it.
	TypePlanReady = "plan:ready"
)

// Defaults of Config's zero fields.
const (
	DefaultQueue    = 256
	DefaultAttempts = 5
	DefaultBackoff  = 500 * time.Millisecond
	MaxBackoff      = 30 * time.Second
	DefaultTimeout  = 10 * time.Second
)

// Notification is what a sink delivers: the webhook's JSON body.
type Notification struct {
	// Type is the trigger (see the package documentation).
	Type string `json:"type" oa:"enum=approval:requested|trust:required|plan:ready|turn:completed|turn:failed|turn:interrupted|budget:hit|session:idle" doc:"The trigger: a person is needed (approval:requested, trust:required, plan:ready), a turn ended (turn:completed, turn:failed, turn:interrupted, budget:hit for max_budget), or no turn started for --notify-idle after the last one ended (session:idle)."`
	// SessionID is the harness session.
	SessionID string `json:"sessionId"`
	// ProjectRoot is the session's project ("" when it is gone).
	ProjectRoot string `json:"projectRoot" doc:"The session's project (\"\" when the session is gone)."`
	// Title says what happened, in one line, with the session's title.
	Title string `json:"title" doc:"One line: what happened, then \" — \" and the session's title. At most 200 characters."`
	// Link opens the session in the console ("" without Config.Link).
	Link string `json:"link" doc:"The session in the console: --notify-link (default http://ADDR/ of the server) + \"#s=\" + the session ID."`
	// At is when the event happened (RFC 3339, UTC, milliseconds).
	At string `json:"at" oa:"format=date-time" doc:"When the event happened (RFC 3339, UTC, milliseconds)."`
}

// Config configures New.
type Config struct {
	// Webhooks are URLs (http or https) each notification is POSTed to as
	// JSON (--notify-webhook, repeatable).
	Webhooks []string
	// Ntfy are ntfy-compatible topic URLs (--notify-ntfy): a text POST
	// with a Title header.
	Ntfy []string
	// IRC are channels each notification is posted to as one line
	// (--notify-irc): irc://[nick@]host[:port]/#channel, or ircs:// for
	// TLS. One client per URL stays connected while the notifier runs.
	IRC []string
	// IRCNick is the IRC sinks' nick when their URL names none (""
	// = DefaultIRCNick).
	IRCNick string
	// IRCTLS is the TLS configuration of ircs:// sinks (nil = the
	// system's roots, TLS 1.2 or later); tests give their own roots.
	IRCTLS *tls.Config
	// Secret signs the webhooks' bodies ("" = unsigned; the server takes
	// it from HARNESS_NOTIFY_SECRET, never from a flag or file).
	Secret string
	// Link is the console's base URL; a notification links to
	// Link + "#s=" + the session ID ("" = no link).
	Link string
	// Idle, when positive, sends session:idle once a session has had no
	// new turn for that long after its last turn ended.
	Idle time.Duration

	// Queue bounds each sink's pending notifications (0 = DefaultQueue);
	// when full, the oldest is dropped and counted (Dropped).
	Queue int
	// Attempts bounds the tries of one delivery (0 = DefaultAttempts).
	Attempts int
	// Backoff is the wait before the first retry, doubled for each next
	// one up to MaxBackoff (0 = DefaultBackoff).
	Backoff time.Duration
	// Timeout bounds one attempt (0 = DefaultTimeout).
	Timeout time.Duration
	// Client sends the requests (nil = a client without redirects).
	Client *http.Client
	// Logger gets one line per failed delivery (nil = none). URLs are
	// logged as scheme and host only: a webhook's path is often its key.
	Logger *zerolog.Logger
	// Lookup gives a session's project root and title (nil = neither).
	Lookup func(sessionID string) (projectRoot, title string)
}

// Enabled reports whether c has any sink.
func (c Config) Enabled() bool { return len(c.Webhooks)+len(c.Ntfy)+len(c.IRC) > 0 }

// ErrConfig is wrapped by New's errors.
var ErrConfig = errors.New("notify")

// Notifier turns watched events into notifications and delivers them.
type Notifier struct {
	cfg   Config
	log   zerolog.Logger
	sinks []*sink

	ctx    context.Context // cancelled by Close: in-flight deliveries end
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	outcome map[string]string      // session → the type its running turn ends with so far
	idle    map[string]*time.Timer // session → its pending session:idle
	closed  bool
	// stopWatch ends Start's watch of the Harness (nil without Start).
	stopWatch func()

	// delivered counts successful deliveries (tests, benchmarks).
	delivered atomic.Int64
	// missed counts the events Run was told it missed.
	missed atomic.Int64
}

// New checks cfg and starts one worker per sink. Close stops them.
func New(cfg Config) (*Notifier, error) {
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = DefaultAttempts
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.Link != "" {
		if _, err := checkURL(cfg.Link); err != nil {
			return nil, fmt.Errorf("%w: link: %v", ErrConfig, err)
		}
	}
	if cfg.Idle < 0 {
		return nil, fmt.Errorf("%w: idle %s is negative", ErrConfig, cfg.Idle)
	}
	if cfg.Secret != "" {
		secrets.Register(cfg.Secret) // never in a log line or event
	}
	n := &Notifier{cfg: cfg, log: zerolog.Nop(), outcome: map[string]string{}, idle: map[string]*time.Timer{}}
	if cfg.Logger != nil {
		n.log = *cfg.Logger
	}
	for _, u := range cfg.Webhooks {
		pu, err := checkURL(u)
		if err != nil {
			return nil, fmt.Errorf("%w: webhook: %v", ErrConfig, err)
		}
		n.sinks = append(n.sinks, newSink(n, webhook{url: u, host: pu.Scheme + "://" + pu.Host, secret: []byte(cfg.Secret)}))
	}
	for _, u := range cfg.Ntfy {
		pu, err := checkURL(u)
		if err != nil {
			return nil, fmt.Errorf("%w: ntfy: %v", ErrConfig, err)
		}
		n.sinks = append(n.sinks, newSink(n, ntfy{url: u, host: pu.Scheme + "://" + pu.Host}))
	}
	for _, u := range cfg.IRC {
		t, err := parseIRC(u, cfg.IRCNick)
		if err == nil {
			var is *ircSink
			if is, err = newIRCSink(t, cfg.IRCTLS, n); err == nil {
				n.sinks = append(n.sinks, newSink(n, is))
				continue
			}
		}
		n.closeTransports()
		return nil, fmt.Errorf("%w: irc: %v", ErrConfig, err)
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	for _, s := range n.sinks {
		n.wg.Add(1)
		go s.run()
	}
	return n, nil
}

func checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL", secrets.Scrub(raw))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s://%s…: want an http or https URL", u.Scheme, u.Host)
	}
	return u, nil
}

// Run reads events until the sequence ends (Harness.Watch's ends at
// Shutdown or when its ctx is done), turning them into notifications. It
// never blocks on a sink. Records the sequence says were missed
// (harness.ErrWatchDropped) are counted in Missed: their notifications
// are not sent.
func (n *Notifier) Run(events iter.Seq2[session.Record, error]) {
	for rec, err := range events {
		var de *harness.WatchDropError
		switch {
		case errors.As(err, &de):
			n.missed.Add(de.Missed)
			n.log.Warn().Int64("missed", de.Missed).Msg("notify: events missed (the watch's queue was full); their notifications are not sent")
		case err == nil && rec.Typed != nil:
			n.Observe(*rec.Typed)
		}
	}
}

// Missed is how many events Run was told it missed (its watch's queue
// full): what they would have notified was not sent.
func (n *Notifier) Missed() int64 { return n.missed.Load() }

// Observe turns one event into notifications (Run calls it for each).
func (n *Notifier) Observe(ev event.Event) {
	id := ev.SessionID
	if id == "" {
		return
	}
	at := time.Now()
	if ev.Time > 0 {
		at = time.UnixMilli(ev.Time)
	}
	switch ev.Type {
	case event.TypeApprovalRequested:
		what := "a tool"
		if ev.Approval != nil && ev.Approval.ToolName != "" {
			what = ev.Approval.ToolName
		}
		n.notify(string(ev.Type), id, "Approval needed: "+what, at)
	case event.TypeTrustRequired:
		what := "a project file"
		if ev.Trust != nil && ev.Trust.Kind != "" {
			what = ev.Trust.Kind
			if ev.Trust.Name != "" {
				what += " " + ev.Trust.Name
			}
		}
		n.notify(string(ev.Type), id, "Trust needed: "+what, at)
	case TypePlanReady:
		n.notify(TypePlanReady, id, "Plan ready for review", at)
	case event.TypeUserMessage:
		n.setOutcome(id, "", true) // a turn starts: the person is back, no idle call
	case event.TypeSessionComplete:
		n.setOutcome(id, TypeTurnCompleted, false)
	case event.TypeSessionError:
		kind := event.ErrorKind("")
		if ev.Error != nil {
			kind = ev.Error.Kind
		}
		switch kind {
		case event.ErrorResumeNotFound:
			// the turn goes on with a fresh conversation
		case event.ErrorInterrupted, event.ErrorKilled:
			n.setOutcome(id, TypeTurnInterrupted, false)
		case event.ErrorMaxBudget:
			n.setOutcome(id, TypeBudgetHit, false)
		default:
			n.setOutcome(id, TypeTurnFailed, false)
		}
	case event.TypeProcessExit:
		n.turnEnded(id, at)
	}
}

func (n *Notifier) setOutcome(id, typ string, start bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if start {
		if t := n.idle[id]; t != nil {
			t.Stop()
			delete(n.idle, id)
		}
		delete(n.outcome, id)
		return
	}
	n.outcome[id] = typ
}

var endTitles = map[string]string{
	TypeTurnCompleted:   "Turn completed",
	TypeTurnFailed:      "Turn failed",
	TypeTurnInterrupted: "Turn interrupted",
	TypeBudgetHit:       "Budget hit",
}

// turnEnded sends the turn's end and arms the session's idle call.
func (n *Notifier) turnEnded(id string, at time.Time) {
	n.mu.Lock()
	typ := n.outcome[id]
	delete(n.outcome, id)
	if typ == "" {
		typ = TypeTurnFailed // ended without a result or an error
	}
	if n.cfg.Idle > 0 && !n.closed {
		if t := n.idle[id]; t != nil {
			t.Stop()
		}
		var t *time.Timer
		t = time.AfterFunc(n.cfg.Idle, func() {
			n.mu.Lock()
			mine := n.idle[id] == t
			if mine {
				delete(n.idle, id)
			}
			n.mu.Unlock()
			if mine {
				n.notify(TypeSessionIdle, id, "Idle for "+n.cfg.Idle.String(), time.Now())
			}
		})
		n.idle[id] = t
	}
	n.mu.Unlock()
	n.notify(typ, id, endTitles[typ], at)
}

// notify builds a notification and hands it to every sink's queue.
func (n *Notifier) notify(typ, id, what string, at time.Time) {
	no := Notification{Type: typ, SessionID: id, Title: what, At: at.UTC().Format("2006-01-02T15:04:05.000Z07:00")}
	if n.cfg.Lookup != nil {
		root, title := n.cfg.Lookup(id)
		no.ProjectRoot = root
		if title != "" {
			no.Title = what + " — " + title
		}
	}
	if n.cfg.Link != "" {
		no.Link = strings.TrimRight(n.cfg.Link, "#") + "#s=" + url.QueryEscape(id)
	}
	no.Title = secrets.Scrub(oneLine(no.Title, 200))
	no.ProjectRoot = secrets.Scrub(no.ProjectRoot)
	for _, s := range n.sinks {
		s.push(no)
	}
}

// oneLine is s on one line, at most max runes.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

// Dropped is how many notifications full queues dropped, in all sinks.
func (n *Notifier) Dropped() int64 {
	var d int64
	for _, s := range n.sinks {
		d += s.dropped.Load()
	}
	return d
}

// Delivered is how many deliveries succeeded, in all sinks.
func (n *Notifier) Delivered() int64 { return n.delivered.Load() }

// Close stops the idle timers, lets the sinks deliver what is queued
// until ctx is done, then abandons the rest (in-flight requests are
// cancelled) and waits for the workers. Safe to call more than once.
func (n *Notifier) Close(ctx context.Context) {
	n.mu.Lock()
	first := !n.closed
	n.closed = true
	for id, t := range n.idle {
		t.Stop()
		delete(n.idle, id)
	}
	stop := n.stopWatch
	n.mu.Unlock()
	if stop != nil {
		stop() // Run returns
	}
	if first {
		for _, s := range n.sinks {
			s.close()
		}
	}
	done := make(chan struct{})
	go func() {
		n.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		n.cancel()
		<-done
	}
	n.cancel()
}
