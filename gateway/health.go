package gateway

import (
	"context"
	"net/http"
	"time"
)

// health reports every engine's availability (GET /engines' list) and
// ok when the server's default engine is available (harness.Health).
func (g *Gateway) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	writeJSON(w, http.StatusOK, g.h.Health(ctx))
}
