// Package web serves the harness web console: static HTML, CSS and
// JavaScript embedded in the binary, so no Node is needed at run time.
//
// The console talks to the gateway at /api/harness/* from the same origin;
// mount Handler on "/" next to the API routes. It never serves anything
// under /api.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
)

//go:embed static
var staticFS embed.FS

// contentTypes fixes the types of the files we ship, independent of the
// host's MIME tables.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".mjs":  "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".json": "application/json",
	".txt":  "text/plain; charset=utf-8",
	".map":  "application/json",
}

// csp allows only this origin's own files: model output rendered as
// markdown cannot load or run anything even if it got past escaping.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

type file struct {
	body  []byte
	ctype string
	etag  string
}

// Handler serves the console: index.html at "/", the other files at their
// names. Every answer carries Cache-Control: no-cache and an ETag, so a new
// binary's files are picked up at once while unchanged ones revalidate with
// a 304. Paths under /api/ and unknown paths are 404.
func Handler() http.Handler {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embed directive guarantees the directory
	}
	files := map[string]file{}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		ct, ok := contentTypes[strings.ToLower(path.Ext(p))]
		if !ok {
			ct = http.DetectContentType(b)
		}
		sum := sha256.Sum256(b)
		files["/"+p] = file{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == "/api" || strings.HasPrefix(p, "/api/") {
			http.NotFound(w, r)
			return
		}
		if p == "/" || p == "" {
			p = "/index.html"
		}
		f, ok := files[p]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.ctype)
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if f.ctype == contentTypes[".html"] {
			h.Set("Content-Security-Policy", csp)
			h.Set("X-Frame-Options", "DENY")
		}
		if etagMatch(r.Header.Get("If-None-Match"), f.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Length", strconv.Itoa(len(f.body)))
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(f.body)
	})
}

func etagMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
