package gateway

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/persona"
)

// Errors of the HTTP layer itself.
var (
	errBadBody      = errors.New("request body is not the expected JSON")
	errTooLarge     = errors.New("request body too large")
	errUnauthorized = errors.New("missing or wrong bearer token")
	errBadHost      = errors.New("host not allowed")
	errBadOrigin    = errors.New("origin not allowed")
	errBadAfter     = errors.New("Last-Event-ID / after must be a non-negative integer")
)

// statusOf is the one place an error becomes an HTTP status.
func statusOf(err error) int {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), errors.Is(err, errTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errUnauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, errBadHost), errors.Is(err, errBadOrigin),
		errors.Is(err, harness.ErrRootNotAllowed), errors.Is(err, harness.ErrBypassRefused):
		return http.StatusForbidden
	case errors.Is(err, errBadBody), errors.Is(err, errBadAfter),
		errors.Is(err, harness.ErrInvalidID), errors.Is(err, harness.ErrInvalidMode),
		errors.Is(err, harness.ErrInvalidRoot), errors.Is(err, harness.ErrEmptyMessage),
		errors.Is(err, persona.ErrInvalidID), errors.Is(err, harness.ErrUnknownEngine),
		errors.Is(err, harness.ErrInvalidDecision):
		return http.StatusBadRequest
	case errors.Is(err, harness.ErrNotFound), errors.Is(err, harness.ErrPersonaNotFound),
		errors.Is(err, harness.ErrNotRunning), errors.Is(err, harness.ErrApprovalNotFound):
		return http.StatusNotFound
	case errors.Is(err, harness.ErrBusy), errors.Is(err, harness.ErrApprovalResolved):
		return http.StatusConflict
	case errors.Is(err, harness.ErrClosed), errors.Is(err, engine.ErrBinaryNotFound),
		errors.Is(err, engine.ErrUnavailable), errors.Is(err, engine.ErrBinaryNotFound):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeError answers {"error": "…"} with statusOf(err). Internal errors
// are logged and answered with a generic message.
func (g *Gateway) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		g.log.Error().Err(err).Str("method", r.Method).Str("path", r.URL.Path).Msg("request failed")
	}
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"could not encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
