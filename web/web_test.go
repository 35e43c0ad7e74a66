package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestIndex(t *testing.T) {
	h := Handler()
	res := get(t, h, "GET", "/", nil)
	if res.StatusCode != 200 {
		t.Fatalf("GET /: %d", res.StatusCode)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("Cache-Control = %q", cc)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	b := body(t, res)
	for _, want := range []string{"<!doctype html>", `src="app.js"`, `data-testid="message-input"`} {
		if !strings.Contains(b, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	// /index.html is the same file.
	if b2 := body(t, get(t, h, "GET", "/index.html", nil)); b2 != b {
		t.Error("/index.html differs from /")
	}
}

func TestAssets(t *testing.T) {
	h := Handler()
	for path, ct := range map[string]string{
		"/app.js":        "text/javascript; charset=utf-8",
		"/api.js":        "text/javascript; charset=utf-8",
		"/sse.js":        "text/javascript; charset=utf-8",
		"/markdown.js":   "text/javascript; charset=utf-8",
		"/transcript.js": "text/javascript; charset=utf-8",
		"/style.css":     "text/css; charset=utf-8",
		"/favicon.svg":   "image/svg+xml",
	} {
		res := get(t, h, "GET", path, nil)
		if res.StatusCode != 200 {
			t.Errorf("GET %s: %d", path, res.StatusCode)
			continue
		}
		if got := res.Header.Get("Content-Type"); got != ct {
			t.Errorf("GET %s: Content-Type %q, want %q", path, got, ct)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
		if len(body(t, res)) == 0 {
			t.Errorf("GET %s: empty body", path)
		}
	}
}

func TestNotFound(t *testing.T) {
	h := Handler()
	for _, path := range []string{
		"/nope.js", "/static/app.js", "/api", "/api/harness/health", "/api/harness/session/list",
		"/../web.go", "/index.html/", "/app.js/x",
	} {
		if res := get(t, h, "GET", path, nil); res.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", path, res.StatusCode)
		}
	}
}

func TestMethodsAndRevalidation(t *testing.T) {
	h := Handler()
	if res := get(t, h, "POST", "/", nil); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d", res.StatusCode)
	}
	head := get(t, h, "HEAD", "/app.js", nil)
	if head.StatusCode != 200 || head.Header.Get("Content-Length") == "0" || body(t, head) != "" {
		t.Errorf("HEAD /app.js: %d, length %q", head.StatusCode, head.Header.Get("Content-Length"))
	}
	etag := get(t, h, "GET", "/app.js", nil).Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if res := get(t, h, "GET", "/app.js", map[string]string{"If-None-Match": etag}); res.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", res.StatusCode)
	}
	if res := get(t, h, "GET", "/app.js", map[string]string{"If-None-Match": `"other"`}); res.StatusCode != 200 {
		t.Errorf("stale If-None-Match: %d, want 200", res.StatusCode)
	}
}

// Issue 34.6: the console's heading is about every engine it drives, not
// Claude Code alone.
func TestIndexHeading(t *testing.T) {
	page := body(t, get(t, Handler(), "GET", "/", nil))
	if strings.Contains(page, "Claude Code, in the browser") || !strings.Contains(page, "<h1>Coding agents, in the browser</h1>") {
		t.Errorf("the welcome heading names one engine:\n%s", page)
	}
}
