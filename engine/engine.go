// Package engine is the seam between the harness core and the agents it
// runs. An Engine starts turns; a Turn is one turn's stream of UI events
// (package event) with the means to stop it. The Claude Code driver
// (package claudecode), the native Messages API loop (package native) and
// the Codex and ACP clients each implement it; the root package harness
// runs every session through it and never knows which agent answers.
//
//	t, err := eng.StartTurn(ctx, engine.Request{SessionKey: id, Message: "hi", Cwd: root})
//	if err != nil { … }
//	defer t.Close()
//	for t.Next() {
//		ev := t.Event() // session:init first … exactly one process:exit last
//	}
//	err = t.Err() // nil when the turn completed
//
// # One context rule (every engine)
//
// The ctx of StartTurn bounds the start only: a turn that started stops
// by its own end, Turn.Interrupt, Turn.Kill or Engine.Shutdown, never
// because the ctx it was started with is done (package engines' exit
// table tests it on every engine). A caller that wants a deadline on a
// turn calls Interrupt or Kill when it passes.
//
// # The stream contract (every engine)
//
// A turn's stream is: one session:init (when the agent got that far), any
// number of chat:delta, thinking:delta, chat:complete, tool:start,
// tool:result (a tool:start exactly once per tool use, before its result),
// then exactly one of session:complete or session:error, then exactly one
// process:exit, always last. process:exit is the end-of-turn event of every
// engine, with or without a child process per turn, and means the same on
// each (TurnExit builds it): Code is 0 exactly when the turn completed;
// a failed, interrupted or killed turn, or one whose agent failed to
// start, has the process's non-zero status, -1 with the Signal when a
// signal ended it, else 1.
//
// Approval events (approval:requested, approval:resolved) are not an
// engine's: the engine calls Request.Approver and the core publishes them.
package engine

import (
	"context"
	"encoding/json"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/mcpconfig"
)

// The engine names sessions store and clients send.
const (
	ClaudeCode = "claude-code" // the Claude Code CLI (package claudecode); the default
	Anthropic  = "anthropic"   // the native loop on the Messages API (package native)
)

// Engine runs turns of one kind of agent. Implementations are safe for
// concurrent use; at most one turn runs per Request.SessionKey.
type Engine interface {
	// Name is the engine's name as sessions store it (ClaudeCode, …).
	Name() string
	// StartTurn starts one turn and returns its stream as soon as the
	// agent runs. ctx bounds the start only: a ctx done before the turn
	// starts is its error, and once StartTurn returned, cancelling ctx
	// changes nothing; the turn runs until it ends, Turn.Interrupt or
	// Turn.Kill stops it, or Shutdown (the core's rule, package harness).
	// It fails with ErrBusy while the key has a running turn, ErrClosed
	// after Shutdown, and the engine's own start errors (a missing binary,
	// a missing key…).
	StartTurn(ctx context.Context, req Request) (Turn, error)
	// Check says whether the engine can run here and, when not, why.
	Check(ctx context.Context) Status
	// Shutdown refuses new turns, interrupts the running ones and waits
	// for them; when ctx is done first it kills what is left. Consumers
	// must keep reading their turns for them to finish. Safe to call more
	// than once.
	Shutdown(ctx context.Context) error
}

// Turn is one running turn. Next, Event and Err are for one consumer
// goroutine; Interrupt, Kill and Close may be called from any goroutine,
// more than once, also after the turn ended.
type Turn interface {
	// Next advances to the next event, blocking until there is one; it
	// returns false after process:exit.
	Next() bool
	// Event returns the event Next advanced to.
	Event() event.Event
	// Err returns, once Next returned false, nil when the turn completed
	// and how it ended otherwise.
	Err() error
	// Interrupt asks the agent to stop the turn; the stream then ends
	// with a session:error of kind interrupted. It returns at once.
	Interrupt() error
	// Kill stops the turn now. It returns at once.
	Kill() error
	// Close kills the turn if it still runs and discards what is left of
	// the stream, returning once the turn's goroutines have ended.
	Close() error
}

// ScrubbedTurn is a Turn whose engine passes every event through the
// process's scrubber (internal/secrets.Events, deltas included) before
// Next returns it, when EventsScrubbed reports true. The core then does
// not scrub its events a second time on the way to a reader that only
// prints them (an ephemeral Harness.StartTurn: `harness turn`); its Err is still
// scrubbed. Claude Code's turns are: their driver scrubs as it maps.
type ScrubbedTurn interface {
	Turn
	EventsScrubbed() bool
}

// Request is everything a turn is started with. The core builds it from
// the session, its persona and the server's policy; the client has no
// say in it. Engines map what they support and document what they do not.
type Request struct {
	// SessionKey is the harness session ID; every event carries it.
	SessionKey string
	// Message is the user's prompt.
	Message string
	// Cwd is the project root the agent works in.
	Cwd string
	// Resume is the engine's conversation to continue: what a previous
	// turn's session:init reported (SessionInit.ConversationID). "" starts
	// a new one.
	Resume string
	// Fork: the turn continues a copy of Resume's conversation (cut at
	// ResumeAt when set); the original conversation is left as it was.
	// The copy's id comes in session:init as always. Engines that cannot
	// fork refuse the turn with an error wrapping ErrUnsupported.
	Fork bool
	// ResumeAt: continue Resume's conversation only up to and including
	// the turn whose session:complete reported this Checkpoint; "" = all
	// of it. Engines that cannot cut refuse the turn with an error
	// wrapping ErrUnsupported (with a clear text).
	ResumeAt string
	// SystemPrompt is the persona prompt; SystemPromptFile the same text
	// saved to disk (the Claude Code CLI reads the file).
	SystemPrompt     string
	SystemPromptFile string
	// PromptChanged says that SystemPrompt is not the one Resume's
	// conversation was last given (a persona switched between turns).
	// An engine whose agent keeps a resumed conversation's first system
	// prompt carries the new one in the turn's message (Claude Code);
	// one that sends the prompt with every request ignores it.
	PromptChanged bool
	// Model is the persona's model ("" = the engine's default).
	Model string
	// PermissionMode is one of default, acceptEdits, plan, dontAsk,
	// bypassPermissions ("" = dontAsk semantics for engines of ours).
	PermissionMode string
	// MaxTurns bounds the agentic loop (0 = the engine's default).
	MaxTurns int
	// Effort is how hard the model thinks: "" (the engine's default) or
	// one of EffortLevels. Engines map it onto their agent's setting or
	// ignore it where the agent has none (see EffortLevels).
	Effort string
	// Tools is the set of tools that exist for the model: nil = the
	// engine's default, empty = none. DisallowedTools are removed.
	// AllowedTools are approved without asking (they restrict nothing).
	Tools, DisallowedTools, AllowedTools []string
	// MCP is the session's MCP servers, variables expanded (nil = none).
	// Each engine hands them to its agent its own way and names their
	// tools mcpconfig.ToolName in its events. Their env and header values
	// are secrets: the core has registered them with the scrubber, and an
	// engine writes them only to private files it removes.
	MCP *mcpconfig.Config
	// Env entries (KEY=VALUE) are added to a child's environment.
	Env []string
	// StateDir is where an engine may keep this session's own state (the
	// native loop's history); it is removed with the session.
	StateDir string
	// Protected are the paths no tool may write unless a person allows
	// that one use, whatever a rule or the permission mode says (package
	// internal/protect: absolute, symlinks followed, a directory ending in
	// a separator). The core fills it; nil = protect.Paths(Cwd). Each
	// engine starts its agent so that it asks before such a write, or
	// denies it where nobody is asked (see each engine's package doc).
	Protected []string
	// Sandbox: the agent's process and everything it starts run in the
	// kernel sandbox (package sandbox): they may write only the workdir
	// (Cwd, minus Protected), the agent's own state directories and a
	// private temporary directory. An engine that cannot sandbox its
	// agent, or a kernel without Landlock, refuses the turn with an error
	// wrapping sandbox.ErrUnavailable (or ErrUnsupported): never an
	// unsandboxed run.
	Sandbox bool
	// OpenNetwork leaves a sandboxed agent's TCP open. Without it (the
	// default) the sandbox also limits the agent's TCP connections to the
	// ports of its model API, its proxy and the session's HTTP MCP
	// servers, and binds to none (see sandbox.NetOf), where the
	// kernel has network rules.
	OpenNetwork bool
	// SandboxWritable are more paths a sandboxed agent may write (package
	// sandbox's Spec.Writable form): what a worktree session's agent
	// needs to commit on its branch (worktree.Grants), filled by the core.
	SandboxWritable []string
	// Approver, when set, is asked before a tool runs that no rule
	// allows; nil means nothing asks (what no rule allows is denied).
	Approver Approver
	// Logger receives the engine's logs for this turn (nil = none).
	Logger *zerolog.Logger
}

// Approver decides whether a tool may run. The core implements it: it
// publishes approval:requested, waits for a person (or a rule, a timeout,
// an interrupt) and publishes approval:resolved.
type Approver interface {
	// Ask blocks until the request is decided. Cancelling ctx denies it.
	// Engines call it from a goroutine of their own, never from the one
	// that reads the agent's output, and only once every event that
	// precedes the question in the agent's stream has been returned by
	// Turn.Next (so approval:requested never overtakes the tool:start it
	// is about).
	Ask(ctx context.Context, req ApprovalRequest) ApprovalDecision
}

// ApprovalRequest is an agent's question: may this tool run with this
// input?
type ApprovalRequest struct {
	ToolUseID string
	ToolName  string
	Input     json.RawMessage
	// Suggestions are the rules an "always allow" would add, in the
	// agent's own form (Claude's permission_suggestions); may be nil.
	Suggestions json.RawMessage
	// Next, for the tool that ends a plan: the engine's turn ends when
	// the plan is approved, and Next is the message that carries it out
	// as the session's next turn (the core queues it; Codex). "" = the
	// agent goes on in the same turn (Claude Code).
	Next string
	// Unsandboxed is set by an engine whose agent may run the use
	// outside its sandbox once allowed, or widen it (every Codex command:
	// an escalation need not say so; a file change asking for a root or
	// more access): the core says so to the person and never lets a
	// rule or an earlier "always" allow it, nor remembers a rule for it.
	Unsandboxed bool
}

// ApprovalDecision is the answer.
type ApprovalDecision struct {
	Allow bool
	// Message is what the model sees when denied.
	Message string
	// UpdatedInput replaces the tool's input when allowed (nil = as asked).
	UpdatedInput json.RawMessage
	// Always is set when the user chose "always allow" (the core then
	// resolves matching requests itself; an engine may pass it on).
	Always bool
	// NoAnswer is set when no person answered (the deadline passed, the
	// turn was interrupted or is ending): Allow is then false. An engine
	// that would otherwise go on by itself on a denial (Codex's plan
	// review: another planning turn) stops instead.
	NoAnswer bool
}

// Status is one engine's entry of GET /api/harness/engines.
type Status struct {
	Name string `json:"name"`
	// Kind is the implementation: claude-code, anthropic, codex, acp.
	Kind      string `json:"kind"`
	Available bool   `json:"available"`
	// Reason says what is missing and how to get it, when not available.
	Reason  string `json:"reason,omitempty" doc:"what is missing and how to get it"`
	Version string `json:"version,omitempty"`
	// Controls are the conversation controls the engine supports (filled
	// by the core from Controller; all false for other engines).
	Controls Controls `json:"controls" oa:"optional" doc:"the conversation controls this engine supports"`
}

// Controls says which conversation controls an engine supports.
type Controls struct {
	Fork   bool `json:"fork" doc:"POST /session/{id}/fork works"`                                                                   // Request.Fork works
	Rewind bool `json:"rewind" doc:"POST /session/{id}/rewind with conversation:true works (files can be rewound on every engine)"` // Request.ResumeAt works
	// Steer: a running turn takes a message (Steerer; filled from
	// SteerCapable by ControlsOf).
	Steer bool `json:"steer" doc:"POST /session/{id}/steer works: a running turn takes a message"`
}

// Controller is implemented by engines that support any conversation
// control; an engine that does not implement it supports none.
type Controller interface {
	Controls() Controls
}

// Forker is implemented by an engine that can copy a conversation at
// once, outside a turn. The core uses it for an engine that cannot cut a
// conversation (Controls.Rewind false: an ACP agent's session/fork copies
// a whole session), so that a fork is pinned when it is made: a turn the
// source runs before the fork's first turn is not in the copy.
type Forker interface {
	// ForkNow copies req.Resume's conversation into a new one, which
	// req.SessionKey's next turn continues (Request.Resume, without Fork),
	// and returns the new conversation's id. req is what that turn would
	// be started with (Message unused). It fails like StartTurn.
	ForkNow(ctx context.Context, req Request) (string, error)
}

// ControlsOf returns e's controls: what its Controls says, else none.
func ControlsOf(e Engine) Controls {
	var c Controls
	if ctl, ok := e.(Controller); ok {
		c = ctl.Controls()
	}
	c.Steer = Steers(e)
	return c
}

// AsksApproval reports whether a turn in permission mode asks a person
// before a tool runs (when an Approver is set): default, acceptEdits and
// plan do; dontAsk and bypassPermissions never do.
func AsksApproval(mode string) bool {
	switch mode {
	case "default", "acceptEdits", "plan":
		return true
	}
	return false
}

// Prestarter is an Engine that can start a turn's agent before its
// message is known, so the message is answered without the agent's
// start-up cost (warm turns). The core owns the policy (which sessions,
// how many, how long); the engine only offers the operation.
type Prestarter interface {
	Engine
	// Prestart starts the agent for req (req.Message is ignored; a
	// non-nil req.Approver only says that the turn will ask, the real
	// one comes with Warm.Start). The process waits for its message.
	Prestart(ctx context.Context, req Request) (Warm, error)
}

// Warm is an agent started ahead by Prestart, waiting for its message.
// It must end in exactly one of Start (it becomes an ordinary turn) or
// Stop. Its methods are safe for concurrent use.
type Warm interface {
	// Matches reports whether a turn of req would be started exactly as
	// this agent was (same flags, environment and system prompt content):
	// only then may it run that turn.
	Matches(req Request) bool
	// Alive reports whether the agent is still waiting (not dead).
	Alive() bool
	// Start hands the agent its message (req.Message, with req.Approver)
	// and returns the turn, which from then on is like any other. It
	// fails with ErrBusy if the session key already has a turn, and with
	// an error when the agent died meanwhile; the Warm is then stopped.
	Start(req Request) (Turn, error)
	// Stop ends the agent and waits for it to go. Safe to call more than
	// once and after Start (then it does nothing).
	Stop()
	// Pid is the agent's process id (0 when it has none).
	Pid() int
}

// TurnError is how a turn that did not complete ended, for engines
// without an error type of their own (Turn.Err). Kind is the kind of the
// turn's session:error.
type TurnError struct {
	Kind    event.ErrorKind
	Message string
}

func (e *TurnError) Error() string { return "turn failed (" + string(e.Kind) + "): " + e.Message }

// Steerer is a Turn that can take a person's message while it runs
// (steering): the agent sees it at its next step of the turn (its next
// model request), not as a turn of its own. Steer returns once the agent
// has the message; it fails with ErrNotRunning when the turn is past
// taking one (its end has begun) and with an error wrapping
// ErrUnsupported when this turn's agent cannot take one (an ACP agent
// that does not advertise steering).
type Steerer interface {
	Steer(ctx context.Context, message string) error
}

// SteerCapable is implemented by an engine whose turns are Steerers.
// Steers reports whether they can take a message at all (false: every
// Steer fails with ErrUnsupported); the core lists the engines that do
// when a person steers a turn of one that does not.
type SteerCapable interface {
	Steers() bool
}

// Steers reports whether e's turns can be steered.
func Steers(e Engine) bool {
	s, ok := e.(SteerCapable)
	return ok && s.Steers()
}
