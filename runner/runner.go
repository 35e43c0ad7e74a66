// This file is the contract every runner satisfies; see New for the one
// implementation over the harness core.

package runner

import (
	"context"
	"encoding/json"
	"errors"
)

// Runner is one agent. Callbacks (OnMessage, OnExit) are set before
// Start; they are called from the runner's own goroutine, one at a time,
// and must not block for long.
//
// Lifecycle: Start → running → (Stop | crash) → not running. After a
// crash the owner calls Stop, then Start again with a resume prompt.
type Runner interface {
	// Start establishes the agent (its session; its process where the
	// engine keeps one) and sends initialPrompt as the first prompt when
	// it is not empty. The runner is running when Start returns nil; the
	// session ID is known once the engine established it.
	Start(ctx context.Context, initialPrompt string) error
	// Stop interrupts current work, waits for it, forces it after a
	// timeout (or when ctx ends), leaves the runner not running and
	// calls OnExit(0). Safe to call more than once and when not running.
	Stop(ctx context.Context) error
	// SendPrompt never blocks: while a turn runs the prompt is queued;
	// prompts are processed in the order sent. It fails with
	// ErrNotRunning when the runner is not running.
	SendPrompt(text string) error
	// IsRunning reports whether the runner is started and not crashed
	// or stopped.
	IsRunning() bool
	// SessionID is the harness session ID ("" before Start).
	SessionID() string
	// OnMessage is called with every assistant message the agent
	// produces, tool uses included.
	OnMessage(func(Message))
	// OnExit is called on every exit: 0 clean (Stop), non-zero a crash.
	OnExit(func(code int))
}

// ErrNotRunning is returned by SendPrompt on a runner that is not running.
var ErrNotRunning = errors.New("runner: not running")

// Message is the normalized shape of what an agent said, the same for
// every engine:
//
//	{"type":"assistant","model":"…","content":[{"type":"text","text":"…"},
//	 {"type":"tool_use","id":"…","name":"…","input":{…}},
//	 {"type":"thinking","thinking":"…"}]}
type Message struct {
	Type    string    `json:"type"` // always "assistant"
	Model   string    `json:"model,omitempty"`
	Content []Content `json:"content"`
}

// Content is one block of a Message: Type is "text", "tool_use" or
// "thinking", and only that type's fields are set.
type Content struct {
	Type     string          `json:"type"`
	Text     string          `json:"text,omitempty"`
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name,omitempty"`
	Input    json.RawMessage `json:"input,omitempty"`
	Thinking string          `json:"thinking,omitempty"`
}

// Text returns the message's text blocks joined by newlines.
func (m Message) Text() string {
	s := ""
	for _, c := range m.Content {
		if c.Type == "text" {
			if s != "" {
				s += "\n"
			}
			s += c.Text
		}
	}
	return s
}
