package codex

import "time"

// SetOnMessage installs a hook that sees every message the app-server
// sends (tests record the protocol's shapes with it).
func SetOnMessage(e *Engine, f func(Message)) { e.onMsg = f }

// SetMCPStartupWait changes Config.MCPStartupWait of a running engine.
func SetMCPStartupWait(e *Engine, d time.Duration) { e.cfg.MCPStartupWait = d }
