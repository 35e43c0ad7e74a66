package agentserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/chirality/harness"
	"github.com/chirality/harness/acp/acptest"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	builtin "github.com/chirality/harness/engines"
	"github.com/chirality/harness/internal/sse"
)

// The test binary also serves as the fake ACP agent (acptest) for the
// tests of an engine that cannot fork.
func TestMain(m *testing.M) {
	if acptest.IsAgent() {
		acptest.Main()
	}
	goleak.VerifyTestMain(m)
}

// env is a Harness on the fake Messages API (the real Claude CLI, or the
// native engine) and an agent server of one session on it.
type env struct {
	t       *testing.T
	api     *claudetest.FakeAPI
	cfg     harness.Config
	engines builtin.Config         // the built-in engines open gives each Harness
	extra   func() []engine.Engine // more engines for each Harness (nil = none)
	h       *harness.Harness
	root    string
	id      string
	srv     *Server
	url     string
	token   string
	stop    func()
}

func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// newEnv makes the Harness and a session on engineName (with persona
// when set, written to the project first).
func newEnv(t *testing.T, engineName, personaText string) *env {
	t.Helper()
	return newEnvWith(t, engineName, personaText, nil)
}

// newEnvWith is newEnv with more engines than the built-in ones.
func newEnvWith(t *testing.T, engineName, personaText string, extra func() []engine.Engine) *env {
	t.Helper()
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	e := &env{t: t, api: api, root: realDir(t), token: "tok", extra: extra}
	os.WriteFile(filepath.Join(e.root, "hello.go"), []byte("package hello\n"), 0o644)
	e.engines = builtin.Config{ClaudeBinary: claudetest.FindCLI(t), Env: claudetest.BaseEnv(t.TempDir()), ChildEnv: api.Env(),
		InterruptGrace: time.Second, KillGrace: 2 * time.Second}
	e.cfg = harness.Config{
		Roots: []string{e.root}, StateDir: t.TempDir(), ChildEnv: api.Env(),
		DefaultPermissionMode: "default", Approvals: true, AllowedTools: []string{"Bash(ls:*)"},
		DefaultEngine: engineName, NoProjectLogs: true,
	}
	persona := ""
	if personaText != "" {
		os.MkdirAll(filepath.Join(e.root, "agents"), 0o755)
		os.WriteFile(filepath.Join(e.root, "agents", "AGENT_REVIEWER.md"), []byte(personaText), 0o644)
		persona = "REVIEWER"
	}
	e.open()
	s, err := e.h.NewSession(harness.SessionSpec{ProjectRoot: e.root, Persona: persona, Mode: "workbench", Engine: engineName})
	if err != nil {
		t.Fatal(err)
	}
	e.id = s.ID
	e.serve()
	return e
}

func (e *env) open() {
	e.t.Helper()
	cfg := e.cfg
	cfg.Engines = builtin.Builtin(e.engines) // new ones each time: a Harness shuts its engines down
	if e.extra != nil {
		cfg.Engines = append(cfg.Engines, e.extra()...)
	}
	h, err := harness.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.h = h
}

// serve starts the agent server of e.id on e.h.
func (e *env) serve() {
	e.t.Helper()
	srv, err := New(Config{Harness: e.h, SessionID: e.id, Token: e.token, Heartbeat: time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	e.srv, e.url = srv, hs.URL
	h := e.h
	done := false
	e.stop = func() {
		if done {
			return
		}
		done = true
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		h.Shutdown(ctx)
		srv.Close()
		hs.Close()
	}
	e.t.Cleanup(e.stop)
}

// sseEvent is one event as a client sees it.
type sseEvent struct {
	id string
	Event
}

// stream is one SSE client of /events.
type stream struct {
	resp   *http.Response
	cancel context.CancelFunc
	events chan sseEvent
	lastID string
}

// openStream connects with query (e.g. "?deltas=1") and lastID as
// Last-Event-ID ("" = none).
func (e *env) openStream(query, lastID string) *stream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/events"+query, nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		e.t.Fatalf("events: %v %v", resp, err)
	}
	s := &stream{resp: resp, cancel: cancel, events: make(chan sseEvent, 1<<16)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		var cur sseEvent
		have := false
		for sc.Scan() {
			l := sc.Text()
			switch {
			case l == "":
				if have {
					s.events <- cur
				}
				cur, have = sseEvent{}, false
			case strings.HasPrefix(l, "id: "):
				cur.id = l[4:]
			case strings.HasPrefix(l, "data: "):
				if err := json.Unmarshal([]byte(l[6:]), &cur.Event); err != nil || cur.Type == "" || cur.Timestamp == 0 {
					cur.Type = "INVALID:" + l
				}
				have = true
			}
		}
	}()
	e.t.Cleanup(s.close)
	return s
}

func (s *stream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// until reads events until one matches stop, returning them all.
func (s *stream) until(t *testing.T, stop func(Event) bool) []sseEvent {
	t.Helper()
	var out []sseEvent
	timeout := time.After(60 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("stream ended after %d events: %v", len(out), kinds(out))
			}
			if strings.HasPrefix(ev.Type, "INVALID:") {
				t.Fatalf("bad event %s", ev.Type)
			}
			if ev.id == "" {
				t.Fatalf("event without id: %+v", ev)
			}
			s.lastID = ev.id
			out = append(out, ev)
			if stop(ev.Event) {
				return out
			}
		case <-timeout:
			t.Fatalf("timed out after %d events: %v", len(out), kinds(out))
		}
	}
}

func kinds(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		k := e.Type
		if e.Type == "status" {
			k += ":" + e.State
		}
		out = append(out, k)
	}
	return out
}

func isEnd(ev Event) bool { return ev.Type == "status" && (ev.State == "idle" || ev.State == "error") }

// post sends body as JSON (contentType "" = application/json) and
// returns the status and the answer.
func (e *env) post(path, body string) (int, string) {
	e.t.Helper()
	return e.do("POST", path, body)
}

func (e *env) prompt(content string) {
	e.t.Helper()
	b, _ := json.Marshal(map[string]string{"content": content})
	if code, body := e.post("/prompt", string(b)); code != 200 {
		e.t.Fatalf("prompt: %d %s", code, body)
	}
}

// engines are the engines the contract tests run on: the real Claude
// CLI, and the native loop; tool is the listing tool each offers.
var engines = []struct{ name, tool string }{
	{engine.ClaudeCode, "Bash"},
	{engine.Anthropic, "list_dir"},
}

func listing(tool string) claudetest.Block {
	if tool == "Bash" {
		return claudetest.ToolUse("", "Bash", map[string]any{"command": "ls", "description": "list"})
	}
	return claudetest.ToolUse("", "list_dir", map[string]any{"path": "."})
}

const (
	thinking = "Let me think about this carefully, step by step, before answering."
	first    = "## First block\n\nThis is the **first** text block, long enough to stream in many deltas.\n"
	second   = "The listing has hello.go in it; this is the second block, also streamed in pieces."
)

// A turn's text and reasoning arrive once per completed block with the
// block's whole text; deltas only for a client that asked (?deltas=1),
// and then as well as the blocks.
func TestBlockEventsAndOptInDeltas(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			e := newEnv(t, eng.name, "")
			e.api.Script(
				claudetest.Reply{Blocks: []claudetest.Block{claudetest.Thinking(thinking), claudetest.Text(first), listing(eng.tool)}, ChunkSize: 4},
				claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(second)}, ChunkSize: 4},
			)
			plain := e.openStream("", "")
			withDeltas := e.openStream("?deltas=1", "")
			e.prompt("what is here?")
			evs := plain.until(t, isEnd)
			want := []string{"user", "status:thinking", "reasoning", "text", "tool_call", "status:running_tool", "tool_result", "status:thinking", "text", "status:idle"}
			if got := kinds(evs); !slices.Equal(got, want) {
				t.Fatalf("events %v\nwant   %v", got, want)
			}
			var texts []string
			for _, ev := range evs {
				switch ev.Type {
				case "text":
					texts = append(texts, ev.Content)
				case "reasoning":
					if ev.Content != thinking {
						t.Errorf("reasoning %q, want the whole block %q", ev.Content, thinking)
					}
				case "tool_call":
					if ev.Name != eng.tool || ev.ID == "" || len(ev.Input) == 0 {
						t.Errorf("tool_call %+v", ev)
					}
				case "tool_result":
					if ev.Result == nil || !strings.Contains(*ev.Result, "hello.go") || *ev.IsError {
						t.Errorf("tool_result %+v", ev)
					}
				}
			}
			if !slices.Equal(texts, []string{first, second}) {
				t.Errorf("text events %q, want each block whole", texts)
			}

			dev := withDeltas.until(t, isEnd)
			var blocks, pieces []string
			var piece strings.Builder
			for _, ev := range dev {
				switch ev.Type {
				case "text_delta":
					piece.WriteString(ev.Content)
					pieces = append(pieces, ev.Content)
				case "text":
					if piece.String() != ev.Content {
						t.Errorf("the deltas before a text event make %q, the event %q", piece.String(), ev.Content)
					}
					piece.Reset()
					blocks = append(blocks, ev.Content)
				}
			}
			if len(pieces) < 10 || !slices.Equal(blocks, texts) {
				t.Errorf("with deltas: %d text deltas, blocks %q", len(pieces), blocks)
			}
			// Without deltas=1 the same stream never carried one.
			for _, ev := range evs {
				if strings.HasSuffix(ev.Type, "_delta") {
					t.Fatalf("a delta without ?deltas=1: %+v", ev)
				}
			}
		})
	}
}

// A client cut in the middle of a turn reconnects with Last-Event-ID and
// gets every event exactly once: what it had plus what it gets equals
// what a client that stayed got, ids included. Cut once after an event
// with a plain id and once after one of several events of one record.
func TestReconnectGetsEveryEventOnce(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			e := newEnv(t, eng.name, "")
			from := "" // where the turn starts: the previous turn's last id
			for _, q := range []string{"", "?deltas=1"} {
				e.api.Script(
					claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(first), listing(eng.tool)}, ChunkSize: 4},
					claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("slow words ", 40))}, ChunkSize: 4, ChunkDelay: 10 * time.Millisecond},
				)
				ref := e.openStream(q, from)
				cut := e.openStream(q, from)
				e.prompt("go " + q)
				// Cut 1: right after the first event whose id carries an
				// index (one of several events of one record).
				got := cut.until(t, func(ev Event) bool { return strings.Contains(cut.lastID, ".") || isEnd(ev) })
				if !strings.Contains(cut.lastID, ".") {
					t.Fatalf("no event with an indexed id: %v", kinds(got))
				}
				cut.close()
				again := e.openStream(q, got[len(got)-1].id)
				// Cut 2: in the middle of the slow block.
				more := again.until(t, func(ev Event) bool { return ev.Type == "tool_result" })
				if q != "" {
					more = append(more, again.until(t, func(ev Event) bool { return ev.Type == "text_delta" })...)
				} else {
					more = append(more, again.until(t, func(ev Event) bool { return ev.Type == "status" })...)
				}
				again.close()
				third := e.openStream(q, more[len(more)-1].id)
				rest := third.until(t, isEnd)
				all := append(append(got, more...), rest...)
				want := ref.until(t, isEnd)
				if len(all) != len(want) {
					t.Fatalf("%s: reconnecting client got %d events, the one that stayed %d\n%v\n%v", q, len(all), len(want), kinds(all), kinds(want))
				}
				for i := range want {
					if all[i].id != want[i].id || all[i].Type != want[i].Type || all[i].Content != want[i].Content || all[i].State != want[i].State {
						t.Fatalf("%s: event %d: %+v, want %+v", q, i, all[i], want[i])
					}
				}
				third.close()
				ref.close()
				from = want[len(want)-1].id
			}
		})
	}
}

// An approval is asked over the stream and answered over HTTP: allow and
// the tool runs, deny and it does not; the outcome is an event; a bad or
// late answer is refused with its status.
func TestApprovalOverHTTP(t *testing.T) {
	e := newEnv(t, engine.ClaudeCode, "")
	touch := func(name string) claudetest.Reply {
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash", map[string]any{"command": "touch " + name, "description": "make " + name})}}
	}
	s := e.openStream("", "")
	for _, c := range []struct{ file, decision string }{{"allowed.txt", "allow"}, {"denied.txt", "deny"}, {"always.txt", "always"}} {
		e.api.Script(touch(c.file), claudetest.TextReply("done"))
		e.prompt("make " + c.file)
		evs := s.until(t, func(ev Event) bool { return ev.Type == "approval" })
		ap := evs[len(evs)-1]
		var in struct{ Command string }
		if json.Unmarshal(ap.Input, &in); ap.RequestID == "" || ap.Tool != "Bash" || in.Command != "touch "+c.file {
			t.Fatalf("approval %+v", ap)
		}
		if code, _ := e.post("/approval", `{"requestId":"`+ap.RequestID+`","decision":"maybe"}`); code != 400 {
			t.Errorf("decision maybe: %d, want 400", code)
		}
		if code, _ := e.post("/approval", `{"requestId":"nope","decision":"allow"}`); code != 404 {
			t.Errorf("unknown request: %d, want 404", code)
		}
		if code, body := e.post("/approval", `{"requestId":"`+ap.RequestID+`","decision":"`+c.decision+`"}`); code != 200 {
			t.Fatalf("approval: %d %s", code, body)
		}
		if code, _ := e.post("/approval", `{"requestId":"`+ap.RequestID+`","decision":"allow"}`); code != 409 {
			t.Errorf("a second answer: %d, want 409", code)
		}
		rest := s.until(t, isEnd)
		var resolved *sseEvent
		for i := range rest {
			if rest[i].Type == "approval_resolved" {
				resolved = &rest[i]
			}
		}
		wantDecision := map[string]string{"always": "allow"}[c.decision]
		if wantDecision == "" {
			wantDecision = c.decision
		}
		if resolved == nil || resolved.RequestID != ap.RequestID || resolved.Decision != wantDecision || resolved.By != "user" {
			t.Fatalf("outcome %+v in %v", resolved, kinds(rest))
		}
		_, err := os.Stat(filepath.Join(e.root, c.file))
		if ran := err == nil; ran != (c.decision != "deny") {
			t.Fatalf("%s: the tool ran: %v", c.decision, ran)
		}
	}
	// "always" remembered the exact command: it runs again, resolved by
	// the rule, nobody asked.
	os.Remove(filepath.Join(e.root, "always.txt"))
	e.api.Script(touch("always.txt"), claudetest.TextReply("done"))
	e.prompt("again")
	byRule := false
	for _, ev := range s.until(t, isEnd) {
		if ev.Type == "approval_resolved" {
			if ev.By != "rule" || ev.Decision != "allow" {
				t.Fatalf("after always: %+v", ev)
			}
			byRule = true
		}
	}
	if !byRule {
		t.Fatal("no approval resolved by the remembered rule")
	}
	if _, err := os.Stat(filepath.Join(e.root, "always.txt")); err != nil {
		t.Fatal("the remembered command did not run")
	}
}

// With warm turns, the session's next agent is started while the person
// reads, and the next prompt runs on it.
func TestWarmTurn(t *testing.T) {
	e := newEnv(t, engine.ClaudeCode, "")
	e.stop()
	e.cfg.WarmTurns = 1
	var logs lockedBuffer
	logger := zerolog.New(&logs)
	e.cfg.Logger = &logger
	e.open()
	e.serve()
	s := e.openStream("", "")
	e.prompt("first")
	s.until(t, isEnd)
	// The warm agent waits once the server logs it (what a person sees).
	started := regexp.MustCompile(`"sessionId":"` + e.id + `","pid":(\d+),"engine":"[^"]*","message":"warm turn started"`)
	deadline := time.Now().Add(30 * time.Second)
	pid := ""
	for pid == "" {
		if m := started.FindStringSubmatch(logs.String()); m != nil {
			pid = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no warm agent after the first turn:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.prompt("second")
	evs := s.until(t, isEnd)
	if last := evs[len(evs)-1]; last.State != "idle" {
		t.Fatalf("second turn: %+v", last)
	}
	used := fmt.Sprintf(`"pid":%s,"message":"warm turn used"`, pid)
	if !strings.Contains(logs.String(), used) {
		t.Fatalf("the warm agent %s was not used:\n%s", pid, logs.String())
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A restarted server on a new Harness continues the same session: the
// model gets the first turn's conversation, and the stream replays both
// turns. A persona's prompt reaches the model.
func TestRestartContinuesTheSessionWithItsPersona(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			e := newEnv(t, eng.name, "---\ndescription: reviews\n---\nYou are the REVIEWER persona. Codeword: QUINCE.\n")
			s := e.openStream("", "")
			e.prompt("remember the word PLUM")
			s.until(t, isEnd)
			s.close()
			e.stop()

			e.open()
			e.serve()
			e.prompt("which word?")
			all := e.openStream("", "").until(t, func(ev Event) bool { return ev.Type == "user" && ev.Content == "which word?" })
			all = append(all, e.openStream("", all[len(all)-1].id).until(t, isEnd)...)
			var users []string
			for _, ev := range all {
				if ev.Type == "user" {
					users = append(users, ev.Content)
				}
			}
			if !slices.Equal(users, []string{"remember the word PLUM", "which word?"}) {
				t.Fatalf("replayed prompts %q", users)
			}
			var last *claudetest.Request
			for _, r := range e.api.Requests() {
				if r.Stream && strings.Contains(r.LastUserText(), "which word?") {
					last = r
				}
			}
			if last == nil {
				t.Fatal("the second prompt never reached the model")
			}
			body := string(last.Body)
			if !strings.Contains(body, "PLUM") {
				t.Errorf("the continued conversation lacks the first turn: %s", body)
			}
			if !strings.Contains(last.SystemText(), "Codeword: QUINCE") {
				t.Errorf("the persona's prompt did not reach the model: %q", last.SystemText())
			}
		})
	}
}

// Bad requests are refused with their status and run nothing.
func TestBadRequests(t *testing.T) {
	e := newEnv(t, engine.Anthropic, "")
	for _, body := range []string{``, `{`, `{"content":""}`, `{"content":"  "}`, `{"content":"x","extra":1}`, `{"content":"a"} {"content":"b"}`} {
		if code, _ := e.post("/prompt", body); code != 400 {
			t.Errorf("body %q: %d, want 400", body, code)
		}
	}
	if code, _ := e.post("/prompt", fmt.Sprintf(`{"content":%q}`, strings.Repeat("x", DefaultMaxBody))); code != 413 {
		t.Errorf("a body over the limit: %d, want 413", code)
	}
	req, _ := http.NewRequest("GET", e.url+"/events", nil)
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Last-Event-ID", "x1")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 400 {
		t.Errorf("a bad Last-Event-ID: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	req, _ = http.NewRequest("POST", e.url+"/cancel", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Errorf("no token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	req, _ = http.NewRequest("POST", e.url+"/cancel", nil)
	req.Header.Set("Authorization", "Bearer tok")
	req.Host = "evil.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Errorf("foreign Host: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// The specification's routes with another method: 405 saying what the
	// route takes (RFC 9110's Allow; the standard mux said so before the
	// move to the doors' router, which did not).
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/prompt", "POST"}, {"GET", "/cancel", "POST"}, {"POST", "/events", "GET"},
	} {
		req, _ = http.NewRequest(c.method, e.url+c.path, nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow)
		}
	}
	if n := len(e.api.Requests()); n != 0 {
		t.Errorf("%d model requests, want none", n)
	}
}

func TestParsePosition(t *testing.T) {
	for in, want := range map[string]Position{"0": {}, "12": {Seq: 12}, "12.3": {Seq: 12, Index: 3}} {
		if p, ok := ParsePosition(in); !ok || p != want || p.String() != in {
			t.Errorf("%q: %+v %v", in, p, ok)
		}
	}
	for _, in := range []string{"", "-1", "+1", "1.", "1.0", "1.-2", ".1", "a", "1.2.3", "99999999999999999999"} {
		if p, ok := ParsePosition(in); ok {
			t.Errorf("%q accepted: %+v", in, p)
		}
	}
}

func FuzzParsePosition(f *testing.F) {
	for _, s := range []string{"0", "12", "12.3", "1.", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := ParsePosition(s)
		if !ok {
			return
		}
		if p.Seq < 0 || p.Index < 0 {
			t.Fatalf("%q: %+v", s, p)
		}
		if q, ok := ParsePosition(p.String()); !ok || q != p {
			t.Fatalf("%q: %+v does not round-trip", s, p)
		}
	})
}

// A turn that cannot start is answered with its error, and its events
// (the prompt, then status error) are on the stream, in the replay index
// too: a client that reconnects after them gets only what follows.
func TestTurnThatCannotStart(t *testing.T) {
	e := newEnv(t, engine.ClaudeCode, "")
	e.stop()
	e.engines.ClaudeBinary = filepath.Join(t.TempDir(), "no-such-claude")
	e.open()
	e.serve()
	s := e.openStream("", "")
	if code, body := e.post("/prompt", `{"content":"hello"}`); code == 200 || !strings.Contains(body, "error") {
		t.Fatalf("prompt: %d %s", code, body)
	}
	evs := s.until(t, isEnd)
	if got := kinds(evs); !slices.Equal(got, []string{"user", "status:thinking", "status:error"}) || evs[2].Message == "" {
		t.Fatalf("events %v (%+v)", got, evs[len(evs)-1])
	}
	again := e.openStream("", evs[0].id)
	if rest := again.until(t, isEnd); len(rest) != 2 || rest[0].id != evs[1].id {
		t.Fatalf("after %s: %v", evs[0].id, kinds(rest))
	}
}

// A page the user visits cannot drive the agent: a foreign Origin is
// refused on every route (a preflight gets no grant), a text/plain POST
// (which a page sends without a preflight) is refused, and nothing runs:
// no model request, nothing in the log, a running turn not cancelled.
func TestGuardRefusesAHostilePage(t *testing.T) {
	e := newEnv(t, engine.Anthropic, "")
	do := func(method, path, body string, hdr map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	evil, bearer, jsonCT, plainCT := "https://evil.example", "Bearer "+e.token, "application/json", "text/plain"
	attacks := []struct {
		method, path, body string
		hdr                map[string]string
		want               int
	}{
		{"POST", "/prompt", `{"content":"touch pwned"}`, map[string]string{"Origin": evil, "Content-Type": plainCT}, 403},
		{"POST", "/prompt", `{"content":"touch pwned"}`, map[string]string{"Origin": evil, "Content-Type": jsonCT, "Authorization": bearer}, 403},
		{"POST", "/prompt", `{"content":"touch pwned"}`, map[string]string{"Origin": "null", "Content-Type": jsonCT, "Authorization": bearer}, 403},
		{"POST", "/prompt", `{"content":"touch pwned"}`, map[string]string{"Content-Type": plainCT, "Authorization": bearer}, 415},
		{"POST", "/prompt", `{"content":"touch pwned"}`, map[string]string{"Authorization": bearer}, 415},
		{"POST", "/approval", `{"requestId":"x","decision":"allow"}`, map[string]string{"Origin": evil, "Content-Type": jsonCT, "Authorization": bearer}, 403},
		{"GET", "/events", ``, map[string]string{"Origin": evil, "Authorization": bearer}, 403},
		{"POST", "/fork", `{}`, map[string]string{"Origin": evil, "Content-Type": jsonCT, "Authorization": bearer}, 403},
		{"POST", "/fork", `{}`, map[string]string{"Content-Type": plainCT, "Authorization": bearer}, 415},
		{"POST", "/fork", `{}`, map[string]string{"Content-Type": jsonCT}, 401},
		{"POST", "/rewind", `{"turns":1,"files":true}`, map[string]string{"Origin": evil, "Content-Type": jsonCT, "Authorization": bearer}, 403},
		{"POST", "/rewind", `{"turns":1,"files":true}`, map[string]string{"Content-Type": plainCT, "Authorization": bearer}, 415},
		{"POST", "/session", `{"permissionMode":"bypassPermissions"}`, map[string]string{"Origin": evil, "Content-Type": jsonCT, "Authorization": bearer}, 403},
		{"POST", "/session", `{"permissionMode":"bypassPermissions"}`, map[string]string{"Content-Type": plainCT, "Authorization": bearer}, 415},
		{"GET", "/session", ``, map[string]string{"Origin": evil, "Authorization": bearer}, 403},
		{"GET", "/turns", ``, map[string]string{}, 401},
		{"OPTIONS", "/prompt", ``, map[string]string{"Origin": evil, "Access-Control-Request-Method": "POST"}, 403},
	}
	for _, a := range attacks {
		resp := do(a.method, a.path, a.body, a.hdr)
		if resp.StatusCode != a.want || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s %s %v: %d (ACAO %q), want %d", a.method, a.path, a.hdr, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), a.want)
		}
	}
	elog, _ := e.h.EventLog(e.id)
	if n := len(e.api.Requests()); n != 0 || elog.LastSeq() != 0 {
		t.Fatalf("the attacks ran something: %d model requests, %d events", n, elog.LastSeq())
	}
	if sess, err := e.h.Session(e.id); err != nil || sess.PermissionMode != "" || e.srv.SessionID() != e.id {
		t.Fatalf("the attacks changed the session: %+v %v, serving %s", sess, err, e.srv.SessionID())
	}

	// A running turn: a page's /cancel does not stop it.
	e.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("word ", 60))}, ChunkSize: 5, ChunkDelay: 20 * time.Millisecond})
	s := e.openStream("?deltas=1", "")
	e.prompt("a slow answer")
	s.until(t, func(ev Event) bool { return ev.Type == "text_delta" })
	for _, hdr := range []map[string]string{
		{"Origin": evil},
		{"Origin": evil, "Content-Type": plainCT, "Authorization": bearer},
		{"Content-Type": plainCT, "Authorization": bearer},
	} {
		body := ""
		if hdr["Content-Type"] != "" {
			body = "x"
		}
		if resp := do("POST", "/cancel", body, hdr); resp.StatusCode != 403 && resp.StatusCode != 415 {
			t.Errorf("/cancel %v: %d", hdr, resp.StatusCode)
		}
	}
	end := s.until(t, isEnd)
	if last := end[len(end)-1]; last.State != "idle" || last.Message == "interrupted" {
		t.Fatalf("the turn ended %+v: a refused /cancel stopped it", last)
	}

	// This server's own origin, and an origin the operator allowed, pass.
	if resp := do("POST", "/cancel", "", map[string]string{"Origin": e.url, "Authorization": bearer}); resp.StatusCode != 200 {
		t.Errorf("same-origin /cancel: %d", resp.StatusCode)
	}
	ok, err := New(Config{Harness: e.h, SessionID: e.id, AllowOrigins: []string{"https://ok.example"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("OPTIONS", "http://127.0.0.1/prompt", nil)
	req.Header.Set("Origin", "https://ok.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	ok.ServeHTTP(rec, req)
	if rec.Code != 204 || rec.Header().Get("Access-Control-Allow-Origin") != "https://ok.example" {
		t.Errorf("an allowed origin's preflight: %d %v", rec.Code, rec.Header())
	}
}

// Event streams are capped (package internal/sse's limiter): beyond the
// cap a client is told 503 with Retry-After; a closed stream frees its
// slot.
func TestStreamCap(t *testing.T) {
	e := newEnv(t, engine.Anthropic, "")
	var open []*stream
	for range sse.DefaultMaxStreamsPerKey {
		open = append(open, e.openStream("", ""))
	}
	get := func() *http.Response {
		req, _ := http.NewRequest("GET", e.url+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+e.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := get()
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a stream over the cap: %d %v", resp.StatusCode, resp.Header)
	}
	open[0].close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := get()
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no slot after a stream closed: %d", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An event's timestamp is when it happened, stamped once and stored with
// it: a reader live during the turn and one that replays the session
// later see the same time for each event, and it is the time in the
// session's log (it was the time each reader was sent the event).
func TestTimestampIsWhenTheEventHappened(t *testing.T) {
	e := newEnv(t, engine.Anthropic, "")
	e.api.Script(
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(first), listing("list_dir")}},
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(second)}},
	)
	live := e.openStream("", "")
	e.prompt("what is here?")
	got := live.until(t, isEnd)
	live.close()
	stored := map[int64]int64{} // seq → the log's timestamp
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	records, err := e.h.Follow(ctx, e.id, 0) // the turn has ended: the stored records, then the end
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range records {
		if err != nil {
			t.Fatal(err)
		}
		var ts struct {
			Timestamp int64 `json:"timestamp"`
		}
		if json.Unmarshal(rec.Event, &ts); ts.Timestamp == 0 {
			t.Fatalf("record %d stored without a timestamp: %s", rec.Seq, rec.Event)
		}
		stored[rec.Seq] = ts.Timestamp
	}
	replay := e.openStream("", "")
	again := replay.until(t, isEnd)
	if len(again) != len(got) {
		t.Fatalf("replay %v, live %v", kinds(again), kinds(got))
	}
	for i, ev := range got {
		seq, _ := ParsePosition(ev.id)
		if ev.Timestamp != stored[seq.Seq] {
			t.Errorf("live %s (id %s): timestamp %d, the log's %d", ev.Type, ev.id, ev.Timestamp, stored[seq.Seq])
		}
		if again[i].id != ev.id || again[i].Timestamp != ev.Timestamp {
			t.Errorf("replayed %s (id %s): timestamp %d, live %d", again[i].Type, again[i].id, again[i].Timestamp, ev.Timestamp)
		}
	}
}
