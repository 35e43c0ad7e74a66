package event

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Type names a UI event. The values are the wire names the GUI sees.
type Type string

// The UI events of a turn. A turn's stream is, in order: one session:init
// (when the CLI got that far), any number of deltas, tool starts, tool
// results and chat:complete, then exactly one of session:complete or
// session:error, then exactly one process:exit, always last.
const (
	TypeSessionInit     Type = "session:init"
	TypeChatDelta       Type = "chat:delta"
	TypeThinkingDelta   Type = "thinking:delta"
	TypeChatComplete    Type = "chat:complete"
	TypeToolStart       Type = "tool:start"
	TypeToolResult      Type = "tool:result"
	TypeSessionComplete Type = "session:complete"
	TypeSessionError    Type = "session:error"
	TypeProcessExit     Type = "process:exit"
	// TypeSessionRetry says the engine is retrying the model API after a
	// failed request: it may come any number of times before the turn's
	// end and ends nothing itself.
	TypeSessionRetry Type = "session:retry"

	// Events of the core, not of an engine: user:message opens every
	// harness turn (before session:init); approval events bracket a
	// person's decision on a tool use.
	TypeUserMessage       Type = "user:message"
	TypeApprovalRequested Type = "approval:requested"
	TypeApprovalResolved  Type = "approval:resolved"
	// Conversation control events of the core, outside any turn:
	// session:forked is the first event of a fork's own (after the
	// records copied from its source); session:rewound says a rewind
	// happened (nothing is deleted from the log).
	TypeSessionForked  Type = "session:forked"
	TypeSessionRewound Type = "session:rewound"
	// TypeTrustRequired says what a turn refused to honour until a
	// person trusts it (a persona file's widened grants, a project MCP
	// server, session rules no person gave): it comes after user:message,
	// before the engine starts, once per thing, and ends nothing.
	TypeTrustRequired Type = "trust:required"
	// Prompt queue events of the core (a session's server-side queue):
	// prompt:queued says a prompt was queued behind the running turn;
	// prompt:dequeued says it left the queue, to start its turn (the
	// first event of that turn, before its user:message) or because a
	// person deleted it. Neither ends anything.
	TypePromptQueued   Type = "prompt:queued"
	TypePromptDequeued Type = "prompt:dequeued"
	// Plan review events of the core (inside a turn): plan:ready says an
	// agent ended a plan (Claude Code's ExitPlanMode, Codex's plan) and
	// waits for a person; plan:resolved says what was decided (approve: the agent
	// goes on, the session's next turns run in Mode; revise: Feedback
	// goes back and it keeps planning), or that nobody did in time.
	TypePlanReady    Type = "plan:ready"
	TypePlanResolved Type = "plan:resolved"
	// Usage and limit events (extensions, issue 33): usage:update is
	// what one model call (or a part of a turn) used, as a delta: every
	// engine reports it, the core turns running totals into deltas and
	// prices what the engine did not price. rate_limit is an account
	// limit's state as the engine learned it. Neither ends anything.
	TypeUsageUpdate Type = "usage:update"
	TypeRateLimit   Type = "rate_limit"
)

// Types are the event types a door may receive (the wire schema's enum of
// type; add a new type here too).
var Types = []Type{
	TypeUserMessage, TypeSessionInit, TypeChatDelta, TypeThinkingDelta, TypeChatComplete,
	TypeToolStart, TypeToolResult, TypeSessionComplete, TypeSessionError, TypeSessionRetry,
	TypeProcessExit, TypeApprovalRequested, TypeApprovalResolved, TypeSessionForked,
	TypeSessionRewound, TypeTrustRequired, TypePromptQueued, TypePromptDequeued,
	TypePlanReady, TypePlanResolved, TypeUsageUpdate, TypeRateLimit,
}

// Event is one UI event: a discriminated union on Type. Text is set for
// chat:delta, thinking:delta and chat:complete; exactly one of the pointer
// fields is set for the other types:
//
//	session:init      Init
//	tool:start        ToolStart
//	tool:result       ToolResult
//	session:complete  Complete
//	session:error     Error
//	process:exit      Exit
//	session:retry     Retry
//	approval:requested  Approval
//	approval:resolved   Resolved
//	session:forked    Forked
//	session:rewound   Rewound
//	trust:required    Trust
//	prompt:queued     Queued
//	prompt:dequeued   Dequeued
//	plan:ready        PlanReady
//	plan:resolved     PlanResolved
//	usage:update      Usage
//	rate_limit        RateLimit
//
// user:message carries Text.
//
// Its JSON form (see MarshalJSON) is flat and camelCase, the shape the GUI
// consumes: {"type":"chat:delta","sessionId":"…","text":"…"}.
type Event struct {
	Type Type
	// SessionID is the caller's session key given to StartTurn, never
	// the engine's own conversation id (that is Init.ConversationID).
	SessionID string
	// ParentToolUseID is set on events that came from a subagent: the id
	// of the Task tool use that spawned it.
	ParentToolUseID string

	Text       string
	Init       *SessionInit
	ToolStart  *ToolStart
	ToolResult *ToolResult
	Complete   *SessionComplete
	Error      *SessionError
	Exit       *ProcessExit
	Approval   *ApprovalRequested
	Resolved   *ApprovalResolved
	Retry      *SessionRetry
	Forked     *SessionForked
	Rewound    *SessionRewound
	Trust      *TrustRequired
	Queued     *PromptQueued
	Dequeued   *PromptDequeued
	// PlanReady and PlanResolved are the plan review's payloads.
	PlanReady    *PlanReady
	PlanResolved *PlanResolved
	Usage        *UsageUpdate
	RateLimit    *RateLimit

	// Time is when the event happened, in Unix milliseconds: the core
	// stamps it once, as it stores the event, so every reader and every
	// replay of the log sees the same time. 0 (an engine's event not yet
	// stored, a log written before events had it) is left out of the JSON.
	Time int64
}

// TrustRequired is the payload of trust:required. Kind is persona (Path:
// the file, Name: its ID, Changes: the widened grants, run with the
// trusted ones meanwhile), mcp (Name: a project .mcp.json server, not
// started) or rules (Rules: the session file's rules that no person
// gave, not honoured). Hash is what a person accepts (POST
// /api/harness/trust, `harness trust accept`); Message says it in a
// sentence.
type TrustRequired struct {
	Kind    string        `json:"kind" oa:"enum=persona|mcp|session,open"`
	Name    string        `json:"name,omitempty"`
	Path    string        `json:"path,omitempty" doc:"trust:required: the persona or session file"`
	Hash    string        `json:"hash,omitempty" doc:"trust:required: what POST /trust accepts"`
	Changes []TrustChange `json:"changes,omitempty" doc:"trust:required: the grants that widened"`
	Rules   []string      `json:"rules,omitempty" doc:"trust:required (session): the session file's rules no person gave"`
	Message string        `json:"message"`
}

// PromptQueued is the payload of prompt:queued: prompt PromptID was
// queued at Position (0 = next to run) with Message.
type PromptQueued struct {
	PromptID string `json:"promptId" doc:"prompt:queued, prompt:dequeued"`
	Position int    `json:"position" doc:"prompt:queued"`
	Message  string `json:"message"`
}

// Reasons a prompt leaves a session's queue (PromptDequeued.Reason).
const (
	DequeuedStarted = "started" // its turn starts
	DequeuedDeleted = "deleted" // a person deleted it
	DequeuedFailed  = "failed"  // its turn could not start (Error says why)
)

// PromptDequeued is the payload of prompt:dequeued: prompt PromptID left
// the queue for Reason (started, deleted, failed).
type PromptDequeued struct {
	PromptID string `json:"promptId"`
	Reason   string `json:"reason" oa:"enum=started|deleted|failed,open" doc:"prompt:dequeued"`
	Error    string `json:"error,omitempty"`
}

// PlanReady is the payload of plan:ready: the agent's plan, as markdown,
// waits for a person's decision (POST /session/{id}/plan) until
// ExpiresAt (RFC 3339); ToolUseID is the tool use that ended the plan.
type PlanReady struct {
	PlanID    string `json:"planId"`
	Plan      string `json:"plan"`
	ToolUseID string `json:"toolUseId,omitempty"`
	ExpiresAt string `json:"expiresAt"`
}

// Plan review decisions (PlanResolved.Decision).
const (
	PlanApprove = "approve"
	PlanRevise  = "revise"
)

// PlanResolved is the payload of plan:resolved: Decision is PlanApprove
// (Mode: what the session's next turns run in) or PlanRevise (Feedback
// went back to the agent); By says who decided (ByUser, ByTimeout,
// ByInterrupt, ByShutdown: only a person approves).
type PlanResolved struct {
	PlanID   string `json:"planId"`
	Decision string `json:"decision"`
	Mode     string `json:"mode,omitempty"`
	Feedback string `json:"feedback,omitempty"`
	By       string `json:"by"`
}

// TrustChange is one widened grant: the frontmatter key, what a person
// trusted and what the file says now.
type TrustChange struct {
	Field   string `json:"field" doc:"the frontmatter key (tools, disallowed_tools, auto_approve_tools, permission_mode, engine, mcp_servers) or the session field (persona, permissionMode, engine)"`
	Trusted string `json:"trusted"`
	Now     string `json:"now"`
}

// SessionForked is the payload of session:forked: this session was forked
// from session From, keeping its conversation up to and including the
// turn that holds event AtSeq (0 = all of it).
type SessionForked struct {
	From  string `json:"from" doc:"session:forked: the source session"`
	AtSeq int64  `json:"atSeq" oa:"min=0" doc:"session:forked: the seq the fork was cut at, 0 = the whole conversation"`
}

// SessionRewound is the payload of session:rewound: the session went back
// to before the turn opened by the user:message of seq ToTurn. Files are
// the project paths restored (empty when files were not rewound);
// Conversation says whether the conversation was cut there.
type SessionRewound struct {
	ToTurn       int64    `json:"toTurn" oa:"min=1" doc:"session:rewound: the user:message seq of the first turn undone"`
	Files        []string `json:"files" oa:"nullable" doc:"session:rewound: the project paths restored"`
	Conversation bool     `json:"conversation" doc:"session:rewound: the conversation was cut"`
}

// SessionInit is the payload of session:init.
type SessionInit struct {
	// ConversationID is the engine's own id of the conversation, which a
	// later turn resumes: Claude Code's session_id, a Codex thread, an
	// ACP session, the native loop's history. Its JSON name is the
	// specification's claudeSessionId for every engine (Engine says
	// whose); an event stored before there was one name has
	// engineSessionId for engines other than Claude Code, and reads the
	// same (UnmarshalJSON).
	ConversationID string   `json:"claudeSessionId" doc:"the engine's own conversation id, which a later turn resumes (Claude Code's session_id, a Codex thread, an ACP session): the one name for every engine, engine says whose"`
	Model          string   `json:"model"`
	Tools          []string `json:"tools"`
	// CLIVersion is the claude_code_version the CLI reported.
	CLIVersion     string `json:"cliVersion,omitempty"`
	PermissionMode string `json:"permissionMode,omitempty"`
	Cwd            string `json:"cwd,omitempty"`
	// Engine names the engine that runs the turn; empty from the Claude
	// Code driver.
	Engine string `json:"engine,omitempty"`
	// MCPServers is the status of each MCP server the turn was given, as
	// far as the engine knows it at the turn's start (omitted when none).
	MCPServers []MCPServerStatus `json:"mcpServers,omitempty"`
}

// MCPServerStatus is one MCP server's state at a turn's start.
type MCPServerStatus struct {
	Name string `json:"name"`
	// Status is connected, failed, or pending (still starting), or the
	// agent's own word when it has another.
	Status string `json:"status" doc:"connected, failed or pending (or the agent's own word)"`
	// Error says why a failed server failed, when the engine knows.
	Error string `json:"error,omitempty"`
}

// UnmarshalJSON reads session:init's payload, old ones too: before the
// one name, an engine other than Claude Code wrote its conversation id as
// engineSessionId (and claudeSessionId empty).
func (s *SessionInit) UnmarshalJSON(data []byte) error {
	type plain SessionInit // without this method
	var w struct {
		plain
		Old string `json:"engineSessionId"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*s = SessionInit(w.plain)
	if s.ConversationID == "" {
		s.ConversationID = w.Old
	}
	return nil
}

// ApprovalRequested is the payload of approval:requested: an agent asks
// whether a tool may run. RequestID is unique in the session.
type ApprovalRequested struct {
	RequestID string          `json:"requestId"`
	ToolUseID string          `json:"toolUseId"`
	ToolName  string          `json:"toolName"`
	Input     json.RawMessage `json:"input" oa:"object"`
	// Suggestions are the agent's own proposals for an "always allow"
	// (Claude's permission_suggestions), or null: information only, the
	// core never stores them.
	Suggestions json.RawMessage `json:"suggestions" doc:"the agent's own proposals for an \"always allow\" (Claude's permission_suggestions), or null: information only, never stored"`
	// Rule is what an "always" answer remembers for the rest of the
	// session: this use exactly (permrule.Exact), never wider than what
	// the person sees. Empty when the use cannot be remembered.
	Rule string `json:"rule,omitempty" doc:"what an \"always\" answer remembers for the session: this use exactly (e.g. Bash(npm test)); absent when the use cannot be remembered"`
	// ExpiresAt is when the request is denied by timeout (RFC 3339).
	ExpiresAt string `json:"expiresAt" oa:"format=date-time"`
	// Unsandboxed: once allowed, the use may run outside the agent's
	// sandbox (engine.ApprovalRequest.Unsandboxed), so protected paths
	// and the sandbox's other limits may not hold for it. No rule allows
	// it and "always" allows it once, remembering nothing.
	Unsandboxed bool `json:"unsandboxed,omitempty" doc:"true when the use, once allowed, may run outside the agent's sandbox or widen it (every Codex command: Codex may run one outside its sandbox without its request saying so; a Codex file change asking for a root or more access): no rule allows it and \"always\" allows it once, remembering nothing"`
}

// Decisions and deciders of approval:resolved.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"

	ByUser      = "user"
	ByRule      = "rule"
	ByTimeout   = "timeout"
	ByInterrupt = "interrupt"
	ByShutdown  = "shutdown"
)

// ApprovalResolved is the payload of approval:resolved.
type ApprovalResolved struct {
	RequestID string `json:"requestId"`
	// Decision is DecisionAllow or DecisionDeny; By says who decided.
	Decision string `json:"decision" oa:"enum=allow|deny"`
	By       string `json:"by" oa:"enum=user|rule|timeout|interrupt|shutdown,open"`
	Message  string `json:"message,omitempty"`
}

// ToolStart is the payload of tool:start; Input is the tool's complete
// input object.
type ToolStart struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input" oa:"object,nullable"`
}

// ToolResult is the payload of tool:result; Content is flattened to text.
type ToolResult struct {
	ToolUseID string `json:"toolUseId"`
	Content   string `json:"content"`
	IsError   bool   `json:"isError"`
}

// SessionComplete is the payload of session:complete.
type SessionComplete struct {
	// CostUSD is the CLI's total_cost_usd for the turn's process.
	CostUSD float64 `json:"costUsd"`
	// Usage is the CLI's usage object, as sent.
	Usage      json.RawMessage `json:"usage" oa:"object,nullable"`
	NumTurns   int             `json:"numTurns"`
	DurationMS int64           `json:"durationMs"`
	// Checkpoint is the engine's opaque position in its conversation
	// after this turn, for Request.ResumeAt (Claude Code: the last
	// assistant message's uuid; native: the history's length). Engines
	// that support rewinding set it on every completed turn.
	Checkpoint string `json:"checkpoint,omitempty" doc:"session:complete: the engine's position in its conversation after the turn"`
}

// ErrorKind classifies a session:error so a GUI (and errors.Is) can tell an
// interruption from a failure.
type ErrorKind string

const (
	ErrorInterrupted    ErrorKind = "interrupted"      // the turn was stopped on request
	ErrorMaxTurns       ErrorKind = "max_turns"        // --max-turns reached
	ErrorMaxBudget      ErrorKind = "max_budget"       // --max-budget-usd reached
	ErrorAPI            ErrorKind = "api_error"        // the Messages API answered with an error
	ErrorNotLoggedIn    ErrorKind = "not_logged_in"    // no usable credentials
	ErrorResumeNotFound ErrorKind = "resume_not_found" // --resume named a conversation the CLI no longer has
	ErrorExecution      ErrorKind = "execution"        // any other error result from the CLI
	ErrorKilled         ErrorKind = "killed"           // Kill or a cancelled context ended the turn
	ErrorProcess        ErrorKind = "process"          // the CLI died or was killed without a result
	ErrorStart          ErrorKind = "start"            // the CLI could not be started
	ErrorBudgetExceeded ErrorKind = "budget_exceeded"  // the session's budget was spent (extension, issue 33)
)

// ErrorKinds are the values of ErrorKind (the wire schema's enum).
var ErrorKinds = []ErrorKind{
	ErrorInterrupted, ErrorMaxTurns, ErrorMaxBudget, ErrorAPI, ErrorNotLoggedIn,
	ErrorResumeNotFound, ErrorExecution, ErrorKilled, ErrorProcess, ErrorStart,
}

// SessionError is the payload of session:error.
type SessionError struct {
	// Error is a one-line human-readable description.
	Error string    `json:"error"`
	Kind  ErrorKind `json:"kind" oa:"open"`
	// Subtype is the CLI result's subtype, when a result arrived.
	Subtype string `json:"subtype,omitempty"`
	// APIErrorStatus is the HTTP status of an API error, when known.
	APIErrorStatus int `json:"apiErrorStatus,omitempty"`
	// ExitCode and StderrTail are set when the process ended without a
	// result.
	ExitCode   *int   `json:"exitCode,omitempty"`
	StderrTail string `json:"stderrTail,omitempty"`
	// CostUSD is what the turn cost before it failed.
	CostUSD float64 `json:"costUsd,omitempty"`
	// Budget is set on kind budget_exceeded: which budget, what was spent.
	Budget *BudgetInfo `json:"budget,omitempty"`
}

// SessionRetry is the payload of session:retry: a request to the model API
// failed and the engine will send it again after DelayMS (0 when the
// engine does not say: Codex). Attempt counts the retries from 1;
// MaxRetries is the engine's limit (0 when it does not say). Error is a short description of the failure, never a secret (the
// engines scrub it with ScrubRetryError); APIErrorStatus is the HTTP status
// when the API answered (0 when it could not be reached).
type SessionRetry struct {
	Attempt        int    `json:"attempt" oa:"min=1" doc:"session:retry: the retry's number, from 1"`
	MaxRetries     int    `json:"maxRetries" oa:"min=0" doc:"session:retry: the engine's limit, 0 when it does not say"`
	DelayMS        int64  `json:"delayMs" oa:"min=0" doc:"session:retry: the wait before the request is sent again"`
	Error          string `json:"error"`
	APIErrorStatus int    `json:"apiErrorStatus,omitempty"`
}

// MaxRetryError is the longest Error a SessionRetry carries (bytes).
const MaxRetryError = 200

// RetryErrorText makes an engine's description of a failed request fit
// SessionRetry.Error: one line, at most MaxRetryError bytes (cut at a rune
// boundary, "…" appended), each of secrets (values of 4 bytes or more)
// replaced with [REDACTED]. Empty text becomes "unknown error".
func RetryErrorText(text string, secrets ...string) string {
	for _, v := range secrets {
		if len(v) >= 4 {
			text = strings.ReplaceAll(text, v, "[REDACTED]")
		}
	}
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > MaxRetryError {
		cut := MaxRetryError
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "…"
	}
	if text == "" {
		return "unknown error"
	}
	return text
}

// Summary is the one line every door shows for a retry:
// "Retrying 3/10 in 4 s — API unreachable" (the status in parentheses
// when the API answered: "overloaded (HTTP 529)").
func (r *SessionRetry) Summary() string {
	b := make([]byte, 0, 64+len(r.Error))
	b = append(b, "Retrying "...)
	b = strconv.AppendInt(b, int64(r.Attempt), 10)
	if r.MaxRetries > 0 {
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(r.MaxRetries), 10)
	}
	switch {
	case r.DelayMS <= 0: // the engine does not say
	case r.DelayMS < 1000:
		b = append(b, " in "...)
		b = strconv.AppendFloat(b, float64(r.DelayMS)/1000, 'f', 1, 64)
		b = append(b, " s"...)
	default:
		b = append(b, " in "...)
		b = strconv.AppendInt(b, (r.DelayMS+500)/1000, 10)
		b = append(b, " s"...)
	}
	b = append(b, " — "...)
	b = append(b, r.Error...)
	if r.APIErrorStatus != 0 {
		b = append(b, " (HTTP "...)
		b = strconv.AppendInt(b, int64(r.APIErrorStatus), 10)
		b = append(b, ')')
	}
	return string(b)
}

// ProcessExit is the payload of process:exit. Code is -1 when the process
// was ended by a signal, which Signal then names ("SIGKILL"); without one
// the wire form has "signal": null (004: signal: string | null).
type ProcessExit struct {
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty" oa:"nullable" doc:"process:exit: the signal that ended the process, null when none"`
}

// MarshalJSON writes the flat wire form. It is hand-written because it is
// on the hot path (one call per streamed token in `harness turn --json` and
// the gateway) and encoding/json's reflection costs several times more.
func (e Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 128+len(e.Text))), nil
}

// AppendJSON appends the event's JSON form to b.
func (e Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, string(e.Type))
	b = append(b, `,"sessionId":`...)
	b = appendString(b, e.SessionID)
	if e.ParentToolUseID != "" {
		b = append(b, `,"parentToolUseId":`...)
		b = appendString(b, e.ParentToolUseID)
	}
	switch e.Type {
	case TypeChatDelta, TypeThinkingDelta, TypeChatComplete, TypeUserMessage:
		b = append(b, `,"text":`...)
		b = appendString(b, e.Text)
	}
	var payload any
	switch {
	case e.Init != nil:
		payload = e.Init
	case e.ToolStart != nil:
		payload = e.ToolStart
	case e.ToolResult != nil:
		payload = e.ToolResult
	case e.Complete != nil:
		payload = e.Complete
	case e.Error != nil:
		payload = e.Error
	case e.Approval != nil:
		payload = e.Approval
	case e.Resolved != nil:
		payload = e.Resolved
	case e.Retry != nil:
		payload = e.Retry
	case e.Forked != nil:
		payload = e.Forked
	case e.Rewound != nil:
		payload = e.Rewound
	case e.Trust != nil:
		payload = e.Trust
	case e.Queued != nil:
		payload = e.Queued
	case e.Dequeued != nil:
		payload = e.Dequeued
	case e.PlanReady != nil:
		payload = e.PlanReady
	case e.PlanResolved != nil:
		payload = e.PlanResolved
	case e.Usage != nil:
		payload = e.Usage
	case e.RateLimit != nil:
		payload = e.RateLimit
	case e.Exit != nil:
		b = append(b, `,"code":`...)
		b = strconv.AppendInt(b, int64(e.Exit.Code), 10)
		b = append(b, `,"signal":`...)
		if e.Exit.Signal != "" {
			b = appendString(b, e.Exit.Signal)
		} else {
			b = append(b, "null"...)
		}
	}
	if payload != nil {
		if inner, err := json.Marshal(payload); err == nil && len(inner) > 2 {
			b = append(b, ',')
			b = append(b, inner[1:len(inner)-1]...) // splice the object's fields in
		}
	}
	if e.Time != 0 {
		b = append(b, `,"timestamp":`...)
		b = strconv.AppendInt(b, e.Time, 10)
	}
	return append(b, '}')
}

// UnmarshalJSON reads the flat wire form back, so stored event logs and
// SSE streams can be decoded into Events.
func (e *Event) UnmarshalJSON(data []byte) error {
	var head struct {
		Type            Type   `json:"type"`
		SessionID       string `json:"sessionId"`
		ParentToolUseID string `json:"parentToolUseId"`
		Text            string `json:"text"`
		Time            int64  `json:"timestamp"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return err
	}
	*e = Event{Type: head.Type, SessionID: head.SessionID, ParentToolUseID: head.ParentToolUseID, Text: head.Text, Time: head.Time}
	var target any
	switch e.Type {
	case TypeSessionInit:
		e.Init = new(SessionInit)
		target = e.Init
	case TypeToolStart:
		e.ToolStart = new(ToolStart)
		target = e.ToolStart
	case TypeToolResult:
		e.ToolResult = new(ToolResult)
		target = e.ToolResult
	case TypeSessionComplete:
		e.Complete = new(SessionComplete)
		target = e.Complete
	case TypeSessionError:
		e.Error = new(SessionError)
		target = e.Error
	case TypeProcessExit:
		e.Exit = new(ProcessExit)
		target = e.Exit
	case TypeApprovalRequested:
		e.Approval = new(ApprovalRequested)
		target = e.Approval
	case TypeApprovalResolved:
		e.Resolved = new(ApprovalResolved)
		target = e.Resolved
	case TypeSessionRetry:
		e.Retry = new(SessionRetry)
		target = e.Retry
	case TypeSessionForked:
		e.Forked = new(SessionForked)
		target = e.Forked
	case TypeSessionRewound:
		e.Rewound = new(SessionRewound)
		target = e.Rewound
	case TypeTrustRequired:
		e.Trust = new(TrustRequired)
		target = e.Trust
	case TypePromptQueued:
		e.Queued = new(PromptQueued)
		target = e.Queued
	case TypePromptDequeued:
		e.Dequeued = new(PromptDequeued)
		target = e.Dequeued
	case TypePlanReady:
		e.PlanReady = new(PlanReady)
		target = e.PlanReady
	case TypePlanResolved:
		e.PlanResolved = new(PlanResolved)
		target = e.PlanResolved
	case TypeUsageUpdate:
		e.Usage = new(UsageUpdate)
		target = e.Usage
	case TypeRateLimit:
		e.RateLimit = new(RateLimit)
		target = e.RateLimit
	default:
		return nil
	}
	return json.Unmarshal(data, target)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Like encoding/json it escapes
// <, > and & (the output may land in HTML) and U+2028/U+2029, and replaces
// invalid UTF-8 with U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
