package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// postJSON posts body to url as JSON; the test fails if it cannot be sent.
func postJSON(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// createSession creates a session on the server at base (POST
// /api/harness/session/create with body) and returns its id; anything but
// 201 fails the test.
func createSession(t *testing.T, base, body string) string {
	t.Helper()
	resp := postJSON(t, base+"/api/harness/session/create", body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var created struct{ Session struct{ ID string } }
	json.Unmarshal(b, &created)
	if resp.StatusCode != 201 || created.Session.ID == "" {
		t.Fatalf("create = %d %s", resp.StatusCode, b)
	}
	return created.Session.ID
}
