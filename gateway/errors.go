package gateway

import (
	"errors"
	"net/http"

	"github.com/chirality/harness"
	"github.com/chirality/harness/checkpoint"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/httpguard"
	"github.com/chirality/harness/internal/sse"
	"github.com/chirality/harness/persona"
	"github.com/chirality/harness/trust"
)

// Errors of the HTTP layer itself.
var (
	errBadBody  = errors.New("request body is not the expected JSON")
	errBadAfter = errors.New("Last-Event-ID / after must be a non-negative integer")
	errBadSeq   = errors.New("bad seq")
)

// statusOf is the one place an error becomes an HTTP status. The guard's
// errors (Host, Origin, token, Content-Type, body size and time) map as
// httpguard.Status says.
func statusOf(err error) int {
	if s := httpguard.Status(err); s != 0 {
		return s
	}
	switch {
	case errors.Is(err, harness.ErrRootNotAllowed), errors.Is(err, harness.ErrBypassRefused), errors.Is(err, harness.ErrWidens):
		return http.StatusForbidden
	case errors.Is(err, errBadBody), errors.Is(err, errBadAfter),
		errors.Is(err, harness.ErrInvalidID), errors.Is(err, harness.ErrInvalidMode),
		errors.Is(err, harness.ErrInvalidRoot), errors.Is(err, harness.ErrEmptyMessage),
		errors.Is(err, persona.ErrInvalidID), errors.Is(err, harness.ErrUnknownEngine),
		errors.Is(err, harness.ErrInvalidDecision), errors.Is(err, errBadSeq),
		errors.Is(err, harness.ErrInvalidPermissionMode), errors.Is(err, harness.ErrInvalidEffort),
		errors.Is(err, harness.ErrInvalidTurnOptions), errors.Is(err, trust.ErrInvalid),
		errors.Is(err, harness.ErrInvalidIsolation), errors.Is(err, harness.ErrInvalidQueueEdit),
		errors.Is(err, harness.ErrInvalidPlanDecision), errors.Is(err, harness.ErrInvalidUsageQuery), errors.Is(err, harness.ErrInvalidBudget):
		return http.StatusBadRequest
	case errors.Is(err, harness.ErrQueueFull):
		return http.StatusTooManyRequests
	case errors.Is(err, harness.ErrNotFound), errors.Is(err, harness.ErrPersonaNotFound),
		errors.Is(err, harness.ErrNotRunning), errors.Is(err, harness.ErrApprovalNotFound),
		errors.Is(err, harness.ErrSeqNotFound), errors.Is(err, trust.ErrNotFound), errors.Is(err, harness.ErrPromptNotFound):
		return http.StatusNotFound
	case errors.Is(err, harness.ErrBusy), errors.Is(err, harness.ErrApprovalResolved), errors.Is(err, trust.ErrStale),
		errors.Is(err, harness.ErrNoTurnToSteer), errors.Is(err, harness.ErrNoPlan),
		errors.Is(err, harness.ErrDirtyTarget), errors.Is(err, harness.ErrMergeConflict), errors.Is(err, harness.ErrUnmerged):
		return http.StatusConflict
	case errors.Is(err, harness.ErrInvalidMCPConfig), errors.Is(err, persona.ErrInvalidPersona), errors.Is(err, trust.ErrTooLarge),
		errors.Is(err, harness.ErrNotGitRepo), errors.Is(err, harness.ErrBaseNotFound), errors.Is(err, harness.ErrNotIsolated),
		errors.Is(err, harness.ErrUnsupported), errors.Is(err, engine.ErrUnsupported),
		errors.Is(err, checkpoint.ErrTooLarge), errors.Is(err, checkpoint.ErrUnsafeStore), errors.Is(err, harness.ErrMessageTooLarge),
		errors.Is(err, harness.ErrBudgetExceeded):
		// The session cannot do this: its MCP configuration is malformed,
		// its engine lacks the control, or its project is too large for
		// file checkpoints (a property of the project, not of the request:
		// not 413, which is about the request's body).
		return http.StatusUnprocessableEntity
	case errors.Is(err, harness.ErrClosed), errors.Is(err, sse.ErrTooManyStreams), errors.Is(err, engine.ErrBinaryNotFound),
		errors.Is(err, checkpoint.ErrNoGit), errors.Is(err, trust.ErrLocked),
		errors.Is(err, engine.ErrUnavailable), errors.Is(err, engine.ErrBinaryNotFound),
		errors.Is(err, harness.ErrSandboxUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeError answers {"error": "…"} with statusOf(err), the message cut
// to httpguard.MaxMessage bytes (an error that quotes a 100 KB id does not
// send it back). Internal errors are logged.
func (g *Gateway) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	msg := httpguard.Clip(err.Error())
	if status == http.StatusInternalServerError {
		g.log.Error().Str("error", msg).Str("method", r.Method).Str("path", httpguard.Clip(r.URL.Path)).Msg("request failed")
	}
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) { httpguard.WriteJSON(w, status, v) }
