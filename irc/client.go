package irc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ergochat/irc-go/ircevent"
	"github.com/ergochat/irc-go/ircmsg"
	"github.com/rs/zerolog"
)

// Errors callers branch on.
var (
	// ErrNotConnected: the client is between connections (it keeps
	// reconnecting); the command was not sent.
	ErrNotConnected = errors.New("irc: not connected")
	// ErrClosed: Close was called.
	ErrClosed = errors.New("irc: client closed")
	// ErrAskTimeout: nobody answered an Ask in time.
	ErrAskTimeout = errors.New("irc: no answer before the timeout")
	// ErrEmptyMessage: the text had nothing IRC can carry.
	ErrEmptyMessage = errors.New("irc: empty message")
	// ErrTooLong: the text would take more than MaxSendLines PRIVMSGs;
	// nothing was sent.
	ErrTooLong = errors.New("irc: message too long")
)

// MaxSendLines bounds the PRIVMSGs one Send may post (after SplitText):
// the text comes from a model, and a flood of hundreds of lines gets a
// client killed for excess flood by most servers and buries a channel.
const MaxSendLines = 40

// ServerError is a numeric error reply of the server to a command
// (403 no such channel, 442 not on channel, 482 not a channel operator…).
type ServerError struct {
	Code    string
	Target  string
	Message string
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("irc: server refused (%s %s): %s", e.Code, e.Target, e.Message)
}

// NickError is a nick the server will not register as configured: it
// refused it (a numeric reply such as 432 "Nickname too long" before the
// welcome), its ISUPPORT NICKLEN is shorter than the nick (a server
// that truncates instead of refusing), or the nick is in use on the
// network at the first registration (433: another client has it, on
// this server or a linked one; the client never takes another nick). Retrying cannot help, so the
// client stops: WaitRegistered returns the error and the client no
// longer reconnects.
type NickError struct {
	Nick string
	// Max is the server's NICKLEN when it said one, else 0.
	Max int
	// Code and Message are the server's refusal ("" when found by NICKLEN).
	Code, Message string
}

func (e *NickError) Error() string {
	if e.Code == "433" || e.Code == "437" {
		return fmt.Sprintf("irc: the nick %q is already in use on the IRC network (%s %s): another agent or person has it, on this server or a linked one; give each agent its own nick", e.Nick, e.Code, e.Message)
	}
	if e.Max > 0 && len(e.Nick) > e.Max {
		return fmt.Sprintf("irc: the nick %q has %d characters but the server allows %d (its NICKLEN): use a shorter nick or server name", e.Nick, len(e.Nick), e.Max)
	}
	return fmt.Sprintf("irc: the server refused the nick %q (%s): %s", e.Nick, e.Code, e.Message)
}

// Config configures New. Addr and Nick are required; the zero value of
// every other field is documented with it. New copies it.
type Config struct {
	// Addr is the server's host:port.
	Addr string
	// Addrs are more servers of the same network (host:port), tried in
	// order after Addr: a failed connection moves on to the next one,
	// after the back-off; a registration starts again from Addr.
	Addrs []string
	// Nick is the IRC nick to register (validated; see ValidateNick).
	Nick string
	// User and RealName default to Nick.
	User, RealName string
	// Channels are joined on every registration (so again after a
	// reconnect).
	Channels []string
	// Buffer keeps the messages seen (nil = NewBuffer(0)).
	Buffer *Buffer
	// Timeout bounds a dial and a registration (0 = 15 s).
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between connection
	// attempts, doubling after each failure and reset by a registration
	// (0 = 500 ms and 30 s).
	MinBackoff, MaxBackoff time.Duration
	// KeepAlive is the idle time after which the client pings the server
	// (0 = 4 min; at least Timeout).
	KeepAlive time.Duration
	// Logger gets connection events (nil = none).
	Logger *zerolog.Logger
	// TLS, when not nil, makes every connection TLS with this
	// configuration (its ServerName defaults to the dialled host); nil =
	// plain TCP.
	TLS *tls.Config
}

// WhoEntry is one line of a WHO reply.
type WhoEntry struct {
	Nick     string `json:"nick"`
	User     string `json:"user"`
	Host     string `json:"host"`
	Channel  string `json:"channel,omitempty"`
	Flags    string `json:"flags,omitempty"`
	RealName string `json:"realname,omitempty"`
}

// Client is one IRC connection that stays up: it registers the nick,
// joins its channels, keeps a Buffer of what it sees, and reconnects with
// back-off (rejoining) when the connection drops. Methods are safe for
// concurrent use. ircevent runs its callbacks on one goroutine; the
// client only records there and hands messages to its own dispatch
// goroutine, which calls the OnMessage function in order.
type Client struct {
	cfg  Config
	conn *ircevent.Connection
	buf  *Buffer
	log  zerolog.Logger

	mu         sync.Mutex
	addrs      []string          // Addr, then Addrs
	next       int               // the index in addrs of the next dial
	addr       string            // the address dialled last
	outbox     []outMsg          // Later's messages waiting for a connection
	want       map[string]string // folded → channel name: joined on registration
	joined     map[string]string
	failures   int
	registered int   // registrations so far
	fatal      error // a NickError: the client stopped
	onMsg      func(Message)
	waiters    []*waiter
	changed    chan struct{} // closed and replaced on every state change
	queue      []Message
	closed     bool

	whoMu, topicMu sync.Mutex

	stop     chan struct{}
	wake     chan struct{} // dispatch queue not empty
	loopDone chan struct{}
	dispDone chan struct{}
	started  bool
}

// waiter is a pending reply: match is called with every reply-relevant
// message on the ircevent goroutine and returns true when done.
type waiter struct {
	match func(ircmsg.Message) bool
}

// New checks cfg and returns a client; Start connects it.
func New(cfg Config) (*Client, error) {
	if cfg.Addr == "" {
		return nil, errors.New("irc: Config.Addr is required")
	}
	if err := ValidateNick(cfg.Nick, 0); err != nil {
		return nil, err
	}
	for _, ch := range cfg.Channels {
		if err := ValidateChannel(ch); err != nil {
			return nil, err
		}
	}
	cfg.Channels = slices.Clone(cfg.Channels)
	if cfg.User == "" {
		cfg.User = cfg.Nick
	}
	if cfg.RealName == "" {
		cfg.RealName = cfg.Nick
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 500 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(30*time.Second, cfg.MinBackoff)
	}
	if cfg.KeepAlive < cfg.Timeout {
		cfg.KeepAlive = max(4*time.Minute, cfg.Timeout)
	}
	c := &Client{
		cfg:      cfg,
		addrs:    append([]string{cfg.Addr}, cfg.Addrs...),
		buf:      cfg.Buffer,
		want:     map[string]string{},
		joined:   map[string]string{},
		changed:  make(chan struct{}),
		stop:     make(chan struct{}),
		wake:     make(chan struct{}, 1),
		loopDone: make(chan struct{}),
		dispDone: make(chan struct{}),
	}
	if c.buf == nil {
		c.buf = NewBuffer(0)
	}
	c.log = zerolog.Nop()
	if cfg.Logger != nil {
		c.log = cfg.Logger.With().Str("component", "irc").Str("nick", cfg.Nick).Logger()
	}
	for _, ch := range cfg.Channels {
		c.want[foldIRC(ch)] = ch
	}
	c.conn = &ircevent.Connection{
		Server:        cfg.Addr,
		Nick:          cfg.Nick,
		User:          cfg.User,
		RealName:      cfg.RealName,
		Timeout:       cfg.Timeout,
		KeepAlive:     cfg.KeepAlive,
		ReconnectFreq: cfg.MinBackoff,
		QuitMessage:   "bye",
		Log:           log.New(zerologWriter{c.log}, "", 0),
		DialContext:   c.dial,
	}
	c.setupCallbacks()
	return c, nil
}

// zerologWriter forwards ircevent's log lines at debug level.
type zerologWriter struct{ l zerolog.Logger }

func (w zerologWriter) Write(p []byte) (int, error) {
	w.l.Debug().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

var _ io.Writer = zerologWriter{}

// dial waits out the back-off of the failures so far, then dials the
// next of the client's addresses (ircevent's addr is Config.Addr; the
// list is tried in order); the wait and the dial end early when the
// client is closed or ctx (the connection library's) ends.
func (c *Client) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	c.mu.Lock()
	n := c.failures
	c.failures++
	c.mu.Unlock()
	if n > 0 {
		d := c.cfg.MinBackoff << min(n-1, 16)
		if d > c.cfg.MaxBackoff || d <= 0 {
			d = c.cfg.MaxBackoff
		}
		c.log.Debug().Dur("backoff", d).Int("failures", n).Msg("waiting to reconnect")
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.stop:
			t.Stop()
			return nil, ErrClosed
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	c.mu.Lock()
	addr := c.addrs[c.next%len(c.addrs)]
	c.next++
	c.addr = addr
	c.mu.Unlock()
	if len(c.addrs) > 1 {
		c.log.Info().Str("addr", addr).Msg("connecting")
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil || c.cfg.TLS == nil {
		return conn, err
	}
	tc := c.cfg.TLS.Clone()
	if tc.ServerName == "" {
		if host, _, herr := net.SplitHostPort(addr); herr == nil {
			tc.ServerName = host
		}
	}
	tconn := tls.Client(conn, tc)
	if err := tconn.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("irc: TLS with %s: %w", addr, err)
	}
	return tconn, nil
}

func (c *Client) setupCallbacks() {
	ic := c.conn
	// a nick the server refuses before the welcome (ngircd: 432 "Nickname
	// too long, max. 9 characters"), and one longer than its NICKLEN
	ic.AddCallback("432", func(m ircmsg.Message) {
		if len(m.Params) > 1 && foldIRC(m.Params[1]) == foldIRC(c.cfg.Nick) {
			c.stopFor(&NickError{Nick: c.cfg.Nick, Code: m.Command, Message: m.Params[len(m.Params)-1]})
		}
	})
	// the nick is in use: at the first registration an error (another
	// daemon has it, on this server or a linked one); on a reconnection
	// (a ghost of this client the server has not dropped yet) this
	// connection is given up and tried again after the back-off. Either
	// way never under another nick (ircevent would take nick_0).
	inUse := func(m ircmsg.Message) {
		if len(m.Params) < 2 || foldIRC(m.Params[1]) != foldIRC(c.cfg.Nick) || ic.CurrentNick() != "" {
			return
		}
		c.mu.Lock()
		first := c.registered == 0
		c.mu.Unlock()
		if first {
			c.stopFor(&NickError{Nick: c.cfg.Nick, Code: m.Command, Message: m.Params[len(m.Params)-1]})
			return
		}
		c.log.Warn().Str("addr", c.currentAddr()).Msg("nick in use after a reconnection; trying again later")
		_ = ic.SendRaw("QUIT :nick in use")
	}
	ic.AddCallback("433", inUse)
	ic.AddCallback("437", inUse)
	ic.AddConnectCallback(func(ircmsg.Message) {
		if n, err := strconv.Atoi(ic.ISupport()["NICKLEN"]); err == nil && n > 0 && len(c.cfg.Nick) > n {
			c.stopFor(&NickError{Nick: c.cfg.Nick, Max: n})
			return
		}
		if foldIRC(ic.CurrentNick()) != foldIRC(c.cfg.Nick) {
			return // registered under another nick: inUse quit this connection
		}
		c.mu.Lock()
		c.failures = 0
		c.next = 0 // the next reconnection starts from Addr again
		c.registered++
		chans := make([]string, 0, len(c.want))
		for _, ch := range c.want {
			chans = append(chans, ch)
		}
		c.notifyLocked()
		c.mu.Unlock()
		slices.Sort(chans)
		c.log.Info().Str("addr", c.currentAddr()).Strs("channels", chans).Msg("registered")
		for _, ch := range chans {
			_ = ic.Join(ch)
		}
		c.flushOutbox("")
	})
	ic.AddDisconnectCallback(func(ircmsg.Message) {
		c.mu.Lock()
		c.joined = map[string]string{}
		c.notifyLocked()
		closed := c.closed
		c.mu.Unlock()
		if !closed {
			c.log.Warn().Str("addr", c.currentAddr()).Msg("disconnected; reconnecting")
		}
	})
	ic.AddCallback("JOIN", func(m ircmsg.Message) {
		if len(m.Params) > 0 && c.isMe(m.Nick()) {
			c.mu.Lock()
			c.joined[foldIRC(m.Params[0])] = m.Params[0]
			c.notifyLocked()
			c.mu.Unlock()
			c.flushOutbox(m.Params[0])
		}
		c.feed(m)
	})
	ic.AddCallback("PART", func(m ircmsg.Message) {
		if len(m.Params) > 0 && c.isMe(m.Nick()) {
			c.mu.Lock()
			delete(c.joined, foldIRC(m.Params[0]))
			c.notifyLocked()
			c.mu.Unlock()
		}
		c.feed(m)
	})
	ic.AddCallback("KICK", func(m ircmsg.Message) {
		if len(m.Params) > 1 && c.isMe(m.Params[1]) {
			c.mu.Lock()
			delete(c.joined, foldIRC(m.Params[0]))
			delete(c.want, foldIRC(m.Params[0]))
			c.notifyLocked()
			c.mu.Unlock()
		}
	})
	ic.AddCallback("PRIVMSG", c.onPrivmsg)
	for _, code := range []string{"TOPIC", "331", "332", "352", "315",
		"401", "403", "404", "405", "442", "471", "473", "474", "475", "476", "477", "482"} {
		ic.AddCallback(code, c.feed)
	}
}

// stopFor records a fatal error, wakes the waiters and quits the server
// (on ircevent's goroutine; the loop in Start ends).
func (c *Client) stopFor(err error) {
	c.mu.Lock()
	if c.fatal == nil {
		c.fatal = err
	}
	c.notifyLocked()
	c.mu.Unlock()
	c.log.Error().Err(err).Str("addr", c.currentAddr()).Msg("registration refused; not retrying")
	c.conn.Quit()
}

// Err is the error that stopped the client (a *NickError), or nil.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fatal
}

func (c *Client) isMe(nick string) bool {
	cur := c.conn.CurrentNick()
	if cur == "" {
		cur = c.cfg.Nick
	}
	return foldIRC(nick) == foldIRC(cur)
}

// notifyLocked wakes everything waiting for a state change. c.mu held.
func (c *Client) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Client) onPrivmsg(m ircmsg.Message) {
	if len(m.Params) < 2 {
		return
	}
	target, text := m.Params[0], m.Params[1]
	sender := m.Nick()
	if target == "" || sender == "" {
		return
	}
	ch := target
	if !strings.ContainsAny(target[:1], "#&") {
		ch = sender // a private message: its "channel" is the sender
	}
	msg := Message{Time: time.Now(), Channel: ch, Sender: sender, Text: text,
		Mention: Mentions(text, c.Nick())}
	c.buf.Add(msg)
	c.feed(m)
	c.mu.Lock()
	c.queue = append(c.queue, msg)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// feed gives a server message to the pending replies.
func (c *Client) feed(m ircmsg.Message) {
	c.mu.Lock()
	ws := slices.Clone(c.waiters)
	c.mu.Unlock()
	for _, w := range ws {
		if w.match(m) {
			c.removeWaiter(w)
		}
	}
}

func (c *Client) addWaiter(w *waiter) {
	c.mu.Lock()
	c.waiters = append(c.waiters, w)
	c.mu.Unlock()
}

func (c *Client) removeWaiter(w *waiter) {
	c.mu.Lock()
	c.waiters = slices.DeleteFunc(c.waiters, func(x *waiter) bool { return x == w })
	c.mu.Unlock()
}

// OnMessage sets the function called with every PRIVMSG the client
// receives (not its own), in order, on the client's dispatch goroutine.
// Set it before Start.
func (c *Client) OnMessage(fn func(Message)) {
	c.mu.Lock()
	c.onMsg = fn
	c.mu.Unlock()
}

// Start connects in the background and keeps the connection up until
// Close. It returns at once; WaitRegistered waits for the first
// registration. Calling it twice is an error.
func (c *Client) Start() error {
	c.mu.Lock()
	if c.started || c.closed {
		c.mu.Unlock()
		return errors.New("irc: Start called twice or after Close")
	}
	c.started = true
	c.mu.Unlock()
	go c.dispatch()
	go func() {
		defer close(c.loopDone)
		// ircevent's Loop needs one successful Connect first.
		for {
			err := c.conn.Connect()
			if err == nil {
				break // (Loop ends at once when stopFor quit)
			}
			if c.Err() != nil {
				return
			}
			select {
			case <-c.stop:
				return
			default:
			}
			c.log.Warn().Err(err).Str("addr", c.currentAddr()).Msg("connect failed")
		}
		c.conn.Loop()
	}()
	return nil
}

// WaitRegistered waits until the client has registered at least n times
// in all (n = 1: connected once; n = 2: reconnected once) or ctx ends; a
// *NickError when the server will not take the nick (the client stopped).
func (c *Client) WaitRegistered(ctx context.Context, n int) error {
	return c.waitFor(ctx, func() bool { return c.registered >= n })
}

// WaitJoined waits until the client is in channel or ctx ends.
func (c *Client) WaitJoined(ctx context.Context, channel string) error {
	k := foldIRC(channel)
	return c.waitFor(ctx, func() bool { _, ok := c.joined[k]; return ok })
}

// waitFor waits until cond (called with c.mu held) holds.
func (c *Client) waitFor(ctx context.Context, cond func() bool) error {
	for {
		c.mu.Lock()
		ok, ch, closed, fatal := cond(), c.changed, c.closed, c.fatal
		c.mu.Unlock()
		if ok {
			return nil
		}
		if fatal != nil {
			return fatal
		}
		if closed {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *Client) dispatch() {
	defer close(c.dispDone)
	for {
		c.mu.Lock()
		q, fn := c.queue, c.onMsg
		c.queue = nil
		c.mu.Unlock()
		for _, m := range q {
			if fn != nil {
				c.safeCall(fn, m)
			}
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-c.wake:
		case <-c.stop:
			return
		}
	}
}

func (c *Client) safeCall(fn func(Message), m Message) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error().Str("panic", fmt.Sprint(r)).Str("stack", string(debug.Stack())).Msg("OnMessage panicked")
		}
	}()
	fn(m)
}

// Close quits the server, stops reconnecting and waits for the client's
// goroutines. Safe to call more than once.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.loopDone
		return nil
	}
	c.closed = true
	started := c.started
	c.notifyLocked()
	c.mu.Unlock()
	close(c.stop)
	if !started {
		close(c.loopDone)
		close(c.dispDone)
		return nil
	}
	c.conn.Quit()
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-c.loopDone:
			<-c.dispDone
			return nil
		case <-t.C:
			// the server did not close the connection after QUIT
			c.conn.Reconnect()
			t.Reset(200 * time.Millisecond)
		}
	}
}

// Nick is the nick the server knows the client by (the configured one
// before registration).
func (c *Client) Nick() string {
	if n := c.conn.CurrentNick(); n != "" {
		return n
	}
	return c.cfg.Nick
}

// Connected reports whether the client is connected now.
func (c *Client) Connected() bool { return c.conn.Connected() }

// Buffer is the client's message buffer.
func (c *Client) Buffer() *Buffer { return c.buf }

// Channels are the channels the client is in now, sorted.
func (c *Client) Channels() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.joined))
	for _, ch := range c.joined {
		out = append(out, ch)
	}
	slices.Sort(out)
	return out
}

// Read returns the last limit messages of channel from the buffer (the
// client's own included), oldest first.
func (c *Client) Read(channel string, limit int) []Message { return c.buf.Read(channel, limit) }

func (c *Client) sendErr(err error) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case errors.Is(err, ircevent.ClientDisconnected):
		return ErrNotConnected
	}
	return err
}

// Send posts text to target (a channel or a nick), one PRIVMSG per line
// of SplitText, and records it in the buffer. Text of more than
// MaxSendLines lines is refused whole with ErrTooLong.
func (c *Client) Send(target, text string) error {
	if err := validTarget(target); err != nil {
		return err
	}
	lines := SplitText(text, 0)
	if len(lines) == 0 {
		return ErrEmptyMessage
	}
	if len(lines) > MaxSendLines {
		return fmt.Errorf("%w: %d lines of IRC text, %d at most (%d bytes each); post a summary, or split it",
			ErrTooLong, len(lines), MaxSendLines, MaxPayload)
	}
	for _, l := range lines {
		if err := c.conn.Privmsg(target, l); err != nil {
			return c.sendErr(err)
		}
		c.buf.Add(Message{Time: time.Now(), Channel: target, Sender: c.Nick(), Text: l, Self: true})
	}
	return nil
}

// MaxOutbox bounds the messages Later keeps for a connection; beyond
// it Later refuses with ErrOutboxFull.
const MaxOutbox = 50

// ErrOutboxFull: Later already keeps MaxOutbox messages; this one was
// not kept.
var ErrOutboxFull = errors.New("irc: too many messages wait for a connection")

// outMsg is a message Later keeps until its target can take it.
type outMsg struct {
	target, text string
	at           time.Time
}

// Later posts text to target like Send when the client is connected
// and, for one of its channels, in it; otherwise it keeps the message (at
// most MaxOutbox) and posts it once the client has registered again (a
// nick) or rejoined the channel, in order per target. It fails at once only for what Send
// would refuse whatever the connection (an invalid target, empty or too
// long text) and with ErrOutboxFull or ErrClosed.
func (c *Client) Later(target, text string) error {
	if err := validTarget(target); err != nil {
		return err
	}
	lines := SplitText(text, 0)
	if len(lines) == 0 {
		return ErrEmptyMessage
	}
	if len(lines) > MaxSendLines {
		return fmt.Errorf("%w: %d lines of IRC text, %d at most", ErrTooLong, len(lines), MaxSendLines)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	k := foldIRC(target)
	_, in := c.joined[k]
	_, wanted := c.want[k]
	behind := slices.ContainsFunc(c.outbox, func(m outMsg) bool { return foldIRC(m.target) == k })
	// a channel the client means to be in waits for its JOIN; a nick, or a
	// channel it left, is sent to now (the server may refuse the latter)
	ready := c.conn.Connected() && !behind && (in || !wanted || !strings.ContainsAny(target[:1], "#&"))
	c.mu.Unlock()
	if ready {
		err := c.Send(target, text)
		if err == nil || !errors.Is(err, ErrNotConnected) {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.outbox) >= MaxOutbox {
		return ErrOutboxFull
	}
	c.outbox = append(c.outbox, outMsg{target: target, text: text, at: time.Now()})
	c.log.Info().Str("target", target).Int("waiting", len(c.outbox)).Msg("not connected or not in the channel: the message waits")
	return nil
}

// Waiting is how many messages Later keeps for a connection.
func (c *Client) Waiting() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.outbox) }

// flushOutbox posts Later's messages for channel (after its JOIN), or
// for nicks (channel "", after a registration); runs on ircevent's
// goroutine.
func (c *Client) flushOutbox(channel string) {
	c.mu.Lock()
	var send, keep []outMsg
	for _, m := range c.outbox {
		isChan := strings.ContainsAny(m.target[:1], "#&")
		if (channel == "" && !isChan) || (channel != "" && isChan && foldIRC(m.target) == foldIRC(channel)) {
			send = append(send, m)
		} else {
			keep = append(keep, m)
		}
	}
	c.outbox = keep
	c.mu.Unlock()
	for i, m := range send {
		if err := c.Send(m.target, m.text); err != nil {
			c.mu.Lock()
			c.outbox = append(send[i:len(send):len(send)], c.outbox...)
			c.mu.Unlock()
			c.log.Warn().Err(err).Str("target", m.target).Msg("a waiting message could not be posted yet")
			return
		}
		c.log.Info().Str("target", m.target).Dur("waited", time.Since(m.at)).Msg("posted a message that waited for the connection")
	}
}

// Addr is the address the client dialled last (Config.Addr before the
// first dial).
func (c *Client) Addr() string { return c.currentAddr() }

func (c *Client) currentAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.addr == "" {
		return c.cfg.Addr
	}
	return c.addr
}

func validTarget(target string) error {
	if target != "" && strings.ContainsAny(target[:1], "#&") {
		return ValidateChannel(target)
	}
	return ValidateNick(target, 64)
}

// Ask posts question to channel and waits up to timeout (or until ctx
// ends) for a message in the channel addressed to the client's nick
// ("nick: …", "nick, …" or "@nick"), which it returns. ErrAskTimeout
// when none came.
func (c *Client) Ask(ctx context.Context, channel, question string, timeout time.Duration) (Message, error) {
	return c.AskNotify(ctx, channel, question, timeout, nil)
}

// AskNotify is Ask calling sent (when not nil) once the question has
// been sent, before the wait for its answer: the daemon's irc_ask fires
// its webhook alert there (spec 003: "send + alert").
func (c *Client) AskNotify(ctx context.Context, channel, question string, timeout time.Duration, sent func()) (Message, error) {
	if err := ValidateChannel(channel); err != nil {
		return Message{}, err
	}
	got := make(chan Message, 1)
	k := foldIRC(channel)
	w := &waiter{match: func(m ircmsg.Message) bool {
		if m.Command != "PRIVMSG" || len(m.Params) < 2 || foldIRC(m.Params[0]) != k ||
			c.isMe(m.Nick()) || !addressedTo(m.Params[1], c.Nick()) {
			return false
		}
		got <- Message{Time: time.Now(), Channel: channel, Sender: m.Nick(), Text: m.Params[1], Mention: true}
		return true
	}}
	c.addWaiter(w)
	defer c.removeWaiter(w)
	if err := c.Send(channel, question); err != nil {
		return Message{}, err
	}
	if sent != nil {
		sent()
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m := <-got:
		return m, nil
	case <-t.C:
		return Message{}, ErrAskTimeout
	case <-ctx.Done():
		return Message{}, ctx.Err()
	case <-c.stop:
		return Message{}, ErrClosed
	}
}

// errorFor turns a numeric error reply about target into a ServerError.
func errorFor(m ircmsg.Message, target string) (*ServerError, bool) {
	if len(m.Command) != 3 || m.Command[0] != '4' || len(m.Params) < 2 || foldIRC(m.Params[1]) != foldIRC(target) {
		return nil, false
	}
	return &ServerError{Code: m.Command, Target: m.Params[1], Message: m.Params[len(m.Params)-1]}, true
}

// request sends a command and waits until match reports done (or an
// error numeric about target arrives, or ctx ends).
func (c *Client) request(ctx context.Context, target string, match func(ircmsg.Message) bool, command string, params ...string) error {
	errc := make(chan error, 1)
	w := &waiter{match: func(m ircmsg.Message) bool {
		if e, ok := errorFor(m, target); ok {
			errc <- e
			return true
		}
		if match(m) {
			errc <- nil
			return true
		}
		return false
	}}
	c.addWaiter(w)
	defer c.removeWaiter(w)
	if err := c.conn.Send(command, params...); err != nil {
		return c.sendErr(err)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stop:
		return ErrClosed
	}
}

// Join joins channel, keeps it joined across reconnects, and waits until
// the server confirms (or refuses, as a *ServerError).
func (c *Client) Join(ctx context.Context, channel string) error {
	if err := ValidateChannel(channel); err != nil {
		return err
	}
	k := foldIRC(channel)
	c.mu.Lock()
	_, in := c.joined[k]
	c.mu.Unlock()
	if in {
		return nil
	}
	err := c.request(ctx, channel, func(m ircmsg.Message) bool {
		return m.Command == "JOIN" && len(m.Params) > 0 && foldIRC(m.Params[0]) == k && c.isMe(m.Nick())
	}, "JOIN", channel)
	if err == nil {
		c.mu.Lock()
		c.want[k] = channel
		c.mu.Unlock()
	}
	return err
}

// Part leaves channel (and stops rejoining it) and waits for the server.
func (c *Client) Part(ctx context.Context, channel string) error {
	if err := ValidateChannel(channel); err != nil {
		return err
	}
	k := foldIRC(channel)
	c.mu.Lock()
	delete(c.want, k)
	c.mu.Unlock()
	return c.request(ctx, channel, func(m ircmsg.Message) bool {
		return m.Command == "PART" && len(m.Params) > 0 && foldIRC(m.Params[0]) == k && c.isMe(m.Nick())
	}, "PART", channel)
}

// Who lists who is in target (a channel, or a nick).
func (c *Client) Who(ctx context.Context, target string) ([]WhoEntry, error) {
	if err := validTarget(target); err != nil {
		return nil, err
	}
	c.whoMu.Lock()
	defer c.whoMu.Unlock()
	var out []WhoEntry
	k := foldIRC(target)
	err := c.request(ctx, target, func(m ircmsg.Message) bool {
		switch {
		case m.Command == "352" && len(m.Params) >= 7:
			e := WhoEntry{Channel: m.Params[1], User: m.Params[2], Host: m.Params[3], Nick: m.Params[5], Flags: m.Params[6]}
			if len(m.Params) >= 8 {
				if _, rn, ok := strings.Cut(m.Params[7], " "); ok {
					e.RealName = rn
				}
			}
			if e.Channel == "*" {
				e.Channel = ""
			}
			out = append(out, e)
		case m.Command == "315" && len(m.Params) >= 2 && foldIRC(m.Params[1]) == k:
			return true
		}
		return false
	}, "WHO", target)
	return out, err
}

// Topic returns channel's topic, or sets it to text when text is not
// empty (and returns it as the server confirmed it).
func (c *Client) Topic(ctx context.Context, channel, text string) (string, error) {
	if err := ValidateChannel(channel); err != nil {
		return "", err
	}
	c.topicMu.Lock()
	defer c.topicMu.Unlock()
	k := foldIRC(channel)
	var topic string
	params := []string{channel}
	if text != "" {
		lines := SplitText(text, 300)
		if len(lines) == 0 {
			return "", ErrEmptyMessage
		}
		topic := strings.Join(lines, " ")
		if len(topic) > MaxPayload {
			return "", fmt.Errorf("%w: a topic of %d bytes, %d at most", ErrTooLong, len(topic), MaxPayload)
		}
		params = append(params, topic)
	}
	err := c.request(ctx, channel, func(m ircmsg.Message) bool {
		switch {
		case text == "" && m.Command == "332" && len(m.Params) >= 3 && foldIRC(m.Params[1]) == k:
			topic = m.Params[2]
			return true
		case text == "" && m.Command == "331" && len(m.Params) >= 2 && foldIRC(m.Params[1]) == k:
			return true
		case text != "" && m.Command == "TOPIC" && len(m.Params) >= 2 && foldIRC(m.Params[0]) == k && c.isMe(m.Nick()):
			topic = m.Params[1]
			return true
		}
		return false
	}, "TOPIC", params...)
	return topic, err
}

// Registrations is how many times the client has registered (1 after
// the first connection, one more per reconnect).
func (c *Client) Registrations() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registered
}
