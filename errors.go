package harness

import (
	"errors"

	"github.com/chirality/harness/engine"
)

// Errors callers branch on with errors.Is. Each is one of engine's error
// set or a kind of one (engine.NewError), which is what a door maps, once
// (internal/httpapi.Status for HTTP); the comment gives the HTTP status.
var (
	// ErrNotFound: no session of that ID (404).
	ErrNotFound = engine.NewError(engine.ErrNotFound, "session not found")
	// ErrInvalidID: the session ID is not a canonical UUIDv4; rejected
	// before any file is touched (400).
	ErrInvalidID = engine.NewError(engine.ErrInvalid, "invalid session id")
	// ErrPersonaNotFound: the persona named does not exist (404).
	ErrPersonaNotFound = engine.NewError(engine.ErrNotFound, "persona not found")
	// ErrInvalidPersona: the persona ID or its file is malformed (400 for
	// an ID, 500 for a broken file: the persona error says which).
	ErrInvalidPersona = engine.NewError(engine.ErrCannot, "invalid persona")
	// ErrInvalidMode: the mode is not workbench, pipeline or direct (400).
	ErrInvalidMode = engine.NewError(engine.ErrInvalid, "invalid mode")
	// ErrInvalidRoot: the project root is not an absolute path to an
	// existing directory (400).
	ErrInvalidRoot = engine.NewError(engine.ErrInvalid, "invalid project root")
	// ErrRootNotAllowed: the project root does not resolve inside an
	// allowed root (403). Nothing was written.
	ErrRootNotAllowed = engine.NewError(engine.ErrRefused, "project root not allowed")
	// ErrEmptyMessage: a turn needs a non-blank message (400).
	ErrEmptyMessage = engine.NewError(engine.ErrInvalid, "empty message")
	// ErrBusy: the session already has a running turn (409).
	ErrBusy = engine.ErrBusy
	// ErrNotRunning: the session has no running turn (404 on interrupt).
	ErrNotRunning = engine.ErrNotRunning
	// ErrBypassRefused: the permission mode resolved to
	// bypassPermissions and the operator did not allow it (403).
	ErrBypassRefused = engine.NewError(engine.ErrRefused, "permission mode bypassPermissions is not allowed by the server configuration")
	// ErrClosed: the Harness is shutting down (503).
	ErrClosed = engine.ErrClosed
	// ErrUnknownEngine: no engine of that name is configured (400).
	ErrUnknownEngine = engine.NewError(engine.ErrInvalid, "unknown engine")
	// ErrNoEngines: New was given no engine.
	ErrNoEngines = errors.New("no engines")
	// ErrInvalidPermissionMode: the permission mode (of the server or a
	// persona) is not one of engine.PermissionModes (400).
	ErrInvalidPermissionMode = engine.NewError(engine.ErrInvalid, "invalid permission mode")
	// ErrApprovalNotFound: the session has no approval request of that
	// ID (404).
	ErrApprovalNotFound = engine.ErrApprovalNotFound
	// ErrApprovalResolved: the request was already answered, by someone
	// else, a rule, a timeout or the end of its turn (409). The first
	// answer wins, exactly once.
	ErrApprovalResolved = engine.ErrApprovalResolved
	// ErrInvalidMCPConfig: the project's .mcp.json, the server's
	// --mcp-config or the persona's mcp_servers is malformed or names a
	// variable that is not set (422); the error names the file and server.
	ErrInvalidMCPConfig = engine.NewError(engine.ErrCannot, "invalid MCP configuration")
	// ErrInvalidDecision: a decision is allow, deny or always (400).
	ErrInvalidDecision = engine.NewError(engine.ErrInvalid, "invalid decision: want allow, deny or always")
	// ErrSeqNotFound: the session has no turn or event of that seq (404).
	ErrSeqNotFound = engine.NewError(engine.ErrNotFound, "no such turn or event in this session")
	// ErrUnsupported: the session's engine cannot do that (fork, rewind
	// the conversation) (422). It is engine.ErrUnsupported.
	ErrUnsupported = engine.ErrUnsupported
	// ErrInvalidEffort: an effort level other than low, medium, high or
	// "" (400). It is engine.ErrInvalidEffort.
	ErrInvalidEffort = engine.ErrInvalidEffort
)
