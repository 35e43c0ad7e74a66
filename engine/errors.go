package engine

import "errors"

// The harness's one error set: what a caller branches on across packages.
// An engine returns these (wrapped with %w for context); the core's errors
// that mean the same are these (harness.ErrBusy is ErrBusy); and every
// other sentinel a caller may meet at a door is made with NewError as a
// kind of one of them, so that each door maps this set once (the HTTP
// doors in internal/httpapi.Status, JSON-RPC in rpc's errorOf, MCP in
// mcpserver's toolError) and a new sentinel needs no door changed.
//
// An error that only one format's parser returns stays in its package,
// of no kind (a door answers it as an internal error).
var (
	// ErrBusy: the session already has a running turn (or another
	// operation holds it) (409; JSON-RPC TurnBusy). It is ErrConflict.
	ErrBusy = NewError(ErrConflict, "a turn is already running for this session")
	// ErrClosed: shut down; nothing new starts (503).
	ErrClosed = errors.New("shutting down")
	// ErrNotRunning: no turn is running, or the turn is past what was
	// asked (404; JSON-RPC TurnNotFound).
	ErrNotRunning = errors.New("no turn is running for this session")
	// ErrUnsupported: the engine cannot do what the request asks (fork,
	// rewind, steer); the error's text says what (422). It is ErrCannot.
	ErrUnsupported = NewError(ErrCannot, "not supported by this engine")
	// ErrUnavailable: the engine cannot run here (missing binary or key);
	// the error's text says what is missing (503).
	ErrUnavailable = errors.New("not available")
	// ErrApprovalNotFound: no approval request of that ID (404; JSON-RPC
	// ApprovalNotFound). It is ErrNotFound.
	ErrApprovalNotFound = NewError(ErrNotFound, "approval request not found")
	// ErrApprovalResolved: the request was already answered, by someone
	// else, a rule, a timeout or the end of its turn: the first answer
	// wins, exactly once (409). It is ErrConflict.
	ErrApprovalResolved = NewError(ErrConflict, "approval request already resolved")
)

// The kinds: what a door maps. A caller that needs the particular case
// branches on its sentinel (harness.ErrSeqNotFound); a door on its kind.
var (
	// ErrInvalid: the request itself is malformed (400; JSON-RPC
	// InvalidParams).
	ErrInvalid = errors.New("invalid request")
	// ErrRefused: the request is well-formed but what an operator set up
	// does not allow it (a root outside the allowed ones, a bypass the
	// server refuses, an override that widens) (403).
	ErrRefused = errors.New("not allowed")
	// ErrNotFound: no such thing (session, persona, turn, prompt) (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the state of the session does not allow it now (a turn
	// runs, an answer came first, a merge conflicts) (409).
	ErrConflict = errors.New("conflict")
	// ErrFull: a bound is reached; retry later (429).
	ErrFull = errors.New("full")
	// ErrCannot: the session, its project or its configuration cannot do
	// this as it is (an engine without the control, a malformed MCP
	// configuration, a project too large to snapshot) (422).
	ErrCannot = errors.New("cannot be done")
)

// NewError returns a sentinel of kind: its text is text, it is itself
// (errors.Is with it works as with errors.New), and it is kind, and what
// kind is (errors.Is(NewError(ErrBusy, "x"), ErrConflict) holds).
func NewError(kind error, text string) error { return &kindError{text: text, kind: kind} }

type kindError struct {
	text string
	kind error
}

func (e *kindError) Error() string        { return e.text }
func (e *kindError) Is(target error) bool { return errors.Is(e.kind, target) }
