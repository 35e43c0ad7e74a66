// Package event is the one UI event model of the harness. Every engine
// (the Claude Code driver in package claudecode, the native Messages API
// loop in package native, and the others) produces Events; every front door
// (the gateway's SSE, `harness turn --json`, the JSON-RPC door, the agent
// server) consumes them. Nothing here knows about processes or HTTP.
//
// An Event is a discriminated union on Type with a flat camelCase JSON
// form, {"type":"chat:delta","sessionId":"…","text":"…"}; AppendJSON writes
// it without reflection (it is on the hot path) and UnmarshalJSON reads it
// back. A Type this package does not know is kept (Type and the common
// fields), never an error.
package event
