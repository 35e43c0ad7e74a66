package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/internal/lazyre"
	"github.com/chirality/harness/ipc"
	"github.com/chirality/harness/irc"
	"github.com/chirality/harness/runner"
)

// Agent is what the daemon drives; *runner.Keeper is the implementation.
type Agent interface {
	Start(ctx context.Context, initialPrompt string) error
	Stop(ctx context.Context) error
	SendPrompt(text string) error
	Pause()
	Resume()
	Status() runner.Status
	OnMessage(func(runner.Message))
	OnTurnStart(func(runner.TurnStart))
	OnTurnEnd(func(runner.TurnEnd))
	Compact(ctx context.Context) error
	Clear(ctx context.Context) error
}

// Supervisor is what the daemon needs of a supervisor;
// *supervisor.Supervisor is the implementation.
type Supervisor interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	Observe(turn runner.Message)
	OnWhisper(func(message, action string))
	OnEscalation(func(message string))
	Resume()
	Paused() bool
}

// Hooks are the callbacks the daemon gives the agent it builds: the
// keeper's OnPause and OnCircuitOpen.
type Hooks struct {
	OnPause       func(reason string)
	OnCircuitOpen func(reason string)
}

// Options configures New. Config and Agent are required.
type Options struct {
	Config *Config
	Agent  AgentConfig
	// NewAgent builds the agent (and its supervisor, nil for none). nil =
	// the harness core: a runner.Keeper over a runner.Core over a
	// per-agent *harness.Harness (see CoreAgent).
	NewAgent func(hooks Hooks) (Agent, Supervisor, error)
	// Core configures the default NewAgent.
	Core CoreOptions
	// AskTimeout is irc_ask's default wait (0 = 5 min).
	AskTimeout time.Duration
	// IRCTimeout bounds the first registration before the daemon goes on
	// without it (it keeps trying; 0 = 10 s). MinBackoff and MaxBackoff
	// are the reconnect back-off (0 = the irc package's).
	IRCTimeout             time.Duration
	MinBackoff, MaxBackoff time.Duration
	// StopTimeout bounds Stop's steps (0 = 30 s).
	StopTimeout time.Duration
	// HTTPClient posts the webhook (nil = a client with a 10 s timeout).
	HTTPClient *http.Client
	Logger     *zerolog.Logger
}

// Daemon runs one agent on IRC. Start brings it up (once), Stop (or an
// IPC shutdown) takes it down; Done is closed when it has stopped, also
// after a failed Start. Its methods are safe for concurrent use. The
// callbacks it gives the IRC client, the runner and the supervisor take
// its lock only briefly and never call back into them under it.
type Daemon struct {
	opts    Options
	agent   AgentConfig
	ircNick string
	log     zerolog.Logger

	buf   *irc.Buffer
	irc   *irc.Client
	hook  *http.Client
	ipc   *ipc.Server
	sup   Supervisor
	run   Agent
	pidf  string
	hooks sync.WaitGroup

	// promptMu orders the mentions' prompts: those that came while the
	// runner started (early) go to it first, then the new ones.
	promptMu sync.Mutex
	early    []string

	mu          sync.Mutex
	whispers    []ipc.Whisper
	sentInTurn  bool
	lastText    string
	lastChannel string
	curPrompt   string              // the turn under way's prompt ("" between turns)
	curTool     string              // the last tool it called
	stopSteps   []string            // shutdown's steps, in the order they were done
	refusals    map[string]*refusal // channel → the mentions not taken, to be told
	started     bool
	stopping    bool
	// starting is closed when Start has returned; cancelStart ends
	// Start's context, so a Stop during Start (an IPC shutdown, which the
	// socket accepts before the runner is up) waits for a short Start
	// instead of racing it and leaving a runner behind.
	starting    chan struct{}
	cancelStart context.CancelFunc
	done        chan struct{}
	stopOnce    sync.Once
	stopErr     error
}

// maxWhispers bounds the whispers waiting for the agent's next skill call.
const maxWhispers = 50

// New checks the options; Start brings the daemon up.
func New(opts Options) (*Daemon, error) {
	if opts.Config == nil || opts.Agent.Nick == "" {
		return nil, errors.New("daemon: Options.Config and Options.Agent are required")
	}
	if opts.AskTimeout <= 0 {
		opts.AskTimeout = 5 * time.Minute
	}
	if opts.IRCTimeout <= 0 {
		opts.IRCTimeout = 10 * time.Second
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 30 * time.Second
	}
	d := &Daemon{opts: opts, agent: opts.Agent, ircNick: opts.Config.IRCNick(opts.Agent), done: make(chan struct{}),
		log: zerolog.Nop()}
	if opts.Logger != nil {
		d.log = opts.Logger.With().Str("agent", opts.Agent.Nick).Logger()
	}
	return d, nil
}

// Nick is the agent's configured nick (its socket's name, HARNESS_NICK).
func (d *Daemon) Nick() string { return d.agent.Nick }

// IRCNick is the agent's nick on IRC.
func (d *Daemon) IRCNick() string { return d.ircNick }

// Done is closed when the daemon has stopped.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Start brings the daemon up in order: message buffer → IRC transport
// (connect, register, join; it keeps reconnecting with back-off) →
// webhook client → IPC socket and PID file → supervisor → runner. On an
// error what was started is stopped again and Done is closed. ctx bounds
// the start only; a Stop during Start cancels it too.
func (d *Daemon) Start(ctx context.Context) (err error) {
	d.mu.Lock()
	if d.started || d.stopping {
		d.mu.Unlock()
		return errors.New("daemon: started twice, or after Stop")
	}
	d.started = true
	ctx, cancel := context.WithCancel(ctx)
	d.starting, d.cancelStart = make(chan struct{}), cancel
	d.mu.Unlock()
	defer func() {
		cancel()
		if err != nil {
			d.stopOnce.Do(func() {
				d.stopErr = d.shutdown(context.Background())
				close(d.done)
			})
		}
		close(d.starting)
	}()

	// a second daemon for the nick is refused before it takes the nick on IRC
	sock, err := ipc.SocketPath(d.agent.Nick)
	if err != nil {
		return err
	}
	if err := ipc.CheckNotRunning(sock); err != nil {
		return fmt.Errorf("daemon %s: %w", d.agent.Nick, err)
	}
	// and so is one whose directory cannot be: before anything connects
	if err := EnsureDirectory(d.agent); err != nil {
		return err
	}

	// 1. message buffer
	d.buf = irc.NewBuffer(0)

	// 2. IRC transport
	cl, err := irc.New(irc.Config{Addr: d.opts.Config.Server.Addr(), Addrs: d.opts.Config.Server.Hosts, Nick: d.ircNick, Channels: d.agent.Channels,
		Buffer: d.buf, MinBackoff: d.opts.MinBackoff, MaxBackoff: d.opts.MaxBackoff, Logger: d.opts.Logger})
	if err != nil {
		return fmt.Errorf("daemon %s: %w", d.agent.Nick, err)
	}
	d.irc = cl
	cl.OnMessage(d.onIRC)
	if err := cl.Start(); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, d.opts.IRCTimeout)
	var nickErr *irc.NickError
	if err := cl.WaitRegistered(rctx, 1); errors.As(err, &nickErr) {
		cancel()
		return fmt.Errorf("daemon %s: %w", d.agent.Nick, err)
	} else if err != nil {
		d.log.Warn().Err(err).Str("server", d.opts.Config.Server.Addr()).Msg("not registered on IRC yet; still trying")
	} else {
		for _, ch := range d.agent.Channels {
			if err := cl.WaitJoined(rctx, ch); err != nil {
				d.log.Warn().Err(err).Str("channel", ch).Msg("not joined yet")
			}
		}
	}
	cancel()

	// 3. webhook client
	d.hook = d.opts.HTTPClient
	if d.hook == nil {
		d.hook = &http.Client{Timeout: 10 * time.Second}
	}

	// 4. IPC
	if _, err := ipc.EnsureRunDir(); err != nil {
		return err
	}
	srv, err := ipc.Listen(ipc.ServerConfig{Path: sock, Handler: d.handle, Whispers: d.takeWhispers, Unsent: d.returnWhispers,
		Logger: d.opts.Logger})
	if err != nil {
		return err
	}
	d.ipc = srv
	if d.pidf, err = ipc.PIDPath(d.agent.Nick); err != nil {
		return err
	}
	if err := os.WriteFile(d.pidf, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return fmt.Errorf("daemon: PID file: %w", err)
	}

	// 5. supervisor and 6. runner (built together: they share the agent's Harness)
	newAgent := d.opts.NewAgent
	if newAgent == nil {
		newAgent = func(h Hooks) (Agent, Supervisor, error) {
			return CoreAgent(d.opts.Config, d.agent, d.opts.Core, h, d.opts.Logger)
		}
	}
	a, sup, err := newAgent(Hooks{OnPause: d.onPause, OnCircuitOpen: d.onCircuitOpen})
	if err != nil {
		return err
	}
	closeAgent := func() {
		if c, ok := a.(interface{ Close() }); ok {
			c.Close()
		}
	}
	if sup != nil {
		sup.OnWhisper(d.onWhisper)
		sup.OnEscalation(d.onEscalation)
		// the supervisor lives until Stop, not until Start's ctx ends
		if err := sup.Start(context.WithoutCancel(ctx)); err != nil {
			closeAgent()
			return fmt.Errorf("daemon: supervisor: %w", err)
		}
		d.mu.Lock()
		d.sup = sup
		d.mu.Unlock()
	}
	a.OnMessage(d.onAgentMessage)
	a.OnTurnStart(d.onTurnStart)
	a.OnTurnEnd(d.onTurnEnd)
	if err := a.Start(ctx, ""); err != nil {
		closeAgent()
		return fmt.Errorf("daemon: runner: %w", err)
	}
	d.promptMu.Lock() // the early mentions go first, in order
	d.mu.Lock()
	d.run = a
	d.mu.Unlock()
	for _, p := range d.early {
		d.prompt(a, p)
	}
	d.early = nil
	d.promptMu.Unlock()
	d.log.Info().Str("irc_nick", d.ircNick).Str("engine", d.agent.Engine()).Str("socket", sock).Msg("agent daemon up")
	return nil
}

// Stop takes the daemon down in spec 003's order: runner → supervisor →
// IPC socket → IRC transport (QUIT; webhook posts under way finish
// first) → PID file, removed last, so the file stands as long as any
// part of the daemon does. The runner's turn gets its stop grace to end,
// less when ctx ends first: then it is killed and Stop goes on at once.
// During Start it cancels Start's context and waits for Start to return
// first. Safe to call more than once and from any goroutine; later calls
// wait for the first.
func (d *Daemon) Stop(ctx context.Context) error {
	d.mu.Lock()
	d.stopping = true
	starting, cancel := d.starting, d.cancelStart
	d.mu.Unlock()
	if cancel != nil {
		cancel()
		<-starting
	}
	d.stopOnce.Do(func() {
		d.stopErr = d.shutdown(ctx)
		close(d.done)
	})
	<-d.done
	return d.stopErr
}

func (d *Daemon) shutdown(ctx context.Context) error {
	d.mu.Lock()
	d.stopping = true
	d.mu.Unlock()
	// ctx's end (a second signal, a grace period over) makes the runner
	// kill its turn instead of waiting for it; StopTimeout bounds the rest
	ctx, cancel := context.WithTimeout(ctx, d.opts.StopTimeout)
	defer cancel()
	var errs []error
	if a := d.agentOrNil(); a != nil {
		errs = append(errs, a.Stop(ctx))
		if c, ok := a.(interface{ Close() }); ok {
			c.Close()
		}
		d.stopped("runner")
	}
	if sup := d.supOrNil(); sup != nil {
		errs = append(errs, sup.Stop(ctx))
		d.stopped("supervisor")
	}
	if d.ipc != nil {
		errs = append(errs, d.ipc.Close())
		d.stopped("ipc")
	}
	d.hooks.Wait()
	if d.irc != nil {
		errs = append(errs, d.irc.Close())
		d.stopped("irc")
	}
	if d.pidf != "" {
		if err := os.Remove(d.pidf); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
		d.stopped("pid")
	}
	d.log.Info().Msg("agent daemon stopped")
	return errors.Join(errs...)
}

// stopped records a step of shutdown done (stopSteps).
func (d *Daemon) stopped(step string) {
	d.mu.Lock()
	d.stopSteps = append(d.stopSteps, step)
	d.mu.Unlock()
}

func (d *Daemon) agentOrNil() Agent {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.run
}

// supOrNil is the supervisor once Start has started it (the IPC socket
// answers status before that).
func (d *Daemon) supOrNil() Supervisor {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sup
}

// EnsureDirectory creates the agent's directory when it does not exist
// (as `harness agents skills install` does for the engines with a skill
// file), so a fresh folder works for every agent; a path that exists and
// is not a directory is an error naming it.
func EnsureDirectory(a AgentConfig) error {
	fi, err := os.Stat(a.Directory)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("agent %s: directory %s exists and is not a directory", a.Nick, a.Directory)
	case !os.IsNotExist(err):
		return fmt.Errorf("agent %s: directory %s: %w", a.Nick, a.Directory, err)
	}
	if err := os.MkdirAll(a.Directory, 0o755); err != nil {
		return fmt.Errorf("agent %s: directory %s: %w", a.Nick, a.Directory, err)
	}
	return nil
}

// MentionPrompt is the prompt a mention becomes:
// "[IRC @mention in #channel] <sender> message", the message exactly as
// sent.
func MentionPrompt(m irc.Message) string {
	return "[IRC @mention in " + m.Channel + "] <" + m.Sender + "> " + m.Text
}

// mentionPromptRE finds the channel in a MentionPrompt. Channel names
// and nicks may hold ']' but no space, so the name runs to the last "] <"
// before the first space.
var mentionPromptRE = lazyre.New(`^\[IRC @mention in (\S+)\] <`)

// mentionSender is the sender of a MentionPrompt; "" for any other
// prompt.
func mentionSender(prompt string) string {
	if m := mentionPromptRE.FindStringIndex(prompt); m != nil {
		if nick, _, ok := strings.Cut(prompt[m[1]:], "> "); ok {
			return nick
		}
	}
	return ""
}

// mentionChannel is the channel (or, for a private message, the nick) of
// a MentionPrompt; "" for any other prompt.
func mentionChannel(prompt string) string {
	if m := mentionPromptRE.FindStringSubmatch(prompt); m != nil {
		return m[1]
	}
	return ""
}

// onIRC runs on the IRC client's dispatch goroutine, in order.
func (d *Daemon) onIRC(m irc.Message) {
	if !m.Mention || m.Self {
		return
	}
	d.promptMu.Lock()
	defer d.promptMu.Unlock()
	d.mu.Lock()
	a, stopping := d.run, d.stopping
	d.mu.Unlock()
	if a == nil && !stopping {
		if len(d.early) >= maxEarly {
			d.refused(m.Channel, m.Sender, fmt.Sprintf("the agent is starting and %d mentions wait already", maxEarly))
			return
		}
		// IRC is up before the runner (the start order): prompted once it is
		d.early = append(d.early, MentionPrompt(m))
		return
	}
	if a == nil || stopping {
		d.log.Warn().Str("channel", m.Channel).Msg("mention while the runner is not up: kept in the buffer, not prompted")
		d.refused(m.Channel, m.Sender, "the agent is not running")
		return
	}
	d.prompt(a, MentionPrompt(m))
}

// maxEarly bounds the mentions kept for a runner that is starting.
const maxEarly = 100

// prompt sends a mention's prompt to the agent. A mention the agent
// cannot take (its queue is full, its circuit breaker is open, it is
// stopping) is not lost silently: its sender is told in the channel
// (refused).
func (d *Daemon) prompt(a Agent, p string) {
	err := a.SendPrompt(p)
	ch, sender := mentionChannel(p), mentionSender(p)
	switch {
	case err == nil:
	case errors.Is(err, runner.ErrPaused):
		d.log.Info().Str("channel", ch).Msg("mention while paused: kept in the buffer")
	case errors.Is(err, runner.ErrQueueFull):
		d.log.Warn().Err(err).Str("channel", ch).Msg("mention not prompted")
		d.refused(ch, sender, fmt.Sprintf("%d mentions wait already", a.Status().Waiting))
	case errors.Is(err, runner.ErrCircuitOpen):
		d.log.Warn().Err(err).Str("channel", ch).Msg("mention not prompted")
		d.refused(ch, sender, "it stopped restarting after repeated crashes")
	default:
		d.log.Warn().Err(err).Str("channel", ch).Msg("mention not prompted")
		d.refused(ch, sender, "the agent is not running")
	}
}

// RefusedDelay is how long the daemon gathers the mentions it could not
// take before it tells their senders, in one line per channel (a burst
// of refusals must not flood the channel).
var RefusedDelay = 2 * time.Second

// refused tells sender, in channel, that their mention was not taken:
// gathered for RefusedDelay, then one line naming every sender.
func (d *Daemon) refused(channel, sender, why string) {
	if channel == "" || sender == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		return // shutdown waits for d.hooks: add none now
	}
	if d.refusals == nil {
		d.refusals = map[string]*refusal{}
	}
	r := d.refusals[channel]
	if r == nil {
		r = &refusal{}
		d.refusals[channel] = r
		d.hooks.Add(1)
		time.AfterFunc(RefusedDelay, func() { defer d.hooks.Done(); d.tellRefused(channel) })
	}
	r.n++
	r.why = why
	if !slices.Contains(r.senders, sender) && len(r.senders) < 10 {
		r.senders = append(r.senders, sender)
	}
}

// refusal is the mentions of one channel not taken, waiting to be told.
type refusal struct {
	n       int
	senders []string
	why     string
}

func (d *Daemon) tellRefused(channel string) {
	d.mu.Lock()
	r := d.refusals[channel]
	delete(d.refusals, channel)
	d.mu.Unlock()
	if r == nil || d.irc == nil {
		return
	}
	what := "your mention was"
	if r.n > 1 {
		what = fmt.Sprintf("%d mentions were", r.n)
	}
	text := fmt.Sprintf("%s: %s not taken by %s (%s); ask again later", strings.Join(r.senders, ", "), what, d.ircNick, r.why)
	if err := d.irc.Later(channel, text); err != nil {
		d.log.Warn().Err(err).Str("channel", channel).Int("mentions", r.n).Msg("could not tell the senders of refused mentions")
	}
}

func (d *Daemon) onAgentMessage(m runner.Message) {
	d.mu.Lock()
	if t := m.Text(); t != "" {
		d.lastText = t
	}
	for _, c := range m.Content {
		if c.Type == "tool_use" && c.Name != "" {
			d.curTool = c.Name
		}
	}
	d.mu.Unlock()
	if sup := d.supOrNil(); sup != nil {
		sup.Observe(m)
	}
}

func (d *Daemon) onTurnStart(s runner.TurnStart) {
	ch := mentionChannel(s.Prompt)
	d.mu.Lock()
	d.sentInTurn, d.lastText = false, ""
	d.curPrompt, d.curTool = s.Prompt, ""
	if ch != "" {
		d.lastChannel = ch
	}
	d.mu.Unlock()
}

// onTurnEnd relays the turn's final answer, as plain text
// (irc.PlainText), to the mention's channel when the agent did not post
// to IRC itself during the turn (the
// anthropic engine has no shell to run the skill CLI; other engines post
// themselves, and are relayed only when they did not).
func (d *Daemon) onTurnEnd(e runner.TurnEnd) {
	d.mu.Lock()
	sent, text := d.sentInTurn, d.lastText
	d.curPrompt, d.curTool = "", ""
	d.mu.Unlock()
	if e.Final != "" {
		text = e.Final
	}
	ch := mentionChannel(e.Prompt)
	if sent || text == "" || ch == "" || e.Outcome != runner.Completed {
		return
	}
	lines := irc.SplitText(irc.PlainText(text), 0) // IRC renders no markdown
	if len(lines) > MaxRelayLines {
		more := len(lines) - MaxRelayLines
		lines = append(lines[:MaxRelayLines], fmt.Sprintf("… (%d more lines; the whole answer is in session %s)", more, e.SessionID))
	}
	// Later: an answer that finds the agent between connections (a split)
	// is posted once it has rejoined the channel
	if err := d.irc.Later(ch, strings.Join(lines, "\n")); err != nil {
		d.log.Warn().Err(err).Str("channel", ch).Msg("relay of the final answer failed")
	}
}

// MaxRelayLines bounds a relayed answer: IRC servers throttle floods, and
// a channel is no place for a long document.
const MaxRelayLines = 20

func (d *Daemon) onWhisper(message, action string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.whispers) >= maxWhispers {
		d.whispers = d.whispers[1:]
	}
	d.whispers = append(d.whispers, ipc.Whisper{Type: "whisper", WhisperType: action, Message: message})
	d.log.Info().Str("action", action).Msg("supervisor whisper queued")
}

func (d *Daemon) takeWhispers() []ipc.Whisper {
	d.mu.Lock()
	defer d.mu.Unlock()
	w := d.whispers
	d.whispers = nil
	return w
}

// returnWhispers puts back, first in line, whispers whose skill call
// went away before they were written.
func (d *Daemon) returnWhispers(w []ipc.Whisper) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.whispers = append(slices.Clone(w), d.whispers...)
	if n := len(d.whispers); n > maxWhispers {
		d.whispers = d.whispers[n-maxWhispers:]
	}
}

// Alert is the webhook's JSON body (supervisor.webhook): an escalation
// of the supervisor, or a question the agent asked (irc_ask).
type Alert struct {
	Type     string   `json:"type"` // "escalation" or "ask"
	Nick     string   `json:"nick"`
	IRCNick  string   `json:"irc_nick"`
	Channels []string `json:"channels"`
	// Channel is where an ask's question waits for its answer.
	Channel string    `json:"channel,omitempty"`
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
}

// Escalation is the Alert of an escalation (its former name).
type Escalation = Alert

func (d *Daemon) onEscalation(message string) {
	d.log.Warn().Str("escalation", message).Msg("supervisor escalation; the supervisor pauses, the agent keeps running")
	d.postAlert(Alert{Type: "escalation", Message: message})
}

// askAlert tells the webhook that the agent asked a question in channel
// and waits for its answer (irc_ask, once the question is sent).
func (d *Daemon) askAlert(channel, question string) {
	d.log.Info().Str("channel", channel).Msg("agent asked; webhook alerted")
	d.postAlert(Alert{Type: "ask", Channel: channel, Message: question})
}

// postAlert POSTs a to supervisor.webhook, in the background (Stop waits
// for it); without a webhook it does nothing.
func (d *Daemon) postAlert(a Alert) {
	url := ""
	if d.opts.Config.Supervisor != nil {
		url = d.opts.Config.Supervisor.Webhook
	}
	if url == "" || d.hook == nil {
		return
	}
	a.Nick, a.IRCNick, a.Channels, a.Time = d.agent.Nick, d.ircNick, d.agent.Channels, time.Now().UTC()
	body, _ := json.Marshal(a)
	d.mu.Lock()
	if d.stopping {
		d.mu.Unlock()
		return
	}
	d.hooks.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.hooks.Done()
		resp, err := d.hook.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			d.log.Error().Err(withoutURL(err)).Msg(a.Type + " webhook failed")
			return
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			d.log.Error().Int("status", resp.StatusCode).Msg(a.Type + " webhook refused")
		}
	}()
}

// withoutURL drops the URL from an HTTP client's error: a webhook's URL
// often carries its secret (Slack's, Discord's), and must not reach a log.
func withoutURL(err error) error {
	var ue *neturl.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s webhook: %w", ue.Op, ue.Err)
	}
	return err
}

// alert posts a daemon message to the channel of the last mention (the
// first configured channel before any).
func (d *Daemon) alert(text string) {
	d.mu.Lock()
	ch := d.lastChannel
	d.mu.Unlock()
	if ch == "" && len(d.agent.Channels) > 0 {
		ch = d.agent.Channels[0]
	}
	if ch == "" || d.irc == nil {
		return
	}
	if err := d.irc.Send(ch, text); err != nil {
		d.log.Warn().Err(err).Msg("alert not posted")
	}
}

func (d *Daemon) onPause(reason string) {
	d.log.Error().Str("reason", reason).Msg("agent paused after failed turns")
	d.alert(fmt.Sprintf("[error] %s is paused after repeated failed turns: %s (resume: harness agents resume %s)",
		d.ircNick, oneLine(reason), d.agent.Nick))
}

func (d *Daemon) onCircuitOpen(reason string) {
	d.log.Error().Str("reason", reason).Msg("circuit breaker open")
	d.alert(fmt.Sprintf("[error] %s stopped restarting after repeated crashes: %s (resume: harness agents resume %s)",
		d.ircNick, oneLine(reason), d.agent.Nick))
}

func oneLine(s string) string { return oneLineN(s, 200) }

// oneLineN is s on one line, cut to n bytes (on a rune boundary) and "…".
func oneLineN(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}
