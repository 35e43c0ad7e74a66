package tui

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chirality/harness/agentserver"
)

// Event is one event of the agent server's stream (its own type).
type Event = agentserver.Event

// ErrInvalidEvent is matched by every decoding error.
var ErrInvalidEvent = errors.New("tui: invalid event")

// DecodeEvent decodes one data payload strictly: a known type with the
// fields it needs (an unknown type, a missing field or a bad state is an
// error, which the TUI logs and skips).
func DecodeEvent(data []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(data, &ev); err != nil {
		return ev, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	if ev.Timestamp <= 0 {
		return ev, fmt.Errorf("%w: no timestamp", ErrInvalidEvent)
	}
	switch ev.Type {
	case "user", "text", "reasoning", "text_delta", "reasoning_delta":
	case "approval":
		if ev.RequestID == "" || ev.Tool == "" {
			return ev, fmt.Errorf("%w: approval without requestId or tool", ErrInvalidEvent)
		}
	case "approval_resolved":
		if ev.RequestID == "" || (ev.Decision != "allow" && ev.Decision != "deny") {
			return ev, fmt.Errorf("%w: approval_resolved without requestId or with decision %q", ErrInvalidEvent, ev.Decision)
		}
	case "plan":
		if ev.PlanID == "" {
			return ev, fmt.Errorf("%w: plan without planId", ErrInvalidEvent)
		}
	case "plan_resolved":
		if ev.PlanID == "" || (ev.Decision != "approve" && ev.Decision != "revise") {
			return ev, fmt.Errorf("%w: plan_resolved without planId or with decision %q", ErrInvalidEvent, ev.Decision)
		}
	case "tool_call":
		if ev.ID == "" || ev.Name == "" {
			return ev, fmt.Errorf("%w: tool_call without id or name", ErrInvalidEvent)
		}
	case "tool_result":
		if ev.ID == "" || ev.Result == nil || ev.IsError == nil {
			return ev, fmt.Errorf("%w: tool_result without id, result or isError", ErrInvalidEvent)
		}
	case "session":
		if ev.SessionID == "" {
			return ev, fmt.Errorf("%w: session without sessionId", ErrInvalidEvent)
		}
	case "trust":
		if ev.TrustKind == "" || ev.Message == "" {
			return ev, fmt.Errorf("%w: trust without trustKind or message", ErrInvalidEvent)
		}
	case "rewound":
		if ev.Conversation == nil {
			return ev, fmt.Errorf("%w: rewound without conversation", ErrInvalidEvent)
		}
	case "usage":
	case "rate_limit":
		if ev.Limit == "" || ev.UsedPercent == nil {
			return ev, fmt.Errorf("%w: rate_limit without limit or usedPercent", ErrInvalidEvent)
		}
	case "status":
		switch ev.State {
		case "idle", "thinking", "running_tool", "error":
		default:
			return ev, fmt.Errorf("%w: status state %q", ErrInvalidEvent, ev.State)
		}
	default:
		return ev, fmt.Errorf("%w: type %q", ErrInvalidEvent, ev.Type)
	}
	return ev, nil
}
