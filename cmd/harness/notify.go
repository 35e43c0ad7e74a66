package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/chirality/harness"
	"github.com/chirality/harness/notify"
)

// notifyFlags are harness serve's notification flags (package notify).
type notifyFlags struct {
	webhooks, ntfy stringList
	idle           time.Duration
	link, file     string
	irc            stringList // notify_irc.go
	ircNick        string
}

func flagNotify(cmd *cobra.Command, f *notifyFlags) {
	fs := cmd.Flags()
	fs.Var(&f.webhooks, "notify-webhook", "URL POSTed a JSON notification when a session needs a person or a turn ends (repeatable; signed with HMAC-SHA256 in X-Harness-Signature when "+notify.SecretEnv+" is set)")
	fs.Var(&f.ntfy, "notify-ntfy", "ntfy-compatible topic URL sent the same notifications as text with a Title header (repeatable)")
	fs.DurationVar(&f.idle, "notify-idle", 0, "also notify when a session has had no new turn this long after its last one ended (0 = never)")
	fs.StringVar(&f.link, "notify-link", "", "the console's base URL in notifications (default: http://ADDR/ of this server)")
	fs.StringVar(&f.file, "notify-config", "", "YAML file of notification settings (notify: {webhooks: [...], ntfy: [...], irc: [...], irc_nick: NICK, idle: 30m, link: URL}); the flags add to it")
	_ = cmd.RegisterFlagCompletionFunc("notify-config", completeYAML)
	flagNotifyIRC(fs, f) // notify_irc.go
}

// config is the notifier's configuration, or ok false when none is set.
func (f *notifyFlags) config(logger *zerolog.Logger) (notify.Config, bool, error) {
	cfg := notify.Config{Webhooks: f.webhooks, Ntfy: f.ntfy, Idle: f.idle, Link: f.link, Logger: logger,
		Secret: os.Getenv(notify.SecretEnv), IRC: f.irc, IRCNick: f.ircNick}
	if f.file != "" {
		if err := notify.LoadFile(f.file, &cfg); err != nil {
			return cfg, false, err
		}
	}
	if f.idle < 0 {
		return cfg, false, fmt.Errorf("--notify-idle %s is negative", f.idle)
	}
	return cfg, cfg.Enabled(), nil
}

// startNotify starts the notifier of a serving Harness (listening on
// addr); the returned func delivers what is queued, for at most 5 s, and
// stops it. With no sink configured it does nothing.
func startNotify(h *harness.Harness, cfg notify.Config, addr net.Addr) (func(), error) {
	if cfg.Link == "" {
		cfg.Link = "http://" + addr.String() + "/"
	}
	n, err := notify.Start(h, cfg)
	if err != nil {
		return func() {}, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n.Close(ctx)
	}, nil
}
