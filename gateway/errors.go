package gateway

import (
	"net/http"

	"github.com/chirality/harness/internal/httpapi"
	"github.com/chirality/harness/internal/httpguard"
)

// Errors of the HTTP layer itself (400, as httpapi.BadRequest makes them).
var (
	errBadBody  = httpapi.BadRequest("request body is not the expected JSON")
	errBadAfter = httpapi.BadRequest("Last-Event-ID / after must be a non-negative integer")
	errBadSeq   = httpapi.BadRequest("bad seq")
)

// statusOf maps an error to its HTTP status: the HTTP doors' one mapping
// (httpapi.Status), shared with `harness agent serve`.
func statusOf(err error) int { return httpapi.Status(err) }

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
