package gateway

import (
	"strings"
	"testing"
)

// A plain server (no serve --node) answers the cluster's routes 404 "not
// a cluster node": GET /nodes and POST /session/{id}/move.
func TestClusterRoutesOnPlainServer(t *testing.T) {
	s := newServer(t, nil)
	id := s.create("", "direct")
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/harness/nodes", ""},
		{"POST", "/api/harness/session/" + id + "/move", `{"node":"b"}`},
	} {
		code, body := s.do(c.method, c.path, c.body, "Content-Type", "application/json")
		if code != 404 || !strings.Contains(body, "not a cluster node") {
			t.Errorf("%s %s: %d %s, want 404 not a cluster node", c.method, c.path, code, body)
		}
	}
}
