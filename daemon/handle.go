package daemon

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/chirality/harness/ipc"
	"github.com/chirality/harness/irc"
	"github.com/chirality/harness/runner"
)

// ErrNotReady answers agent commands that come before the agent is up.
var ErrNotReady = errors.New("daemon: the agent is not started yet")

// Status is the answer to `status`: the keeper's state plus who the
// agent is. Spec 003's fields: running, paused, circuit_open,
// turn_count, last_activation (Unix seconds, a float, or null before the
// first activation), activity ("working", "paused" or "idle") and
// description (what the agent is doing, in words).
type Status struct {
	runner.Status
	// LastActivation is when the last turn started, in Unix seconds (nil:
	// never). It shadows the keeper's time.Time of the same name.
	LastActivation *float64 `json:"last_activation"`
	Description    string   `json:"description"`
	Nick           string   `json:"nick"`
	IRCNick        string   `json:"irc_nick"`
	Agent          string   `json:"agent"`
	Engine         string   `json:"engine"`
	Channels       []string `json:"channels"`
	Tags           []string `json:"tags,omitempty"`
	Connected      bool     `json:"connected"`
	// Server is the IRC server the agent dialled last (host:port; one of
	// server.host and server.hosts).
	Server           string `json:"server"`
	SupervisorPaused bool   `json:"supervisor_paused"`
}

// UnixSeconds is t in Unix seconds with its fraction (last_activation's
// form); nil for the zero time.
func UnixSeconds(t time.Time) *float64 {
	if t.IsZero() {
		return nil
	}
	f := float64(t.Unix()) + float64(t.Nanosecond())/1e9
	return &f
}

// Status returns the daemon's status.
func (d *Daemon) Status() Status {
	st := Status{Nick: d.agent.Nick, IRCNick: d.ircNick, Agent: d.agent.Agent, Engine: d.agent.Engine(), Tags: d.agent.Tags}
	if a := d.agentOrNil(); a != nil {
		st.Status = a.Status()
	} else {
		st.Activity = "idle"
	}
	st.LastActivation = UnixSeconds(st.Status.LastActivation)
	if d.irc != nil {
		st.Channels = d.irc.Channels()
		st.Connected = d.irc.Connected()
		st.Server = d.irc.Addr()
	}
	if sup := d.supOrNil(); sup != nil {
		st.SupervisorPaused = sup.Paused()
	}
	st.Description = d.describe(st)
	return st
}

// describe says what the agent is doing: the mention it answers (who,
// where, the start of the message) and the tool it runs, or why it does
// nothing.
func (d *Daemon) describe(st Status) string {
	d.mu.Lock()
	prompt, tool := d.curPrompt, d.curTool
	d.mu.Unlock()
	started := d.agentOrNil() != nil
	var desc string
	switch {
	case !started:
		desc = "starting"
	case st.CircuitOpen:
		desc = "stopped after repeated crashes (harness agents resume " + d.agent.Nick + ")"
	case !st.Running:
		desc = "not running"
	case st.Working && prompt != "":
		desc = task(prompt)
		if tool != "" {
			desc += " (running " + tool + ")"
		}
		if st.Paused {
			desc = "paused, finishing: " + desc
		}
	case st.Paused:
		desc = "paused (harness agents resume " + d.agent.Nick + ")"
	default:
		desc = "idle, waiting for a mention"
		if len(st.Channels) > 0 {
			desc += " in " + strings.Join(st.Channels, ", ")
		}
	}
	if st.Waiting > 0 {
		desc += fmt.Sprintf("; %d waiting", st.Waiting)
	}
	return desc
}

// task is a turn's prompt in words: `answering bob in #dev: "the
// message…"` for a mention, `working on "the prompt…"` otherwise.
func task(prompt string) string {
	if ch, sender := mentionChannel(prompt), mentionSender(prompt); ch != "" && sender != "" {
		_, text, _ := strings.Cut(prompt, "> ")
		return fmt.Sprintf("answering %s in %s: %q", sender, ch, oneLineN(text, 80))
	}
	return fmt.Sprintf("working on %q", oneLineN(prompt, 80))
}

// Line is the readable one-line form of a status.
func (s Status) Line() string {
	state := s.Activity
	if s.Paused && s.Working {
		state = "paused (finishing the turn under way)"
	}
	if s.CircuitOpen {
		state = "circuit open"
	}
	if !s.Running && !s.CircuitOpen {
		state = "not running"
	}
	irc := "disconnected"
	if s.Connected {
		irc = "in " + strings.Join(s.Channels, " ")
		if len(s.Channels) == 0 {
			irc = "connected, no channel"
		}
		if s.Server != "" {
			irc += " on " + s.Server
		}
	}
	last := "never"
	if s.LastActivation != nil {
		sec, frac := math.Modf(*s.LastActivation)
		last = time.Unix(int64(sec), int64(frac*1e9)).Format(time.RFC3339)
	}
	sup := ""
	if s.SupervisorPaused {
		sup = ", supervisor paused (escalated)"
	}
	who := s.Nick
	if s.Agent != "" {
		who += " (" + s.Agent + " on " + s.Engine + ")"
	}
	return fmt.Sprintf("%s: %s, %s, %d turns, %d waiting, last activation %s%s — %s", who, state, irc, s.TurnCount, s.Waiting, last, sup, s.Description)
}

// handle answers one IPC request.
func (d *Daemon) handle(ctx context.Context, r ipc.Request) (any, error) {
	opCtx := func(def time.Duration) (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, def)
	}
	a := d.agentOrNil()
	switch r.Type {
	case ipc.CmdCompact, ipc.CmdClear, ipc.CmdPause, ipc.CmdResume:
		if a == nil {
			return nil, ErrNotReady
		}
	}
	switch r.Type {
	case ipc.CmdIRCSend:
		if err := d.irc.Send(r.Channel, r.Message); err != nil {
			return nil, err
		}
		d.markSent()
		return map[string]any{"sent": true, "channel": r.Channel}, nil
	case ipc.CmdIRCRead:
		limit := r.Limit
		if limit == 0 {
			limit = 50
		}
		msgs := d.irc.Read(r.Channel, limit)
		if msgs == nil {
			msgs = []irc.Message{}
		}
		return map[string]any{"channel": r.Channel, "messages": msgs}, nil
	case ipc.CmdIRCAsk:
		timeout := d.opts.AskTimeout
		if r.Timeout > 0 {
			timeout = time.Duration(r.Timeout * float64(time.Second))
		}
		d.markSent()
		// spec 003: irc_ask is "send + alert": the question is in the
		// channel, and the webhook tells a person one waits there
		m, err := d.irc.AskNotify(ctx, r.Channel, r.Message, timeout, func() { d.askAlert(r.Channel, r.Message) })
		if err != nil {
			return nil, err
		}
		return map[string]any{"answer": m}, nil
	case ipc.CmdIRCJoin:
		c, cancel := opCtx(15 * time.Second)
		defer cancel()
		if err := d.irc.Join(c, r.Channel); err != nil {
			return nil, err
		}
		return map[string]any{"channels": d.irc.Channels()}, nil
	case ipc.CmdIRCPart:
		c, cancel := opCtx(15 * time.Second)
		defer cancel()
		if err := d.irc.Part(c, r.Channel); err != nil {
			return nil, err
		}
		return map[string]any{"channels": d.irc.Channels()}, nil
	case ipc.CmdIRCWho:
		c, cancel := opCtx(15 * time.Second)
		defer cancel()
		who, err := d.irc.Who(c, r.Target)
		if err != nil {
			return nil, err
		}
		if who == nil {
			who = []irc.WhoEntry{}
		}
		return map[string]any{"target": r.Target, "users": who}, nil
	case ipc.CmdIRCChannels:
		return map[string]any{"channels": d.irc.Channels()}, nil
	case ipc.CmdIRCTopic:
		c, cancel := opCtx(15 * time.Second)
		defer cancel()
		text := ""
		if r.Topic != nil {
			text = *r.Topic
			if strings.TrimSpace(text) == "" {
				return nil, fmt.Errorf("%w: topic is empty", ipc.ErrBadRequest)
			}
		}
		t, err := d.irc.Topic(c, r.Channel, text)
		if err != nil {
			return nil, err
		}
		return map[string]any{"channel": r.Channel, "topic": t}, nil
	case ipc.CmdCompact:
		if err := a.Compact(ctx); err != nil {
			return nil, err
		}
		return map[string]any{"queued": "compact"}, nil
	case ipc.CmdClear:
		if err := a.Clear(ctx); err != nil {
			return nil, err
		}
		return map[string]any{"queued": "clear"}, nil
	case ipc.CmdStatus:
		return d.Status(), nil
	case ipc.CmdPause:
		a.Pause()
		return d.Status(), nil
	case ipc.CmdResume:
		a.Resume()
		if sup := d.supOrNil(); sup != nil && sup.Paused() {
			sup.Resume()
		}
		return d.Status(), nil
	case ipc.CmdShutdown:
		// answer first: Stop closes this very connection
		return ipc.Then{Data: map[string]any{"stopping": true}, After: func() { go d.Stop(context.Background()) }}, nil
	}
	return nil, fmt.Errorf("%w: %q", ipc.ErrUnknownCommand, r.Type)
}

func (d *Daemon) markSent() {
	d.mu.Lock()
	d.sentInTurn = true
	d.mu.Unlock()
}
