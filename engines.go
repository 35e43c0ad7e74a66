package harness

// sessionCloser is an engine that keeps something per session (an ACP
// agent process; Codex's running turn): DeleteSession closes it.
type sessionCloser interface {
	Close(sessionKey string)
}
