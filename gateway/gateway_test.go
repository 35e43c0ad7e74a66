package gateway

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
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/chirality/harness"
	"github.com/chirality/harness/checkpoint"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/httpguard"
	"github.com/chirality/harness/trust"
)

// The gateway runs the real, pinned Claude Code CLI against the fake
// Messages API, offline, with a scratch HOME.

type testServer struct {
	t    *testing.T
	api  *claudetest.FakeAPI
	h    *harness.Harness
	gw   *Gateway
	srv  *httptest.Server
	root string
	cfg  Config
}

func newServer(t *testing.T, mutate func(*Config)) *testServer {
	t.Helper()
	return newServerWith(t, nil, mutate)
}

// newServerWith is newServer with the Harness's configuration changed by
// hmut first.
func newServerWith(t *testing.T, hmut func(*harness.Config), mutate func(*Config)) *testServer {
	t.Helper()
	bin := claudetest.FindCLI(t)
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	root := realDir(t)
	hcfg := harness.Config{
		Roots:    []string{root},
		StateDir: t.TempDir(),
		ChildEnv: api.Env(),
		Aliases:  engines.Aliases,
	}
	if hmut != nil {
		hmut(&hcfg)
	}
	// The built-in engines, then hmut's (a later one of a name wins).
	hcfg.Engines = append(engines.Builtin(engines.Config{
		ClaudeBinary: bin, Env: claudetest.ScratchEnv(t), ChildEnv: hcfg.ChildEnv, Logger: hcfg.Logger,
		InterruptGrace: time.Second, KillGrace: 2 * time.Second,
	}), hcfg.Engines...)
	h, err := harness.New(hcfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Harness: h}
	if mutate != nil {
		mutate(&cfg)
	}
	gw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(func() {
		gw.Close()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h.Shutdown(ctx)
	})
	return &testServer{t: t, api: api, h: h, gw: gw, srv: srv, root: root, cfg: cfg}
}

func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// do sends a request and returns the status and body.
func (s *testServer) do(method, path, body string, header ...string) (int, string) {
	s.t.Helper()
	resp := s.send(method, path, body, header...)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			s.t.Errorf("%s %s: %d with a body that is not {\"error\":…}: %s", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, string(b)
}

func (s *testServer) send(method, path, body string, header ...string) *http.Response {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.srv.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	client := *s.srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	validateResponse(s.t, req, resp)
	return resp
}

func (s *testServer) create(persona, mode string) string {
	s.t.Helper()
	body, _ := json.Marshal(map[string]any{"projectRoot": s.root, "persona": persona, "mode": mode})
	if persona == "" {
		body, _ = json.Marshal(map[string]any{"projectRoot": s.root, "persona": nil, "mode": mode})
	}
	code, out := s.do("POST", "/api/harness/session/create", string(body))
	if code != http.StatusCreated {
		s.t.Fatalf("create: %d %s", code, out)
	}
	var env struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil || env.Session.ID == "" {
		s.t.Fatalf("create answered %s", out)
	}
	return env.Session.ID
}

// sseEvent is one parsed SSE message or comment.
type sseEvent struct {
	ID      int64
	Data    string
	Comment string
	Event   event.Event
}

// readSSE parses an event stream until it ends or stop returns true.
func readSSE(t *testing.T, body io.Reader, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Data == "" && cur.Comment == "" {
				continue
			}
			if cur.Data != "" {
				if err := json.Unmarshal([]byte(cur.Data), &cur.Event); err != nil {
					t.Fatalf("bad data %q: %v", cur.Data, err)
				}
				var head struct {
					Seq int64 `json:"seq"`
				}
				_ = json.Unmarshal([]byte(cur.Data), &head)
				if head.Seq != cur.ID {
					t.Fatalf("id %d but seq %d", cur.ID, head.Seq)
				}
			}
			out = append(out, cur)
			if stop != nil && stop(cur) {
				return out
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
			cur.Comment = strings.TrimSpace(line[1:])
		case strings.HasPrefix(line, "id: "):
			cur.ID, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "data: "):
			cur.Data = line[6:]
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out
}

func events(list []sseEvent) []sseEvent {
	return slices.DeleteFunc(slices.Clone(list), func(e sseEvent) bool { return e.Data == "" })
}

// checkTurnEvents asserts consecutive ids from after+1, the harness
// session ID, and process:exit exactly once, last.
func checkTurnEvents(t *testing.T, id string, after int64, evs []sseEvent) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	for i, e := range evs {
		if e.ID != after+int64(i)+1 {
			t.Fatalf("event %d has id %d, want %d", i, e.ID, after+int64(i)+1)
		}
		if e.Event.SessionID != id {
			t.Fatalf("sessionId %q, want %q", e.Event.SessionID, id)
		}
		if (e.Event.Type == event.TypeProcessExit) != (i == len(evs)-1) {
			t.Fatalf("process:exit at %d of %d", i, len(evs))
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRoutes(t *testing.T) {
	s := newServer(t, nil)
	if err := os.MkdirAll(filepath.Join(s.root, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.root, "agents", "AGENT_PICKME.md"), []byte("---\ndescription: pick me\ntools: Read\n---\nbody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := realDir(t)
	first := s.create("PICKME", "workbench")
	second := s.create("", "pipeline")
	unknown := "0b7e4c8a-1111-4222-8333-944455556666"

	cases := []struct {
		name, method, path, body string
		want                     int
		contains                 string
	}{
		{"create bad mode", "POST", "/api/harness/session/create", `{"projectRoot":"` + s.root + `","mode":"chaos"}`, 400, "mode"},
		{"create bad json", "POST", "/api/harness/session/create", `{"projectRoot":`, 400, ""},
		{"create unknown field", "POST", "/api/harness/session/create", `{"projectRoot":"` + s.root + `","mode":"direct","tools":["Bash"]}`, 400, "tools"},
		{"create relative root", "POST", "/api/harness/session/create", `{"projectRoot":"rel/dir","mode":"direct"}`, 400, ""},
		{"create root outside", "POST", "/api/harness/session/create", `{"projectRoot":"` + outside + `","mode":"direct"}`, 403, "not allowed"},
		{"create root traversal", "POST", "/api/harness/session/create", `{"projectRoot":"` + s.root + `/../../etc","mode":"direct"}`, 403, ""},
		{"create missing dir outside", "POST", "/api/harness/session/create", `{"projectRoot":"/no/such/dir","mode":"direct"}`, 403, ""},
		{"create unknown persona", "POST", "/api/harness/session/create", `{"projectRoot":"` + s.root + `","persona":"NOPE","mode":"direct"}`, 404, "persona"},
		{"create bad persona id", "POST", "/api/harness/session/create", `{"projectRoot":"` + s.root + `","persona":"../x","mode":"direct"}`, 400, ""},
		{"get", "GET", "/api/harness/session/" + first, "", 200, `"persona":"PICKME"`},
		{"get unknown", "GET", "/api/harness/session/" + unknown, "", 404, ""},
		{"get not uuid", "GET", "/api/harness/session/not-a-uuid", "", 400, "invalid session id"},
		{"get dotdot", "GET", "/api/harness/session/..%2f..%2fetc", "", 404, ""},
		{"list root outside", "GET", "/api/harness/session/list?projectRoot=" + outside, "", 403, ""},
		{"turn empty message", "POST", "/api/harness/turn?events=all", `{"sessionId":"` + first + `","message":"  "}`, 400, "empty"},
		{"turn unknown session", "POST", "/api/harness/turn?events=all", `{"sessionId":"` + unknown + `","message":"hi"}`, 404, ""},
		{"turn bad id", "POST", "/api/harness/turn?events=all", `{"sessionId":"../../x","message":"hi"}`, 400, ""},
		{"interrupt none", "POST", "/api/harness/interrupt", `{"sessionId":"` + first + `"}`, 404, ""},
		{"interrupt bad id", "POST", "/api/harness/interrupt", `{"sessionId":"x"}`, 400, ""},
		{"events bad after", "GET", "/api/harness/session/" + first + "/events?after=-3", "", 400, ""},
		{"events unknown", "GET", "/api/harness/session/" + unknown + "/events", "", 404, ""},
		{"personas", "GET", "/api/harness/personas", "", 200, `"description":"pick me"`},
		{"personas outside", "GET", "/api/harness/personas?projectRoot=" + outside, "", 403, ""},
		{"health", "GET", "/api/harness/health", "", 200, `"claudeVersion":"` + claudecode.TestedCLIVersion + `"`},
		{"openapi", "GET", "/api/harness/openapi.json", "", 200, `"openapi"`},
		{"no route", "GET", "/api/harness/nope", "", 404, ""},
		{"wrong method", "PUT", "/api/harness/turn?events=all", "", 405, ""},
		{"delete", "DELETE", "/api/harness/session/" + second, "", 204, ""},
		{"delete again", "DELETE", "/api/harness/session/" + second, "", 404, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := s.do(c.method, c.path, c.body)
			if code != c.want || !strings.Contains(body, c.contains) {
				t.Errorf("%s %s = %d %s, want %d containing %q", c.method, c.path, code, body, c.want, c.contains)
			}
		})
	}
	// Nothing was written outside the roots.
	if des, _ := os.ReadDir(outside); len(des) != 0 {
		t.Errorf("files appeared outside the roots: %v", des)
	}
	// The list has the remaining session with its summary fields.
	code, body := s.do("GET", "/api/harness/session/list", "")
	var list []harness.SessionSummary
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list) != 1 || list[0].ID != first || list[0].Mode != "workbench" {
		t.Errorf("list = %d %s", code, body)
	}
}

func TestListNewestFirst(t *testing.T) {
	s := newServer(t, nil)
	var ids []string
	for range 3 {
		ids = append(ids, s.create("", "direct"))
	}
	code, body := s.do("GET", "/api/harness/session/list?projectRoot="+s.root, "")
	var list []harness.SessionSummary
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list) != 3 {
		t.Fatalf("list = %d %s", code, body)
	}
	for i := range list {
		if list[i].ID != ids[len(ids)-1-i] {
			t.Errorf("list[%d] = %s, want %s (newest first)", i, list[i].ID, ids[len(ids)-1-i])
		}
	}
}

func TestTurnStreamBusyInterrupt(t *testing.T) {
	s := newServer(t, nil)
	id := s.create("", "workbench")
	s.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("slow words ", 400))}, ChunkSize: 4, ChunkDelay: 20 * time.Millisecond})
	resp := s.send("POST", "/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"talk slowly"}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("turn = %d", resp.StatusCode)
	}
	for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	interrupted := false
	all := readSSE(t, resp.Body, func(e sseEvent) bool {
		if e.Event.Type == event.TypeChatDelta && !interrupted {
			interrupted = true
			if code, body := s.do("POST", "/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"again"}`); code != 409 {
				t.Errorf("second turn = %d %s, want 409", code, body)
			}
			if code, body := s.do("DELETE", "/api/harness/session/"+id+"x", ""); code != 400 {
				t.Errorf("delete bad id = %d %s", code, body)
			}
			if code, body := s.do("POST", "/api/harness/interrupt", `{"sessionId":"`+id+`"}`); code != 200 {
				t.Errorf("interrupt = %d %s, want 200", code, body)
			}
		}
		return false
	})
	evs := events(all)
	checkTurnEvents(t, id, 0, evs)
	var se *event.SessionError
	for _, e := range evs {
		if e.Event.Type == event.TypeSessionError {
			se = e.Event.Error
		}
	}
	if se == nil || se.Kind != event.ErrorInterrupted {
		t.Errorf("session:error = %+v, want interrupted", se)
	}
	waitFor(t, "the turn to end", func() bool { return !s.h.IsRunning(id) })
	if code, _ := s.do("POST", "/api/harness/interrupt", `{"sessionId":"`+id+`"}`); code != 404 {
		t.Errorf("interrupt after the turn = %d, want 404", code)
	}
}

func TestDisconnectSurvivalAndReplay(t *testing.T) {
	s := newServer(t, nil)
	id := s.create("", "workbench")
	answer := strings.Repeat("word ", 60)
	s.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(answer)}, ChunkSize: 5, ChunkDelay: 10 * time.Millisecond})
	resp := s.send("POST", "/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"hello"}`)
	got := readSSE(t, resp.Body, func(sseEvent) bool { return true }) // one event, then hang up
	resp.Body.Close()
	if len(got) != 1 || got[0].ID != 1 {
		t.Fatalf("first event = %+v", got)
	}
	// Several readers join mid-turn with the Last-Event-ID they had.
	type result struct {
		evs []sseEvent
	}
	results := make(chan result, 3)
	for range 3 {
		go func() {
			resp := s.send("GET", "/api/harness/session/"+id+"/events?events=all", "", "Last-Event-ID", "1")
			defer resp.Body.Close()
			results <- result{events(readSSE(t, resp.Body, nil))}
		}()
	}
	var streams [][]sseEvent
	for range 3 {
		streams = append(streams, (<-results).evs)
	}
	waitFor(t, "the turn to end", func() bool { return !s.h.IsRunning(id) })
	// The turn completed without its client, and everything was stored.
	resp = s.send("GET", "/api/harness/session/"+id+"/events?after=0&events=all", "")
	all := events(readSSE(t, resp.Body, nil))
	resp.Body.Close()
	checkTurnEvents(t, id, 0, all)
	var text strings.Builder
	for _, e := range all {
		if e.Event.Type == event.TypeChatDelta {
			text.WriteString(e.Event.Text)
		}
	}
	if text.String() != answer || all[len(all)-2].Event.Type != event.TypeSessionComplete {
		t.Errorf("stored turn: text %q, ending %s", text.String(), all[len(all)-2].Event.Type)
	}
	for i, st := range streams {
		checkTurnEvents(t, id, 1, st)
		if len(st) != len(all)-1 {
			t.Errorf("reader %d got %d events, want %d", i, len(st), len(all)-1)
		}
	}
}

func TestHeartbeatAndClose(t *testing.T) {
	s := newServer(t, func(c *Config) { c.Heartbeat = 20 * time.Millisecond })
	id := s.create("", "workbench")
	s.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("x")}, Delay: 30 * time.Second})
	resp := s.send("POST", "/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"wait"}`)
	defer resp.Body.Close()
	got := readSSE(t, resp.Body, func(e sseEvent) bool { return e.Comment == "heartbeat" })
	if len(got) == 0 || got[len(got)-1].Comment != "heartbeat" {
		t.Fatalf("no heartbeat: %+v", got)
	}
	// Close ends the open stream; the turn still runs until shut down.
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, resp.Body)
		close(done)
	}()
	s.gw.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the stream")
	}
	if !s.h.IsRunning(id) {
		t.Error("closing the gateway stopped the turn")
	}
}

func TestSafety(t *testing.T) {
	s := newServer(t, func(c *Config) {
		c.Token = "s3cret-token"
		c.AllowOrigins = []string{"https://console.example.com"}
		c.AllowHosts = []string{"harness.internal"}
		c.MaxBody = 256
	})
	auth := "Bearer s3cret-token"
	cases := []struct {
		name, method, path, body string
		header                   []string
		want                     int
	}{
		{"no token", "GET", "/api/harness/health", "", nil, 401},
		{"wrong token", "GET", "/api/harness/health", "", []string{"Authorization", "Bearer s3cret-tokem"}, 401},
		{"token prefix", "GET", "/api/harness/health", "", []string{"Authorization", "Bearer s3cret"}, 401},
		{"token", "GET", "/api/harness/personas", "", []string{"Authorization", auth}, 200},
		{"rebinding host", "GET", "/api/harness/personas", "", []string{"Authorization", auth, "Host", "evil.example.com"}, 403},
		{"rebinding host with port", "GET", "/api/harness/personas", "", []string{"Authorization", auth, "Host", "evil.example.com:8787"}, 403},
		{"localhost", "GET", "/api/harness/personas", "", []string{"Authorization", auth, "Host", "localhost:8787"}, 200},
		{"ipv6 loopback", "GET", "/api/harness/personas", "", []string{"Authorization", auth, "Host", "[::1]:8787"}, 200},
		{"allowed host", "GET", "/api/harness/personas", "", []string{"Authorization", auth, "Host", "harness.internal"}, 200},
		{"foreign origin", "GET", "/api/harness/personas", "", []string{"Authorization", auth, "Origin", "https://evil.example.com"}, 403},
		{"null origin", "GET", "/api/harness/personas", "", []string{"Authorization", auth, "Origin", "null"}, 403},
		{"allowed origin", "GET", "/api/harness/personas", "", []string{"Authorization", auth, "Origin", "https://console.example.com"}, 200},
		{"preflight allowed", "OPTIONS", "/api/harness/turn?events=all", "", []string{"Origin", "https://console.example.com", "Access-Control-Request-Method", "POST"}, 204},
		{"preflight foreign", "OPTIONS", "/api/harness/turn?events=all", "", []string{"Origin", "https://evil.example.com", "Access-Control-Request-Method", "POST"}, 403},
		{"body too large", "POST", "/api/harness/session/create", `{"projectRoot":"` + strings.Repeat("a", 300) + `","mode":"direct"}`, []string{"Authorization", auth}, 413},
		{"body too large chunked", "POST", "/api/harness/interrupt", "", []string{"Authorization", auth, "X-Chunked", "1"}, 413},
		{"unknown route without token", "GET", "/api/harness/no/such/route", "", nil, 401},
		{"unknown api without token", "GET", "/api/other", "", nil, 401},
		{"unknown route with token", "GET", "/api/harness/no/such/route", "", []string{"Authorization", auth}, 404},
		{"text/plain post", "POST", "/api/harness/interrupt", `{"sessionId":"x"}`, []string{"Authorization", auth, "Content-Type", "text/plain"}, 415},
		{"text/plain post from a foreign page", "POST", "/api/harness/turn?events=all", `{"sessionId":"x","message":"rm"}`, []string{"Authorization", auth, "Content-Type", "text/plain", "Origin", "https://evil.example.com"}, 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var resp *http.Response
			if c.name == "body too large chunked" {
				// No Content-Length: the cap must hold while reading.
				pr, pw := io.Pipe()
				go func() {
					pw.Write([]byte(`{"sessionId":"` + strings.Repeat("b", 1000) + `"}`))
					pw.Close()
				}()
				req, _ := http.NewRequest("POST", s.srv.URL+c.path, pr)
				req.Header.Set("Authorization", auth)
				req.Header.Set("Content-Type", "application/json")
				var err error
				if resp, err = s.srv.Client().Do(req); err != nil {
					t.Fatal(err)
				}
			} else {
				resp = s.send(c.method, c.path, c.body, c.header...)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.want {
				t.Errorf("%s = %d %s, want %d", c.name, resp.StatusCode, b, c.want)
			}
			if c.name == "preflight allowed" {
				if resp.Header.Get("Access-Control-Allow-Origin") != "https://console.example.com" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
					t.Errorf("preflight headers = %v", resp.Header)
				}
			}
			if c.want == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without a Harness succeeded")
	}
	h, err := harness.New(harness.Config{Roots: []string{t.TempDir()}, StateDir: t.TempDir(), Engines: engines.Builtin(engines.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Harness: h, AllowOrigins: []string{"console.example.com"}}); err == nil {
		t.Error("an origin without a scheme was accepted")
	}
}

func TestStatusOf(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{harness.ErrNotFound, 404}, {harness.ErrPersonaNotFound, 404}, {harness.ErrNotRunning, 404},
		{harness.ErrInvalidID, 400}, {harness.ErrInvalidMode, 400}, {harness.ErrEmptyMessage, 400}, {harness.ErrInvalidRoot, 400},
		{harness.ErrRootNotAllowed, 403}, {harness.ErrBypassRefused, 403}, {httpguard.ErrHost, 403}, {httpguard.ErrOrigin, 403},
		{harness.ErrBusy, 409}, {httpguard.ErrUnauthorized, 401}, {httpguard.ErrTooLarge, 413}, {&http.MaxBytesError{Limit: 1}, 413},
		{httpguard.ErrMediaType, 415}, {httpguard.ErrBodyTimeout, 408},
		{harness.ErrClosed, 503}, {&engine.BinaryNotFoundError{}, 503}, {errors.New("boom"), 500},
		{harness.ErrSeqNotFound, 404}, {errBadSeq, 400}, {harness.ErrUnsupported, 422}, {engine.ErrUnsupported, 422},
		{harness.ErrInvalidEffort, 400}, {harness.ErrInvalidPermissionMode, 400},
		{checkpoint.ErrTooLarge, 422}, {&checkpoint.LimitError{Limit: "files", Have: 9, Max: 8}, 422}, {checkpoint.ErrUnsafeStore, 422},
		{checkpoint.ErrNoGit, 503}, {trust.ErrLocked, 503},
	}
	for _, c := range cases {
		if got := statusOf(errors.Join(errors.New("ctx"), c.err)); got != c.want {
			t.Errorf("statusOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestOpenAPIMatchesRoutes checks the document against the router: every
// route is documented with its method, and every documented operation is
// routed.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi = %q", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
			var o struct {
				OperationID string                     `json:"operationId"`
				Responses   map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(op, &o); err != nil || o.OperationID == "" || len(o.Responses) == 0 {
				t.Errorf("%s %s: operationId and responses required", method, path)
			}
		}
	}
	h, err := harness.New(harness.Config{Roots: []string{t.TempDir()}, StateDir: t.TempDir(), Engines: engines.Builtin(engines.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := New(Config{Harness: h})
	if err != nil {
		t.Fatal(err)
	}
	routed := map[string]bool{}
	err = gw.router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err1 := route.GetPathTemplate()
		methods, err2 := route.GetMethods()
		if err1 != nil || err2 != nil {
			return nil // the API prefix itself
		}
		for _, m := range methods {
			routed[m+" "+tpl] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(routed) < 9 {
		t.Fatalf("walked only %d routes", len(routed))
	}
	for r := range routed {
		if !documented[r] {
			t.Errorf("route %s is not in openapi.json", r)
		}
	}
	for d := range documented {
		if !routed[d] {
			t.Errorf("openapi.json documents %s, which is not routed", d)
		}
	}
	// Every $ref resolves.
	var all any
	_ = json.Unmarshal(OpenAPI(), &all)
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "$ref" {
					ref := e.(string)
					parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
					var cur any = all
					for _, p := range parts {
						m, _ := cur.(map[string]any)
						cur = m[p]
					}
					if cur == nil {
						t.Errorf("dangling $ref %s", ref)
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(all)
}

// TestHostileInput: what issue 24 found — a 100 KB session id echoed
// whole, a 20 MB body, a body sent a byte at a time — each gets a short,
// bounded answer.
func TestHostileInput(t *testing.T) {
	s := newServer(t, func(c *Config) { c.BodyTimeout = 300 * time.Millisecond })
	long := strings.Repeat("7", 100<<10)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/harness/session/" + long, ""},
		{"GET", "/api/harness/session/" + long + "/events", ""},
		{"POST", "/api/harness/interrupt", `{"sessionId":"` + long + `"}`},
		{"POST", "/api/harness/turn?events=all", `{"sessionId":"` + long + `","message":"hi"}`},
		{"POST", "/api/harness/session/create", `{"projectRoot":"/` + long + `","mode":"direct"}`},
	} {
		code, out := s.do(c.method, c.path, c.body)
		if code != 400 && code != 403 && code != 404 {
			t.Errorf("%s %.40s…: %d", c.method, c.path, code)
		}
		if len(out) > httpguard.MaxMessage+64 {
			t.Errorf("%s %.40s…: %d bytes back, the input echoed: %.200s", c.method, c.path, len(out), out)
		}
	}

	// 20 MB, declared: 413 before anything is read.
	code, _ := s.do("POST", "/api/harness/session/create", `{"projectRoot":"`+strings.Repeat("a", 20<<20)+`"}`)
	if code != http.StatusRequestEntityTooLarge {
		t.Errorf("20 MB body: %d, want 413", code)
	}

	// 1 MB declared, sent a byte at a time: cut with 408 at the deadline.
	conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/harness/interrupt HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", 1<<20)
	answered := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.After(20 * time.Second)
	for {
		select {
		case code := <-answered:
			if code != http.StatusRequestTimeout {
				t.Fatalf("slow body: %d, want 408", code)
			}
			return
		case <-tick.C:
			_, _ = conn.Write([]byte(" "))
		case <-giveUp:
			t.Fatal("a body sent a byte at a time was never cut")
		}
	}
}
