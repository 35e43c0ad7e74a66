package gateway

import (
	"fmt"
	"net/http"

	"github.com/chirality/harness"
	"github.com/chirality/harness/usage"
)

// UsageResponse is the body of GET /api/harness/usage: the totals of the
// sessions' turns, their groups when by is given, and the latest state
// of each rate limit.
type UsageResponse = usage.Report

// usage answers GET /api/harness/usage?by=session|engine|model|day&since=…&projectRoot=…
// since is RFC 3339 or a date (YYYY-MM-DD, UTC).
func (g *Gateway) usage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	uq := harness.UsageQuery{By: q.Get("by"), ProjectRoot: q.Get("projectRoot")}
	if s := q.Get("since"); s != "" {
		t, err := usage.ParseSince(s)
		if err != nil {
			g.writeError(w, r, fmt.Errorf("%w: %v", harness.ErrInvalidUsageQuery, err))
			return
		}
		uq.Since = t
	}
	rep, err := g.h.Usage(uq)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, UsageResponse(rep))
}

// setBudget sets session id's budget when b is given; false when it
// answered with an error.
func (g *Gateway) setBudget(w http.ResponseWriter, r *http.Request, id string, b *harness.Budget) bool {
	if b == nil {
		return true
	}
	if err := g.h.SetBudget(id, *b); err != nil {
		g.writeError(w, r, err)
		return false
	}
	return true
}
