package harness

import (
	"errors"

	"github.com/chirality/harness/engine"
)

// Errors callers branch on with errors.Is. The gateway maps each to one
// HTTP status (see gateway's statusOf); the comment gives it.
var (
	// ErrNotFound: no session of that ID (404).
	ErrNotFound = errors.New("session not found")
	// ErrInvalidID: the session ID is not a canonical UUIDv4; rejected
	// before any file is touched (400).
	ErrInvalidID = errors.New("invalid session id")
	// ErrPersonaNotFound: the persona named does not exist (404).
	ErrPersonaNotFound = errors.New("persona not found")
	// ErrInvalidPersona: the persona ID or its file is malformed (400 for
	// an ID, 500 for a broken file: the persona error says which).
	ErrInvalidPersona = errors.New("invalid persona")
	// ErrInvalidMode: the mode is not workbench, pipeline or direct (400).
	ErrInvalidMode = errors.New("invalid mode")
	// ErrInvalidRoot: the project root is not an absolute path to an
	// existing directory (400).
	ErrInvalidRoot = errors.New("invalid project root")
	// ErrRootNotAllowed: the project root does not resolve inside an
	// allowed root (403). Nothing was written.
	ErrRootNotAllowed = errors.New("project root not allowed")
	// ErrEmptyMessage: a turn needs a non-blank message (400).
	ErrEmptyMessage = errors.New("empty message")
	// ErrBusy: the session already has a running turn (409).
	ErrBusy = errors.New("a turn is already running for this session")
	// ErrNotRunning: the session has no running turn (404 on interrupt).
	ErrNotRunning = errors.New("no turn is running for this session")
	// ErrBypassRefused: the permission mode resolved to
	// bypassPermissions and the operator did not allow it (403).
	ErrBypassRefused = errors.New("permission mode bypassPermissions is not allowed by the server configuration")
	// ErrClosed: the Harness is shutting down (503).
	ErrClosed = errors.New("harness is shutting down")
	// ErrUnknownEngine: no engine of that name is configured (400).
	ErrUnknownEngine = errors.New("unknown engine")
	// ErrNoEngines: New was given no engine.
	ErrNoEngines = errors.New("no engines")
	// ErrInvalidPermissionMode: the permission mode (of the server or a
	// persona) is not one of engine.PermissionModes (400).
	ErrInvalidPermissionMode = errors.New("invalid permission mode")
	// ErrApprovalNotFound: the session has no approval request of that
	// ID (404).
	ErrApprovalNotFound = errors.New("approval request not found")
	// ErrApprovalResolved: the request was already answered, by someone
	// else, a rule, a timeout or the end of its turn (409). The first
	// answer wins, exactly once.
	ErrApprovalResolved = errors.New("approval request already resolved")
	// ErrInvalidMCPConfig: the project's .mcp.json, the server's
	// --mcp-config or the persona's mcp_servers is malformed or names a
	// variable that is not set (422); the error names the file and server.
	ErrInvalidMCPConfig = errors.New("invalid MCP configuration")
	// ErrInvalidDecision: a decision is allow, deny or always (400).
	ErrInvalidDecision = errors.New("invalid decision: want allow, deny or always")
	// ErrSeqNotFound: the session has no turn or event of that seq (404).
	ErrSeqNotFound = errors.New("no such turn or event in this session")
	// ErrUnsupported: the session's engine cannot do that (fork, rewind
	// the conversation) (422). It wraps engine.ErrUnsupported when the
	// engine said so.
	ErrUnsupported = errors.New("not supported by this session's engine")
	// ErrInvalidEffort: an effort level other than low, medium, high or
	// "" (400). It is engine.ErrInvalidEffort.
	ErrInvalidEffort = engine.ErrInvalidEffort
)
