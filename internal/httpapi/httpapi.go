// Package httpapi is what the harness's HTTP doors (the gateway and
// `harness agent serve`) share behind the guard (package httpguard): the
// one router, the one mapping of the core's errors to HTTP statuses, the
// one reader of a JSON body and the one error answer. The operations both
// doors offer on a session are package gateway/ops. A door keeps only its
// routes and the shapes of its bodies, which its specification fixes
// (gateway/openapi.json; agentserver's package doc).
//
// A door's own request errors are made with BadRequest, so that Status
// maps them without the door mapping anything itself:
//
//	var errBadSeq = httpapi.BadRequest("bad seq")
//	httpapi.Status(fmt.Errorf("%w: toTurn must be positive", errBadSeq)) // 400
package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/chirality/harness"
	"github.com/chirality/harness/checkpoint"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/httpguard"
	"github.com/chirality/harness/internal/sse"
	"github.com/chirality/harness/persona"
	"github.com/chirality/harness/trust"
)

// ErrBadRequest is matched (errors.Is) by every error BadRequest makes:
// the request itself is wrong (400).
var ErrBadRequest = errors.New("bad request")

// BadRequest returns a door's own sentinel for a wrong request: its text
// is text, it is itself (errors.Is with it works as with errors.New) and
// it is ErrBadRequest, so Status answers 400.
func BadRequest(text string) error { return &badRequest{text} }

type badRequest struct{ text string }

func (e *badRequest) Error() string        { return e.text }
func (e *badRequest) Is(target error) bool { return target == ErrBadRequest }

// Status is the one place an error becomes an HTTP status, for every HTTP
// door. The guard's errors (Host, Origin, token, Content-Type, body size
// and time) map as httpguard.Status says; an error nothing here names is
// 500.
func Status(err error) int {
	if s := httpguard.Status(err); s != 0 {
		return s
	}
	switch {
	case errors.Is(err, harness.ErrRootNotAllowed), errors.Is(err, harness.ErrBypassRefused), errors.Is(err, harness.ErrWidens):
		return http.StatusForbidden
	case errors.Is(err, ErrBadRequest),
		errors.Is(err, harness.ErrInvalidID), errors.Is(err, harness.ErrInvalidMode),
		errors.Is(err, harness.ErrInvalidRoot), errors.Is(err, harness.ErrEmptyMessage),
		errors.Is(err, persona.ErrInvalidID), errors.Is(err, harness.ErrUnknownEngine),
		errors.Is(err, harness.ErrInvalidDecision),
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
		errors.Is(err, harness.ErrInvalidPersona), // its file is malformed (a malformed ID is persona.ErrInvalidID: 400)
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
		errors.Is(err, checkpoint.ErrNoGit), errors.Is(err, trust.ErrLocked), errors.Is(err, engine.ErrUnavailable),
		errors.Is(err, harness.ErrSandboxUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// WriteError answers {"error": "…"} with Status(err), the message cut to
// httpguard.MaxMessage bytes (an error that quotes a 100 KB id does not
// send it back). It returns the status.
func WriteError(w http.ResponseWriter, err error) int {
	status := Status(err)
	httpguard.WriteJSON(w, status, map[string]string{"error": httpguard.Clip(err.Error())})
	return status
}

// Decode reads exactly one JSON value from body (bounded by the guard)
// into v, refusing unknown fields (a client cannot smuggle a tool flag
// in). A body that is not that is bad (the door's BadRequest sentinel,
// wrapped with why); the guard's errors (too large, too slow) come back
// as they are.
func Decode(body io.Reader, v any, bad error) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if httpguard.Status(err) != 0 {
			return err
		}
		return fmt.Errorf("%w: %s", bad, httpguard.Clip(err.Error()))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if httpguard.Status(err) != 0 {
			return err
		}
		return fmt.Errorf("%w: more than one JSON value", bad)
	}
	return nil
}

// NewRouter is the router of every HTTP door (gorilla/mux, the gateway's
// route table's): paths are not cleaned (mux would answer an unclean path
// such as ../, %2e%2e or // with a 301 redirect; here it gets the JSON 404
// like any unknown path); an unknown route is 404 {"error": "no such
// route"}, a known path with another method 405 with the Allow header
// that RFC 9110 requires of a 405 (the methods the path has, as the
// standard library's mux said before the doors moved to this router).
func NewRouter() *mux.Router {
	r := mux.NewRouter()
	r.SkipClean(true)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpguard.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "no such route"})
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if allow := allowed(r, req); allow != "" {
			w.Header().Set("Allow", allow)
		}
		httpguard.WriteJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"})
	})
	return r
}

// allowed lists the methods router r serves req's path with ("GET, POST").
func allowed(r *mux.Router, req *http.Request) string {
	var methods []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions} {
		probe := req.Clone(req.Context())
		probe.Method = m
		var match mux.RouteMatch
		if r.Match(probe, &match) && match.MatchErr == nil {
			methods = append(methods, m)
		}
	}
	return strings.Join(methods, ", ")
}
