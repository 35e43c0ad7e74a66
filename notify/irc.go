package notify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/irc"
)

// DefaultIRCNick is the IRC sink's nick when neither its URL nor
// Config.IRCNick names one (short: some servers allow 9 characters).
const DefaultIRCNick = "hnotify"

// ircTarget is an IRC sink's URL read: irc://[nick@]host[:port]/#channel
// (plain TCP, port 6667 by default) or ircs://… (TLS, port 6697).
type ircTarget struct {
	addr, channel, nick string
	tls                 bool
}

// parseIRC reads an IRC sink's URL. The channel is the fragment
// (ircs://host/#dev) or the path (ircs://host/%23dev, ircs://host/dev);
// a password in the URL is refused (a secret in argv or a file).
func parseIRC(raw, nick string) (ircTarget, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return ircTarget{}, fmt.Errorf("%q is not a URL", secrets.Scrub(raw))
	}
	var t ircTarget
	port := "6667"
	switch u.Scheme {
	case "irc":
	case "ircs":
		t.tls, port = true, "6697"
	default:
		return ircTarget{}, fmt.Errorf("%s://%s…: want an irc:// or ircs:// URL", u.Scheme, u.Host)
	}
	if u.Hostname() == "" {
		return ircTarget{}, fmt.Errorf("%s://…: no host", u.Scheme)
	}
	if u.User != nil {
		if _, set := u.User.Password(); set {
			return ircTarget{}, fmt.Errorf("%s://%s…: a password in the URL is refused", u.Scheme, u.Host)
		}
		nick = u.User.Username()
	}
	if p := u.Port(); p != "" {
		port = p
	}
	t.addr = net.JoinHostPort(u.Hostname(), port)
	t.channel = u.Fragment
	if t.channel != "" {
		t.channel = "#" + t.channel
	} else {
		t.channel = strings.Trim(u.Path, "/")
		if t.channel != "" && t.channel[0] != '#' && t.channel[0] != '&' {
			t.channel = "#" + t.channel
		}
	}
	if err := irc.ValidateChannel(t.channel); err != nil {
		return ircTarget{}, fmt.Errorf("%s://%s: %v", u.Scheme, u.Host, err)
	}
	if nick == "" {
		nick = DefaultIRCNick
	}
	if err := irc.ValidateNick(nick, 0); err != nil {
		return ircTarget{}, err
	}
	t.nick = nick
	return t, nil
}

// ircSink posts each notification as one line to a channel, through a
// client of package irc that stays connected (and reconnects) until the
// notifier closes.
type ircSink struct {
	c       *irc.Client
	channel string
	host    string
}

func newIRCSink(t ircTarget, tlsConfig *tls.Config, n *Notifier) (*ircSink, error) {
	cfg := irc.Config{Addr: t.addr, Nick: t.nick, Channels: []string{t.channel}, Logger: n.cfg.Logger}
	if t.tls {
		cfg.TLS = tlsConfig
		if cfg.TLS == nil {
			cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
	c, err := irc.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	scheme := "irc"
	if t.tls {
		scheme = "ircs"
	}
	return &ircSink{c: c, channel: t.channel, host: scheme + "://" + t.addr}, nil
}

func (s *ircSink) where() string { return s.host }

// deliver posts no's line; while the client is not in the channel it
// waits in the client's outbox (irc.Client.Later) and is posted on the
// next join. A full outbox is retried.
func (s *ircSink) deliver(_ context.Context, _ *http.Client, no Notification) (bool, error) {
	err := s.c.Later(s.channel, ircLine(no))
	return errors.Is(err, irc.ErrOutboxFull), err
}

// close quits the server (the sink's worker ends).
func (s *ircSink) close() { _ = s.c.Close() }

// ircLine is no as one IRC line: "harness: <type> · <title> · <link>",
// scrubbed of secrets.
func ircLine(no Notification) string {
	line := "harness: " + no.Type + " · " + no.Title
	if no.Link != "" {
		line += " · " + no.Link
	}
	return secrets.Scrub(oneLine(line, 400))
}
