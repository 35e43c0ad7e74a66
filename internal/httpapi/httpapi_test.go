package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/checkpoint"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/httpguard"
	"github.com/chirality/harness/internal/sse"
	"github.com/chirality/harness/persona"
	"github.com/chirality/harness/session"
	"github.com/chirality/harness/trust"
)

var errDoor = BadRequest("the door's own")

func TestBadRequest(t *testing.T) {
	err := fmt.Errorf("%w: why", errDoor)
	if !errors.Is(err, errDoor) || !errors.Is(err, ErrBadRequest) || errors.Is(err, BadRequest("the door's own")) {
		t.Fatalf("BadRequest: is itself and ErrBadRequest, not another with its text: %v", err)
	}
	if err.Error() != "the door's own: why" {
		t.Fatalf("text %q", err.Error())
	}
}

// One mapping for both doors; where they differed (a malformed persona
// file: 400 at agent serve, 422 at the gateway) it is the gateway's.
func TestStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("%w: x", errDoor), 400},
		{harness.ErrBusy, 409},
		{harness.ErrNotFound, 404},
		{httpguard.ErrTooLarge, 413},
		{fmt.Errorf("%w: %w", harness.ErrInvalidPersona, persona.ErrInvalidID), 400},
		{fmt.Errorf("%w: %w", harness.ErrInvalidPersona, persona.ErrInvalidPersona), 422},
		{errors.New("boom"), 500},
	} {
		if got := Status(errors.Join(errors.New("ctx"), c.err)); got != c.want {
			t.Errorf("Status(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// Every sentinel a door meets maps to the status it had when Status named
// each one; now Status names only engine's error set, and the sentinels
// are its kinds.
func TestStatusOfEverySentinel(t *testing.T) {
	for want, errs := range map[int][]error{
		403: {harness.ErrRootNotAllowed, harness.ErrBypassRefused, harness.ErrWidens, engine.ErrRefused},
		400: {ErrBadRequest, harness.ErrInvalidID, harness.ErrInvalidMode, harness.ErrInvalidRoot, harness.ErrEmptyMessage,
			persona.ErrInvalidID, harness.ErrUnknownEngine, harness.ErrInvalidDecision, harness.ErrInvalidPermissionMode,
			harness.ErrInvalidEffort, engine.ErrInvalidEffort, harness.ErrInvalidTurnOptions, trust.ErrInvalid, harness.ErrInvalidIsolation,
			harness.ErrInvalidQueueEdit, harness.ErrInvalidPlanDecision, harness.ErrInvalidUsageQuery, harness.ErrInvalidBudget,
			session.ErrInvalidID, engine.ErrInvalid},
		429: {harness.ErrQueueFull, engine.ErrFull},
		404: {harness.ErrNotFound, session.ErrNotFound, harness.ErrPersonaNotFound, persona.ErrNotFound, &persona.NotFoundError{ID: "x"},
			harness.ErrNotRunning, engine.ErrNotRunning, harness.ErrApprovalNotFound, harness.ErrSeqNotFound, trust.ErrNotFound,
			harness.ErrPromptNotFound, engine.ErrNotFound},
		409: {harness.ErrBusy, engine.ErrBusy, harness.ErrApprovalResolved, trust.ErrStale, harness.ErrNoTurnToSteer, harness.ErrNoPlan,
			harness.ErrDirtyTarget, harness.ErrMergeConflict, &harness.MergeConflictError{}, harness.ErrUnmerged, harness.ErrWorktreeTampered,
			engine.ErrConflict},
		422: {harness.ErrInvalidMCPConfig, persona.ErrInvalidPersona, &persona.ParseError{}, trust.ErrTooLarge,
			harness.ErrInvalidPersona, harness.ErrNotGitRepo, harness.ErrBaseNotFound, harness.ErrNotIsolated,
			harness.ErrUnsupported, engine.ErrUnsupported, harness.ErrSteerUnsupported, checkpoint.ErrTooLarge, &checkpoint.LimitError{},
			checkpoint.ErrUnsafeStore, harness.ErrMessageTooLarge, harness.ErrBudgetExceeded, engine.ErrCannot},
		503: {harness.ErrClosed, engine.ErrClosed, session.ErrClosed, sse.ErrTooManyStreams, engine.ErrBinaryNotFound, &engine.BinaryNotFoundError{Name: "x"},
			checkpoint.ErrNoGit, trust.ErrLocked, engine.ErrUnavailable, harness.ErrSandboxUnavailable},
		500: {errors.New("boom"), session.ErrCorrupt, harness.ErrNoEngines},
	} {
		for _, err := range errs {
			for _, e := range []error{err, fmt.Errorf("context: %w", err), fmt.Errorf("a: %w", fmt.Errorf("b: %w", err))} {
				if got := Status(e); got != want {
					t.Errorf("Status(%v) = %d, want %d", e, got, want)
				}
			}
		}
	}
}

func TestDecode(t *testing.T) {
	type body struct {
		A int `json:"a"`
	}
	var v body
	if err := Decode(strings.NewReader(` {"a": 1} `), &v, errDoor); err != nil || v.A != 1 {
		t.Fatalf("one object: %v %+v", err, v)
	}
	for _, in := range []string{`{"a":1}{"a":2}`, `{"b":1}`, `{"a":"x"}`, `[]`, ``, `{`} {
		err := Decode(strings.NewReader(in), &body{}, errDoor)
		if !errors.Is(err, errDoor) || Status(err) != 400 {
			t.Errorf("Decode(%q) = %v, want the door's bad request", in, err)
		}
	}
}

func TestWriteError(t *testing.T) {
	w := httptest.NewRecorder()
	long := strings.Repeat("x", 100<<10)
	if got := WriteError(w, fmt.Errorf("%w: %s", harness.ErrNotFound, long)); got != 404 || w.Code != 404 {
		t.Fatalf("status %d %d", got, w.Code)
	}
	if w.Body.Len() > 2*httpguard.MaxMessage || !strings.HasPrefix(w.Body.String(), `{"error":"session not found`) {
		t.Fatalf("body (%d bytes) %.80s", w.Body.Len(), w.Body.String())
	}
}

// The doors' one router: an unknown route and an unclean path are the
// JSON 404 (no redirect), a known path with another method the JSON 405
// with its Allow header (RFC 9110: a 405 must say what the path allows).
func TestNewRouter(t *testing.T) {
	r := NewRouter()
	r.HandleFunc("/events", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }).Methods(http.MethodGet)
	r.HandleFunc("/rewind", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }).Methods(http.MethodGet)
	r.HandleFunc("/rewind", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }).Methods(http.MethodPost)
	for _, c := range []struct {
		method, path string
		want         int
		body, allow  string
	}{
		{"GET", "/events", http.StatusTeapot, "", ""},
		{"POST", "/events", http.StatusMethodNotAllowed, `{"error":"method not allowed"}`, "GET"},
		{"DELETE", "/rewind", http.StatusMethodNotAllowed, `{"error":"method not allowed"}`, "GET, POST"},
		{"GET", "/nope", http.StatusNotFound, `{"error":"no such route"}`, ""},
		{"GET", "/x/../events", http.StatusNotFound, `{"error":"no such route"}`, ""},
		{"GET", "//events", http.StatusNotFound, `{"error":"no such route"}`, ""},
	} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(c.method, "http://localhost"+c.path, nil))
		if w.Code != c.want || strings.TrimSpace(w.Body.String()) != c.body {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.path, w.Code, w.Body.String(), c.want, c.body)
		}
		if got := w.Header().Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}
}
