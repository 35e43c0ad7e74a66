// Package irc is the IRC transport of the agents' daemon (package
// daemon), on github.com/ergochat/irc-go/ircevent:
//
//	c, err := irc.New(irc.Config{Addr: "127.0.0.1:6667", Nick: "lab-alice", Channels: []string{"#dev"}})
//	c.OnMessage(func(m irc.Message) { … m.Mention … })  // in order, on the client's goroutine
//	err = c.Start()                                     // connects in the background, for good
//	err = c.WaitRegistered(ctx, 1)
//	err = c.Send("#dev", "line one\nline two")         // one PRIVMSG per line, long lines cut
//	msgs := c.Read("#dev", 20)                         // the bounded buffer
//	ans, err := c.Ask(ctx, "#dev", "ship it?", time.Minute)
//	err = c.Close()                                     // QUIT, stop reconnecting, join goroutines
//
// The client registers its nick, joins its channels on every
// registration, and reconnects after a drop with back-off (doubling from
// MinBackoff to MaxBackoff, reset by a registration), so a server restart
// ends with the client back in its channels. ircevent runs callbacks on
// one goroutine: the client only records there (buffer, pending replies)
// and hands messages to its own dispatch goroutine.
//
// Text is made safe before it is sent: SplitText cuts at line ends and
// drops control characters, so no newline in a message can inject a raw
// command; long lines are cut at spaces within MaxPayload bytes.
// Mentions is the "@nick" rule the daemon prompts on.
//
// Package irctest has a scripted in-process server for fault cases and a
// launcher for Debian's ngircd.
package irc
