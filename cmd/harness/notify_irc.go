package main

import (
	"github.com/spf13/pflag"

	"github.com/chirality/harness/notify"
)

// flagNotifyIRC adds harness serve's IRC notification flags.
func flagNotifyIRC(fs *pflag.FlagSet, f *notifyFlags) {
	fs.Var(&f.irc, "notify-irc", "IRC channel posted the same notifications as one line: irc://[NICK@]HOST[:PORT]/#CHANNEL, ircs:// for TLS (repeatable)")
	fs.StringVar(&f.ircNick, "notify-irc-nick", "", "nick of the --notify-irc client when its URL names none (default "+notify.DefaultIRCNick+")")
}
