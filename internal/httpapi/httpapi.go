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

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/httpguard"
	"github.com/chirality/harness/internal/sse"
)

// ErrBadRequest is matched (errors.Is) by every error BadRequest makes:
// the request itself is wrong (400). It is engine.ErrInvalid.
var ErrBadRequest = engine.ErrInvalid

// BadRequest returns a door's own sentinel for a wrong request: its text
// is text, it is itself (errors.Is with it works as with errors.New) and
// it is engine.ErrInvalid, so Status answers 400.
func BadRequest(text string) error { return engine.NewError(engine.ErrInvalid, text) }

// Status is the one place an error becomes an HTTP status, for every HTTP
// door. It maps engine's error set (package engine, errors.go): every
// sentinel of the core and its packages is one of it or a kind of one, so
// a new sentinel needs nothing here. The guard's errors (Host, Origin,
// token, Content-Type, body size and time) map as httpguard.Status says;
// an error of no kind is 500.
func Status(err error) int {
	if s := httpguard.Status(err); s != 0 {
		return s
	}
	switch {
	case errors.Is(err, engine.ErrRefused):
		return http.StatusForbidden
	case errors.Is(err, engine.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, engine.ErrFull):
		return http.StatusTooManyRequests
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, engine.ErrNotRunning):
		return http.StatusNotFound
	case errors.Is(err, engine.ErrConflict): // engine.ErrBusy is one
		return http.StatusConflict
	case errors.Is(err, engine.ErrCannot): // engine.ErrUnsupported is one
		// The session cannot do this: its MCP configuration is malformed,
		// its engine lacks the control, or its project is too large for
		// file checkpoints (a property of the project, not of the request:
		// not 413, which is about the request's body).
		return http.StatusUnprocessableEntity
	case errors.Is(err, engine.ErrClosed), errors.Is(err, engine.ErrUnavailable), errors.Is(err, sse.ErrTooManyStreams):
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
