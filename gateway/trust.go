package gateway

import (
	"fmt"
	"net/http"

	"github.com/chirality/harness/trust"
)

// trustList answers GET /trust?projectRoot=…: what waits for a person's
// trust in the project (persona files whose grants widened, with the
// change of each grant; project MCP servers nobody trusted). recordError
// says why the record could not be read (then nothing in it is trusted).
func (g *Gateway) trustList(w http.ResponseWriter, r *http.Request) {
	root := r.URL.Query().Get("projectRoot")
	if root == "" {
		g.writeError(w, r, fmt.Errorf("%w: projectRoot is required", errBadBody))
		return
	}
	items, err := g.h.PendingTrust(root)
	if items == nil {
		if err != nil {
			g.writeError(w, r, err)
			return
		}
		items = []trust.Item{}
	}
	body := trustListJSON{Items: items}
	if err != nil {
		body.RecordError = err.Error()
	}
	writeJSON(w, http.StatusOK, body)
}

type trustRequest struct {
	ProjectRoot string `json:"projectRoot" oa:"required"`
	Kind        string `json:"kind" oa:"enum=persona|mcp,required"`
	Name        string `json:"name" doc:"the persona ID or the server name (name or path is required)"`
	Path        string `json:"path" doc:"the persona file"`
	Hash        string `json:"hash" oa:"required" doc:"the hash the person was shown"`
}

// trustAccept answers POST /trust: a person trusts a persona file or a
// project MCP server as it is now (hash: what they were shown; 409 when
// it changed since).
func (g *Gateway) trustAccept(w http.ResponseWriter, r *http.Request) {
	var req trustRequest
	if err := decodeBody(r, &req); err != nil {
		g.writeError(w, r, err)
		return
	}
	if req.ProjectRoot == "" {
		g.writeError(w, r, fmt.Errorf("%w: projectRoot is required", errBadBody))
		return
	}
	it, err := g.ops.AcceptTrust(req.ProjectRoot, req.Kind, req.Name, req.Path, req.Hash)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, trustAcceptedJSON{Trusted: it})
}
