package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// harness nodes move posts {node} to the session's move route and prints
// the answer, or the node's error and exit 1.
func TestNodesMove(t *testing.T) {
	const id = "0b6e2a6e-0d2b-4d57-9d2c-6c1e9f3a1c11"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req struct {
			Node string `json:"node"`
		}
		if r.Method != "POST" || r.URL.Path != "/api/harness/session/"+id+"/move" || json.Unmarshal(b, &req) != nil || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "bad request "+r.URL.Path+" "+string(b), 400)
			return
		}
		if req.Node == "c" {
			w.WriteHeader(422)
			w.Write([]byte(`{"error":"node c cannot use the project root"}`))
			return
		}
		w.Write([]byte(`{"sessionId":"` + id + `","from":"a","node":"` + req.Node + `","lastSeq":12}`))
	}))
	defer srv.Close()
	var out, stderr bytes.Buffer
	c := &cli{stdout: &out, stderr: &stderr}
	if code := c.run([]string{"nodes", "move", id, "b", "--url", srv.URL, "--token", "tok"}); code != 0 || !strings.Contains(out.String(), "moved from a to b (events up to seq 12)") {
		t.Errorf("move to b: exit %d, %q %q", code, out.String(), stderr.String())
	}
	out.Reset()
	if code := c.run([]string{"nodes", "move", id, "c", "--url", srv.URL, "--token", "tok"}); code != 1 || !strings.Contains(stderr.String(), "422") || !strings.Contains(stderr.String(), "cannot use the project root") {
		t.Errorf("move to c: exit %d, %q %q", code, out.String(), stderr.String())
	}
}
