// Package httpguard is the one guard every HTTP door of the harness (the
// gateway of `harness serve`, the server of `harness agent serve` and the
// TUI) puts in front of its routes, so that the doors cannot drift apart.
//
//	g, err := httpguard.New(httpguard.Config{Addr: addr, Token: token, AllowOrigins: origins})
//	srv := httpguard.Server(g.Wrap(routes)) // ReadHeaderTimeout, MaxHeaderBytes, IdleTimeout set
//
// A request meets the checks in this order, and the first that fails
// answers (through Config.WriteError) without reaching the routes:
//
//  1. Host: the Host header must name this server — loopback names
//     (localhost, 127.0.0.1, ::1), the host of Config.Addr unless it is a
//     wildcard, and Config.AllowHosts — or it is ErrHost (403). A
//     DNS-rebinding page reaches a loopback port under its own name.
//  2. Origin: a request with an Origin header must come from this server
//     itself (same host) or from Config.AllowOrigins, on every route, or it
//     is ErrOrigin (403). "null" is foreign. A CORS preflight from an
//     allowed origin is answered here (204 with the grant); from any other
//     origin it gets no grant (403).
//  3. Token: with Config.Token set, a request that Config.NeedsToken
//     selects (every request by default) must carry
//     "Authorization: Bearer <Token>" (constant-time compare), or it is
//     ErrUnauthorized (401, with WWW-Authenticate). This runs before
//     routing, so an unknown route is 401 too, not 404.
//  4. Content-Type: a POST, PUT or PATCH with a body, and any request that
//     names a Content-Type, must say application/json, or it is
//     ErrMediaType (415). A page can send text/plain across origins
//     without a preflight; it cannot send JSON. A POST without a body and
//     without a Content-Type (curl -X POST …/cancel) passes.
//  5. Body: more than Config.MaxBody bytes declared is ErrTooLarge (413)
//     at once; the body is wrapped so that reading past the limit fails
//     with ErrTooLarge, and reading it after Config.BodyTimeout from the
//     start of the request fails with ErrBodyTimeout (408): a client that
//     sends a body at one byte a second holds a connection for that long
//     at most. Headers are bounded by http.Server.ReadHeaderTimeout (set
//     by Server).
//
// Errors are the sentinels below (match them with errors.Is, map them with
// Status). Messages never carry client input whole: Quote caps what an
// error quotes, and Clip caps a message before it is sent.
package httpguard

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Defaults of Config and Server.
const (
	DefaultMaxBody           = 1 << 20
	DefaultBodyTimeout       = 30 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
	// MaxQuote is how many bytes of client input Quote keeps.
	MaxQuote = 64
	// MaxMessage is how many bytes of an error message Clip keeps.
	MaxMessage = 512
)

// Errors of the guard. Status maps each to its HTTP status.
var (
	ErrHost         = errors.New("host not allowed")
	ErrOrigin       = errors.New("origin not allowed")
	ErrUnauthorized = errors.New("missing or wrong bearer token")
	ErrMediaType    = errors.New("Content-Type must be application/json")
	ErrTooLarge     = errors.New("request body too large")
	ErrBodyTimeout  = errors.New("request body not received in time")
)

// Status returns the HTTP status of a guard error anywhere in err's chain
// (an *http.MaxBytesError counts as ErrTooLarge), or 0 if err is none of
// them. A door's own status mapping calls it first.
func Status(err error) int {
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrTooLarge), errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrBodyTimeout):
		return http.StatusRequestTimeout
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, ErrHost), errors.Is(err, ErrOrigin):
		return http.StatusForbidden
	case errors.Is(err, ErrMediaType):
		return http.StatusUnsupportedMediaType
	}
	return 0
}

// Config configures New. The zero value is the safe default: no token,
// loopback hosts only, no cross-origin caller, 1 MiB bodies read within
// 30 s. New copies it.
type Config struct {
	// Addr is the address the server listens on; its host joins the Host
	// allowlist unless it is a wildcard (0.0.0.0, ::) or empty.
	Addr string
	// AllowHosts are extra Host header values accepted, without port.
	AllowHosts []string
	// AllowOrigins are the origins ("https://app.example.com") allowed to
	// call cross-origin; each gets the CORS grant. None by default.
	AllowOrigins []string
	// Token, when set, is required as "Authorization: Bearer <Token>" on
	// the requests NeedsToken selects.
	Token string
	// NeedsToken reports whether r must carry the token (nil = every
	// request). The gateway exempts its console's static files.
	NeedsToken func(r *http.Request) bool
	// MaxBody caps request bodies in bytes (0 = DefaultMaxBody).
	MaxBody int64
	// BodyTimeout bounds the time from the start of a request until its
	// body has been read (0 = DefaultBodyTimeout).
	BodyTimeout time.Duration
	// WriteError answers a refused request (nil = WriteError, a JSON
	// {"error": …} with Status). A door passes its own writer to keep one
	// error shape.
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
}

// Guard holds the checks of one server. It is safe for concurrent use.
type Guard struct {
	cfg     Config
	hosts   map[string]bool
	origins map[string]bool
	bearer  []byte
}

// New returns a Guard for cfg, or an error naming a malformed Addr or
// origin.
func New(cfg Config) (*Guard, error) {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.WriteError == nil {
		cfg.WriteError = WriteError
	}
	g := &Guard{cfg: cfg, hosts: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}, origins: map[string]bool{}}
	if cfg.Addr != "" {
		host, _, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("addr %q: %w", cfg.Addr, err)
		}
		if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
			g.hosts[normHost(host)] = true
		}
	}
	for _, h := range cfg.AllowHosts {
		g.hosts[normHost(h)] = true
	}
	for _, o := range cfg.AllowOrigins {
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("allowed origin %q is not scheme://host[:port]", o)
		}
		g.origins[strings.ToLower(u.Scheme+"://"+u.Host)] = true
	}
	if cfg.Token != "" {
		g.bearer = []byte("Bearer " + cfg.Token)
	}
	return g, nil
}

// MaxBody is the body limit in force.
func (g *Guard) MaxBody() int64 { return g.cfg.MaxBody }

// normHost lower-cases a Host value and strips its port and brackets.
func normHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.ToLower(strings.Trim(h, "[]"))
}

// Wrap returns next behind the checks (see the package doc).
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := g.check(w, r); err != nil {
			if errors.Is(err, errAnswered) {
				return
			}
			g.cfg.WriteError(w, r, err)
			return
		}
		if hasBody(r) {
			rc := http.NewResponseController(w)
			deadline := time.Now().Add(g.cfg.BodyTimeout)
			// Not supported (a ResponseRecorder): the body is still capped.
			_ = rc.SetReadDeadline(deadline)
			r.Body = &body{rc: http.MaxBytesReader(w, r.Body, g.cfg.MaxBody), limit: g.cfg.MaxBody}
		}
		next.ServeHTTP(w, r)
	})
}

// errAnswered is check's way of saying it has answered (a preflight).
var errAnswered = errors.New("answered")

// check runs the checks in order; it answers a granted preflight itself.
func (g *Guard) check(w http.ResponseWriter, r *http.Request) error {
	if !g.hosts[normHost(r.Host)] {
		return fmt.Errorf("%w: %s", ErrHost, Quote(r.Host))
	}
	if origin, ok := r.Header["Origin"]; ok {
		o := strings.Join(origin, ",")
		u, err := url.Parse(o)
		valid := err == nil && len(origin) == 1 && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
		sameOrigin := valid && strings.EqualFold(u.Host, r.Host)
		allowed := valid && g.origins[strings.ToLower(u.Scheme+"://"+u.Host)]
		if !sameOrigin && !allowed {
			return fmt.Errorf("%w: %s", ErrOrigin, Quote(o))
		}
		if allowed {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", o)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", "Content-Type")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID, Accept")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return errAnswered
			}
		}
	}
	if g.bearer != nil && (g.cfg.NeedsToken == nil || g.cfg.NeedsToken(r)) &&
		subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), g.bearer) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="harness"`)
		return ErrUnauthorized
	}
	if ct := r.Header.Get("Content-Type"); ct != "" || (hasBody(r) && writes(r.Method)) {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return fmt.Errorf("%w (got %s)", ErrMediaType, Quote(ct))
		}
	}
	if r.ContentLength > g.cfg.MaxBody {
		return fmt.Errorf("%w: %d bytes declared, the limit is %d", ErrTooLarge, r.ContentLength, g.cfg.MaxBody)
	}
	return nil
}

// writes reports whether method is one that sends data.
func writes(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// hasBody reports whether r carries a body: a Content-Length above zero
// or an unknown length (chunked).
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// body is a request body capped in size (MaxBytesReader) and time (the
// connection's read deadline, set by Wrap) whose errors are the guard's.
// net/http lifts the read deadline itself when the body has been read to
// its end and it starts watching the connection for the client going
// away, so a request answered with a long stream (POST /turn) is not cut
// by it; a request that does not read its body to the end leaves the
// deadline on, which also bounds the server's discarding of the rest.
type body struct {
	rc    io.ReadCloser
	limit int64
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == nil {
		return n, nil
	}
	if err == io.EOF {
		return n, err
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return n, fmt.Errorf("%w: more than %d bytes: %w", ErrTooLarge, b.limit, err)
	}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return n, fmt.Errorf("%w: %w", ErrBodyTimeout, err)
	}
	return n, err
}

func (b *body) Close() error { return b.rc.Close() }

// Server returns an *http.Server for h with the header bounds every door
// uses: DefaultReadHeaderTimeout (a client that sends its headers slowly
// is cut), DefaultMaxHeaderBytes and DefaultIdleTimeout. It sets no
// ReadTimeout or WriteTimeout: bodies are bounded by the Guard, and a
// stream's writes by package sse.
func Server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		MaxHeaderBytes:    DefaultMaxHeaderBytes,
		IdleTimeout:       DefaultIdleTimeout,
	}
}

// Quote returns s quoted for an error message, cut to MaxQuote bytes (on
// a rune boundary) with the full length said when it was longer: a client
// that sends a 100 KB id does not get 100 KB back, nor fill a log.
func Quote(s string) string {
	if len(s) <= MaxQuote {
		return strconv.Quote(s)
	}
	cut := MaxQuote
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// Clip cuts an error message to MaxMessage bytes (on a rune boundary),
// marking the cut. A door applies it to every message it sends, whatever
// produced the error.
func Clip(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	cut := MaxMessage
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "… (cut)"
}

// WriteError answers {"error": Clip(err.Error())} with Status(err), or 500
// for an error that is not the guard's. It is the default of
// Config.WriteError.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	status := Status(err)
	if status == 0 {
		status = http.StatusInternalServerError
	}
	WriteJSON(w, status, map[string]string{"error": Clip(err.Error())})
}

// WriteJSON answers v as JSON with status, not cached and not sniffed.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"could not encode the answer"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusRequestEntityTooLarge || status == http.StatusRequestTimeout {
		h.Set("Connection", "close") // the rest of the body is not read
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
