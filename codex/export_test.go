package codex

// SetOnMessage installs a hook that sees every message the app-server
// sends (tests record the protocol's shapes with it).
func SetOnMessage(e *Engine, f func(Message)) { e.onMsg = f }
