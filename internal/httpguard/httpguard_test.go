package httpguard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// echo reads the body (answering a guard error as the doors do) and says
// how many bytes it got; /slow waits after reading to show the request
// context survives the body deadline.
func echo(timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			WriteError(w, r, err)
			return
		}
		if r.URL.Path == "/slow" {
			select {
			case <-r.Context().Done():
				WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": "request context ended: " + context.Cause(r.Context()).Error()})
				return
			case <-time.After(3 * timeout):
			}
		}
		WriteJSON(w, http.StatusOK, map[string]int64{"read": n})
	})
}

func newGuarded(t *testing.T, cfg Config) *httptest.Server {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(g.Wrap(echo(cfg.BodyTimeout)))
	srv.Config.ReadHeaderTimeout = DefaultReadHeaderTimeout
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestAttacks sends what a hostile page or client would and checks each is
// refused with its status before the handler runs.
func TestAttacks(t *testing.T) {
	srv := newGuarded(t, Config{
		Token:        "0123456789abcdef-token",
		AllowOrigins: []string{"https://console.example.com"},
		AllowHosts:   []string{"harness.internal"},
		MaxBody:      256,
		NeedsToken:   func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/api/") },
	})
	auth := "Bearer 0123456789abcdef-token"
	json := "application/json"
	big := strings.Repeat("a", 300)
	cases := []struct {
		name, method, path, body string
		header                   []string
		want                     int
	}{
		{"no token", "GET", "/api/x", "", nil, 401},
		{"no token on an unknown route", "GET", "/api/no/such/route", "", nil, 401},
		{"wrong token", "GET", "/api/x", "", []string{"Authorization", "Bearer 0123456789abcdef-tokem"}, 401},
		{"token prefix", "GET", "/api/x", "", []string{"Authorization", "Bearer 0123456789"}, 401},
		{"token without Bearer", "GET", "/api/x", "", []string{"Authorization", "0123456789abcdef-token"}, 401},
		{"token", "GET", "/api/x", "", []string{"Authorization", auth}, 200},
		{"unprotected path", "GET", "/index.html", "", nil, 200},
		{"rebinding host", "GET", "/api/x", "", []string{"Authorization", auth, "Host", "evil.example.com"}, 403},
		{"rebinding host with port", "GET", "/api/x", "", []string{"Authorization", auth, "Host", "evil.example.com:8787"}, 403},
		{"rebinding host on a free path", "GET", "/index.html", "", []string{"Host", "evil.example.com"}, 403},
		{"localhost", "GET", "/api/x", "", []string{"Authorization", auth, "Host", "localhost:8787"}, 200},
		{"LOCALHOST", "GET", "/api/x", "", []string{"Authorization", auth, "Host", "LOCALHOST:8787"}, 200},
		{"ipv6 loopback", "GET", "/api/x", "", []string{"Authorization", auth, "Host", "[::1]:8787"}, 200},
		{"allowed host", "GET", "/api/x", "", []string{"Authorization", auth, "Host", "harness.internal"}, 200},
		{"loopback lookalike", "GET", "/api/x", "", []string{"Authorization", auth, "Host", "127.0.0.1.evil.example"}, 403},
		{"foreign origin", "GET", "/api/x", "", []string{"Authorization", auth, "Origin", "https://evil.example.com"}, 403},
		{"foreign origin on a free path", "GET", "/index.html", "", []string{"Origin", "https://evil.example.com"}, 403},
		{"foreign origin posting", "POST", "/api/x", "{}", []string{"Authorization", auth, "Content-Type", json, "Origin", "https://evil.example.com"}, 403},
		{"null origin", "GET", "/api/x", "", []string{"Authorization", auth, "Origin", "null"}, 403},
		{"file origin", "GET", "/api/x", "", []string{"Authorization", auth, "Origin", "file://"}, 403},
		{"same origin", "GET", "/api/x", "", []string{"Authorization", auth, "Host", "localhost:8787", "Origin", "http://localhost:8787"}, 200},
		{"same host other port", "GET", "/api/x", "", []string{"Authorization", auth, "Host", "localhost:8787", "Origin", "http://localhost:9999"}, 403},
		{"allowed origin", "GET", "/api/x", "", []string{"Authorization", auth, "Origin", "https://console.example.com"}, 200},
		{"allowed origin without token", "GET", "/api/x", "", []string{"Origin", "https://console.example.com"}, 401},
		{"preflight allowed", "OPTIONS", "/api/turn", "", []string{"Origin", "https://console.example.com", "Access-Control-Request-Method", "POST"}, 204},
		{"preflight foreign", "OPTIONS", "/api/turn", "", []string{"Origin", "https://evil.example.com", "Access-Control-Request-Method", "POST"}, 403},
		{"text/plain post", "POST", "/api/x", "{}", []string{"Authorization", auth, "Content-Type", "text/plain"}, 415},
		{"form post", "POST", "/api/x", "a=b", []string{"Authorization", auth, "Content-Type", "application/x-www-form-urlencoded"}, 415},
		{"post without a type", "POST", "/api/x", "{}", []string{"Authorization", auth}, 415},
		{"text/plain empty post", "POST", "/api/cancel", "", []string{"Authorization", auth, "Content-Type", "text/plain"}, 415},
		{"json lookalike", "POST", "/api/x", "{}", []string{"Authorization", auth, "Content-Type", "application/jsonp"}, 415},
		{"empty post without a type", "POST", "/api/cancel", "", []string{"Authorization", auth}, 200},
		{"json with charset", "POST", "/api/x", "{}", []string{"Authorization", auth, "Content-Type", "application/json; charset=utf-8"}, 200},
		{"patch json", "PATCH", "/api/x", "{}", []string{"Authorization", auth, "Content-Type", json}, 200},
		{"body too large", "POST", "/api/x", big, []string{"Authorization", auth, "Content-Type", json}, 413},
		{"body too large chunked", "POST", "/api/x", big, []string{"Authorization", auth, "Content-Type", json, "X-Chunked", "1"}, 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var rd io.Reader
			if c.body != "" {
				rd = strings.NewReader(c.body)
			}
			req, err := http.NewRequest(c.method, srv.URL+c.path, rd)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i+1 < len(c.header); i += 2 {
				switch c.header[i] {
				case "Host":
					req.Host = c.header[i+1]
				case "X-Chunked":
					req.ContentLength = -1
					req.Body = io.NopCloser(strings.NewReader(c.body)) // no length known: the cap must hold while reading
				default:
					req.Header.Set(c.header[i], c.header[i+1])
				}
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.want {
				t.Fatalf("%d %s, want %d", resp.StatusCode, b, c.want)
			}
			if c.want >= 400 {
				var e struct{ Error string }
				if jsonErr := jsonUnmarshal(b, &e); jsonErr != nil || e.Error == "" {
					t.Errorf("error body %q is not {\"error\":…}", b)
				}
			}
			if c.want == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			grant := resp.Header.Get("Access-Control-Allow-Origin")
			if strings.Contains(c.name, "foreign") && grant != "" {
				t.Errorf("a foreign origin got a CORS grant %q", grant)
			}
			if c.name == "preflight allowed" {
				if grant != "https://console.example.com" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
					t.Errorf("preflight headers = %v", resp.Header)
				}
			}
		})
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// TestListenHost: the listen address's host is allowed; a wildcard adds
// nothing.
func TestListenHost(t *testing.T) {
	for _, c := range []struct {
		addr, host string
		want       bool
	}{
		{"192.168.1.5:8787", "192.168.1.5:8787", true},
		{"box.lan:8787", "BOX.lan", true},
		{"0.0.0.0:8787", "0.0.0.0:8787", false},
		{"[::]:8787", "[::]:8787", false},
		{"0.0.0.0:8787", "evil.example", false},
	} {
		g, err := New(Config{Addr: c.addr})
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = c.host
		g.Wrap(echo(time.Second)).ServeHTTP(w, r)
		if got := w.Code == 200; got != c.want {
			t.Errorf("addr %s, Host %s: %d, want allowed=%v", c.addr, c.host, w.Code, c.want)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{AllowOrigins: []string{"console.example.com"}},
		{AllowOrigins: []string{"https://"}},
		{Addr: "no-port"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

// TestTwentyMegabytes: a 20 MB body is 413 whether declared or streamed,
// and the server does not read it all.
func TestTwentyMegabytes(t *testing.T) {
	srv := newGuarded(t, Config{})
	for _, chunked := range []bool{false, true} {
		body := strings.NewReader(`{"x":"` + strings.Repeat("a", 20<<20) + `"}`)
		req, _ := http.NewRequest("POST", srv.URL+"/", body)
		req.Header.Set("Content-Type", "application/json")
		if chunked {
			req.ContentLength = -1
			req.Body = io.NopCloser(body)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			// The server may close the connection while the client still
			// sends; what it answered first is what counts, so retry once
			// reading the answer only.
			t.Fatalf("chunked=%v: %v", chunked, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked=%v: %d %s, want 413", chunked, resp.StatusCode, b)
		}
	}
}

// TestSlowBodyIsCut: a client that declares 1 MB and sends it a byte at a
// time is answered 408 once the body deadline passes, not after the
// megabyte.
func TestSlowBodyIsCut(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv := newGuarded(t, Config{BodyTimeout: timeout})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", 1<<20)
	answered := make(chan string, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answered <- "no answer: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		answered <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	tick := time.NewTicker(100 * time.Millisecond) // a byte each tick: the body would take more than a day
	defer tick.Stop()
	giveUp := time.After(20 * time.Second)
	for {
		select {
		case got := <-answered:
			if !strings.HasPrefix(got, "408 ") || !strings.Contains(got, ErrBodyTimeout.Error()) {
				t.Fatalf("answer %q, want 408 %s", got, ErrBodyTimeout)
			}
			return
		case <-tick.C:
			_, _ = conn.Write([]byte("a")) // may fail once the server has closed
		case <-giveUp:
			t.Fatal("a body sent a byte at a time was never cut")
		}
	}
}

// TestStreamOutlivesBodyDeadline: once the body is read, the deadline is
// lifted — a handler that answers with a long stream (POST /turn) is not
// cancelled when it passes.
func TestStreamOutlivesBodyDeadline(t *testing.T) {
	const timeout = 200 * time.Millisecond
	srv := newGuarded(t, Config{BodyTimeout: timeout})
	req, _ := http.NewRequest("POST", srv.URL+"/slow", strings.NewReader(`{"a":1}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	// And a keep-alive connection carries the next request normally.
	resp2, err := srv.Client().Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 200 {
		t.Fatalf("next request: %d", resp2.StatusCode)
	}
}

// TestSlowHeadersAreCut: Server's ReadHeaderTimeout cuts a client that
// never finishes its headers.
func TestSlowHeadersAreCut(t *testing.T) {
	s := Server(http.NotFoundHandler())
	if s.ReadHeaderTimeout != DefaultReadHeaderTimeout || s.MaxHeaderBytes != DefaultMaxHeaderBytes || s.IdleTimeout != DefaultIdleTimeout {
		t.Fatalf("Server = %+v", s)
	}
	s.ReadHeaderTimeout = 200 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = io.ReadAll(conn) // ends when the server closes the connection
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept a connection with unfinished headers open")
	}
}

// TestErrorsDoNotEchoInput: a 100 KB Host, Origin or Content-Type comes
// back cut, and Clip cuts any message.
func TestErrorsDoNotEchoInput(t *testing.T) {
	srv := newGuarded(t, Config{})
	long := strings.Repeat("x", 100<<10)
	for _, h := range []string{"Origin", "Content-Type"} {
		req, _ := http.NewRequest("POST", srv.URL+"/", strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(h, "http://"+long)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || len(b) > MaxMessage+100 || strings.Contains(string(b), strings.Repeat("x", MaxQuote+1)) {
			t.Errorf("%s: %d, %d bytes back", h, resp.StatusCode, len(b))
		}
	}
	if q := Quote(long); len(q) > MaxQuote+40 || !strings.Contains(q, "102400 bytes") {
		t.Errorf("Quote = %q", q)
	}
	if q := Quote("short"); q != `"short"` {
		t.Errorf("Quote(short) = %s", q)
	}
	if q := Quote(strings.Repeat("é", 100)); !strings.HasPrefix(q, `"é`) || strings.ContainsRune(q, '\uFFFD') || strings.Contains(q, `\x`) {
		t.Errorf("Quote cut a rune: %s", q)
	}
	if c := Clip(long); len(c) > MaxMessage+20 {
		t.Errorf("Clip kept %d bytes", len(c))
	}
}

func TestStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{ErrHost, 403}, {ErrOrigin, 403}, {ErrUnauthorized, 401}, {ErrMediaType, 415}, {ErrTooLarge, 413},
		{&http.MaxBytesError{Limit: 1}, 413}, {ErrBodyTimeout, 408}, {errors.New("other"), 0}, {nil, 0},
	} {
		err := c.err
		if err != nil {
			err = fmt.Errorf("wrapped: %w", err)
		}
		if got := Status(err); got != c.want {
			t.Errorf("Status(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
