package httpguard_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/chirality/harness/internal/httpguard"
)

// A door puts its routes behind one Guard and serves them with Server's
// timeouts. Its handlers read r.Body as usual: reading past MaxBody or
// after BodyTimeout fails with an error httpguard.Status maps (413, 408).
func Example() {
	routes := http.NewServeMux()
	routes.HandleFunc("POST /prompt", func(w http.ResponseWriter, r *http.Request) {
		var buf strings.Builder
		if _, err := io.Copy(&buf, r.Body); err != nil {
			httpguard.WriteError(w, r, err)
			return
		}
		httpguard.WriteJSON(w, http.StatusOK, map[string]bool{"accepted": true})
	})
	g, err := httpguard.New(httpguard.Config{
		Addr:  "127.0.0.1:8788",
		Token: "a-token-of-sixteen-or-more",
		// WriteError: the door's own error writer, to keep one error shape.
	})
	if err != nil {
		panic(err)
	}
	srv := httpguard.Server(g.Wrap(routes)) // then srv.Serve(listener)

	// What a page on another site sends is refused before any route runs.
	req := httptest.NewRequest("POST", "http://127.0.0.1:8788/prompt", strings.NewReader(`{"content":"rm -rf ~"}`))
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Content-Type", "text/plain")
	w := httptest.NewRecorder()
	srv.Handler.ServeHTTP(w, req)
	fmt.Print(w.Code, " ", w.Body.String())
	// Output: 403 {"error":"origin not allowed: \"https://evil.example\""}
}
