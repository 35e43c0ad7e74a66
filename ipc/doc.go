// Package ipc is the agent daemon's control socket: JSON Lines over a
// Unix socket at SocketPath(nick) — $XDG_RUNTIME_DIR/harness-<nick>.sock,
// else ~/.harness/run/harness-<nick>.sock (directory 0700) — the one
// function every caller resolves the path with.
//
//	→ {"type":"irc_send","id":"5f0c…","channel":"#dev","message":"done"}
//	← {"type":"whisper","whisper_type":"CORRECTION","message":"run the tests first"}
//	← {"type":"response","id":"5f0c…","ok":true,"data":{…}}
//	← {"type":"response","id":"…","ok":false,"error":"unknown command: \"nope\""}
//
// Commands: irc_send, irc_read, irc_ask, irc_join, irc_part, irc_who,
// irc_channels, irc_topic, compact, clear, status, pause, resume,
// shutdown. Whispers (the supervisor's notes) are queued by the daemon and
// written before the response to the agent's next skill command (the irc_*
// commands, compact and clear), so the skill client prints them on stderr.
// Bad JSON, unknown commands, missing fields, lines over MaxLine and
// handler panics get an error response; a client cannot stop the server.
// A client that hangs up (or closes its writing side) while its request
// runs cancels it, and the whispers its response would have carried wait
// for the next call (ServerConfig.Unsent).
package ipc
