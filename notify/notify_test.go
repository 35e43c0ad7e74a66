package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/session"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// call is one request a receiver got.
type call struct {
	body   []byte
	header http.Header
	no     Notification
}

// receiver is a webhook on loopback: answer decides each request's
// status from its 1-based index (nil = 200).
type receiver struct {
	srv    *httptest.Server
	answer func(i int, r *http.Request) int

	mu    sync.Mutex
	calls []call
}

func newReceiver(t *testing.T, answer func(int, *http.Request) int) *receiver {
	rc := &receiver{answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c := call{body: body, header: r.Header.Clone()}
		_ = json.Unmarshal(body, &c.no)
		rc.mu.Lock()
		rc.calls = append(rc.calls, c)
		i := len(rc.calls)
		rc.mu.Unlock()
		code := http.StatusOK
		if rc.answer != nil {
			code = rc.answer(i, r)
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) got() []call {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]call(nil), rc.calls...)
}

// waitCall waits for a call of type typ and returns it.
func (rc *receiver) waitCall(t *testing.T, typ string) call {
	t.Helper()
	var found call
	waitFor(t, "a "+typ+" call", func() bool {
		for _, c := range rc.got() {
			if c.no.Type == typ {
				found = c
				return true
			}
		}
		return false
	})
	return found
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// newHarness is a Harness on the real, pinned Claude Code CLI against
// the fake Messages API, with approvals on when ask is set.
func newHarness(t testing.TB, ask bool) (*harness.Harness, *claudetest.FakeAPI, string) {
	t.Helper()
	bin := claudetest.FindCLI(t)
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := harness.Config{Roots: []string{root}, StateDir: t.TempDir(), ChildEnv: api.Env(), Aliases: engines.Aliases, NoProjectLogs: true}
	if ask {
		cfg.Approvals, cfg.PermissionMode = true, "default"
	}
	cfg.Engines = engines.Builtin(engines.Config{ClaudeBinary: bin, Env: claudetest.BaseEnv(t.TempDir()), ChildEnv: cfg.ChildEnv,
		InterruptGrace: time.Second, KillGrace: 2 * time.Second})
	h, err := harness.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	})
	return h, api, root
}

// startAskingTurn starts a turn whose agent asks to run Bash (a person
// must answer), then answers "done".
func startAskingTurn(t *testing.T, h *harness.Harness, api *claudetest.FakeAPI, root, message string) (*session.Session, *harness.Turn) {
	t.Helper()
	api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		if len(r.ToolResults()) == 0 {
			return claudetest.Reply{Blocks: []claudetest.Block{
				claudetest.ToolUse("", "Bash", map[string]any{"command": "touch marker", "description": "make the marker"}),
			}}
		}
		return claudetest.TextReply("done")
	})
	s, err := h.NewSession(harness.SessionSpec{ProjectRoot: root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := h.StartTurn(context.Background(), harness.TurnRequest{SessionID: s.ID, Message: message})
	if err != nil {
		t.Fatal(err)
	}
	return s, tr
}

func closeOnCleanup(t *testing.T, n *Notifier) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n.Close(ctx)
	})
}

// A turn that asks a person, then ends: the receiver gets
// approval:requested while the tool waits, then turn:completed, both
// signed with the secret, with the session, project, title and link.
func TestWebhookApprovalAndTurnEndSigned(t *testing.T) {
	h, api, root := newHarness(t, true)
	rc := newReceiver(t, nil)
	secret := "notify-test-secret-0123456789"
	n, err := Start(h, Config{Webhooks: []string{rc.srv.URL + "/hook"}, Secret: secret, Link: "http://127.0.0.1:8787/"})
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, n)
	s, tr := startAskingTurn(t, h, api, root, "make a marker")
	ask := rc.waitCall(t, "approval:requested")
	// The person is called while the tool still waits for them.
	pending := h.PendingApprovals(s.ID)
	if len(pending) != 1 {
		t.Fatalf("pending approvals %v when the call arrived, want the one", pending)
	}
	if err := h.Approve(s.ID, pending[0].RequestID, harness.ApprovalAnswer{Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	end := rc.waitCall(t, TypeTurnCompleted)
	for _, c := range []call{ask, end} {
		if !Verify([]byte(secret), c.body, c.header.Get(SignatureHeader)) {
			t.Errorf("%s: signature %q does not verify over %s", c.no.Type, c.header.Get(SignatureHeader), c.body)
		}
		if c.header.Get("Content-Type") != "application/json" || c.header.Get("X-Harness-Event") != c.no.Type {
			t.Errorf("%s: headers %v", c.no.Type, c.header)
		}
		if c.no.SessionID != s.ID || c.no.ProjectRoot != root || c.no.Link != "http://127.0.0.1:8787/#s="+s.ID {
			t.Errorf("%s: %+v: want session %s in %s with its link", c.no.Type, c.no, s.ID, root)
		}
		if !strings.HasSuffix(c.no.Title, " — make a marker") {
			t.Errorf("%s: title %q lacks the session's title", c.no.Type, c.no.Title)
		}
		if _, err := time.Parse(time.RFC3339, c.no.At); err != nil {
			t.Errorf("%s: at %q: %v", c.no.Type, c.no.At, err)
		}
		var fields map[string]any
		if err := json.Unmarshal(c.body, &fields); err != nil || len(fields) != 6 {
			t.Errorf("%s: body %s: want exactly type, sessionId, projectRoot, title, link, at", c.no.Type, c.body)
		}
	}
	if !strings.HasPrefix(ask.no.Title, "Approval needed: Bash") {
		t.Errorf("approval title %q", ask.no.Title)
	}
	// A wrong secret or a changed body does not verify.
	if Verify([]byte("other"), end.body, end.header.Get(SignatureHeader)) ||
		Verify([]byte(secret), append(end.body, ' '), end.header.Get(SignatureHeader)) {
		t.Error("the signature verifies what it should not")
	}
}

// A receiver that answers 500 twice gets the same body a third time,
// which it accepts: delivered once, nothing dropped.
func TestWebhookRetriedAfter500(t *testing.T) {
	rc := newReceiver(t, func(i int, _ *http.Request) int {
		if i <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	n, err := New(Config{Webhooks: []string{rc.srv.URL}, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, n)
	n.Observe(event.Event{Type: event.TypeApprovalRequested, SessionID: "s1", Time: 1700000000000,
		Approval: &event.ApprovalRequested{ToolName: "Bash"}})
	waitFor(t, "the delivery", func() bool { return n.Delivered() == 1 })
	calls := rc.got()
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3 (two 500s, then the delivery)", len(calls))
	}
	for _, c := range calls[1:] {
		if string(c.body) != string(calls[0].body) {
			t.Errorf("retry body %s differs from %s", c.body, calls[0].body)
		}
	}
	if calls[0].header.Get(SignatureHeader) != "" {
		t.Errorf("signed without a secret: %v", calls[0].header)
	}
	if calls[0].no.At != "2023-11-14T22:13:20.000Z" {
		t.Errorf("at %q, want the event's time", calls[0].no.At)
	}
}

// A final answer (4xx) is not retried; the attempts are bounded.
func TestWebhookFinalAnswerAndAttemptBound(t *testing.T) {
	rc := newReceiver(t, func(int, *http.Request) int { return http.StatusBadRequest })
	bad := newReceiver(t, func(int, *http.Request) int { return http.StatusBadGateway })
	n, err := New(Config{Webhooks: []string{rc.srv.URL, bad.srv.URL}, Backoff: time.Millisecond, Attempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	n.Observe(event.Event{Type: event.TypeProcessExit, SessionID: "s1"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n.Close(ctx) // delivers what is queued first
	if got := len(rc.got()); got != 1 {
		t.Errorf("400 receiver: %d calls, want 1", got)
	}
	if got := len(bad.got()); got != 3 {
		t.Errorf("502 receiver: %d calls, want 3 (the bound)", got)
	}
	if n.Delivered() != 0 {
		t.Errorf("delivered %d", n.Delivered())
	}
}

// A receiver that never answers holds no turn: the turn ends while the
// receiver still hangs on its first call; what piles up behind it is
// bounded, the oldest dropped and counted.
func TestDeadReceiverNeverSlowsATurn(t *testing.T) {
	h, api, root := newHarness(t, false)
	release := make(chan struct{})
	rc := newReceiver(t, func(_ int, r *http.Request) int {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return http.StatusOK
	})
	defer close(release)
	n, err := Start(h, Config{Webhooks: []string{rc.srv.URL}, Queue: 2, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, n)
	api.SetResponder(func(*claudetest.Request) claudetest.Reply { return claudetest.TextReply("done") })
	s, err := h.NewSession(harness.SessionSpec{ProjectRoot: root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		tr, err := h.StartTurn(context.Background(), harness.TurnRequest{SessionID: s.ID, Message: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		<-tr.Done() // would never return if a turn waited for the receiver
		if err := tr.Err(); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if i == 0 {
			waitFor(t, "the receiver to hold the first call", func() bool { return len(rc.got()) == 1 })
		}
	}
	// The first call hangs; three more ends queued in a queue of two.
	waitFor(t, "the oldest queued end to be dropped", func() bool { return n.Dropped() == 1 })
	if got := len(rc.got()); got != 1 {
		t.Errorf("%d calls reached the hanging receiver, want 1", got)
	}
	if h.WatchDropped() != 0 {
		t.Errorf("the core dropped %d events to the notifier", h.WatchDropped())
	}
}

// An ntfy topic gets a text body and a Title header; a secret in the
// session's title reaches no receiver.
func TestNtfyAndScrubbing(t *testing.T) {
	const key = "sk-ant-api03-notifytestNOTAREALKEYxxxxxxxxxxxxxxxxxxxxxxxxx"
	secrets.Register(key)
	topic := newReceiver(t, nil)
	hook := newReceiver(t, nil)
	n, err := New(Config{Ntfy: []string{topic.srv.URL + "/harness"}, Webhooks: []string{hook.srv.URL}, Link: "http://h.example/",
		Lookup: func(string) (string, string) { return "/p/" + key, "deploy with " + key }})
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, n)
	n.Observe(event.Event{Type: event.TypeSessionError, SessionID: "s1", Error: &event.SessionError{Kind: event.ErrorInterrupted}})
	n.Observe(event.Event{Type: event.TypeProcessExit, SessionID: "s1"})
	n.Observe(event.Event{Type: event.TypeTrustRequired, SessionID: "s1", Trust: &event.TrustRequired{Kind: "persona", Name: "ops"}})
	waitFor(t, "both deliveries to both", func() bool { return n.Delivered() == 4 })
	tc := topic.got()
	if tc[0].header.Get("Title") != "harness: turn:interrupted" || tc[0].header.Get("Click") != "http://h.example/#s=s1" ||
		!strings.HasPrefix(string(tc[0].body), "Turn interrupted — deploy with ") {
		t.Errorf("ntfy call: %v %q", tc[0].header, tc[0].body)
	}
	if tc[1].header.Get("Priority") != "high" || !strings.HasPrefix(string(tc[1].body), "Trust needed: persona ops") {
		t.Errorf("ntfy trust call: %v %q", tc[1].header, tc[1].body)
	}
	for _, c := range append(tc, hook.got()...) {
		if strings.Contains(string(c.body), key) || strings.Contains(c.header.Get("Title"), key) {
			t.Errorf("the key reached a receiver: %s", c.body)
		}
	}
}

// The end of a turn is typed by how it ended; a session with no new
// turn is called idle once; a new turn cancels the idle call.
func TestTurnOutcomesAndIdle(t *testing.T) {
	rc := newReceiver(t, nil)
	n, err := New(Config{Webhooks: []string{rc.srv.URL}, Idle: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, n)
	turn := func(id string, evs ...event.Event) {
		n.Observe(event.Event{Type: event.TypeUserMessage, SessionID: id, Text: "go"})
		for _, ev := range evs {
			ev.SessionID = id
			n.Observe(ev)
		}
		n.Observe(event.Event{Type: event.TypeProcessExit, SessionID: id})
	}
	turn("a", event.Event{Type: event.TypeSessionComplete})
	turn("b", event.Event{Type: event.TypeSessionError, Error: &event.SessionError{Kind: event.ErrorResumeNotFound}},
		event.Event{Type: event.TypeSessionError, Error: &event.SessionError{Kind: event.ErrorAPI}})
	turn("c", event.Event{Type: event.TypeSessionError, Error: &event.SessionError{Kind: event.ErrorMaxBudget}})
	turn("d", event.Event{Type: event.TypeSessionError, Error: &event.SessionError{Kind: event.ErrorKilled}})
	want := map[string]string{"a": TypeTurnCompleted, "b": TypeTurnFailed, "c": TypeBudgetHit, "d": TypeTurnInterrupted}
	waitFor(t, "four ends and four idle calls", func() bool { return n.Delivered() == 8 })
	idle := map[string]int{}
	for _, c := range rc.got() {
		if c.no.Type == TypeSessionIdle {
			idle[c.no.SessionID]++
			continue
		}
		if want[c.no.SessionID] != c.no.Type {
			t.Errorf("session %s ended as %s, want %s", c.no.SessionID, c.no.Type, want[c.no.SessionID])
		}
	}
	if len(idle) != 4 {
		t.Errorf("idle calls %v, want one per session", idle)
	}

	// A new turn before the idle time cancels the call.
	m, err := New(Config{Webhooks: []string{rc.srv.URL}, Idle: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, m)
	m.Observe(event.Event{Type: event.TypeProcessExit, SessionID: "e"})
	m.mu.Lock()
	armed := m.idle["e"] != nil
	m.mu.Unlock()
	m.Observe(event.Event{Type: event.TypeUserMessage, SessionID: "e"})
	m.mu.Lock()
	left := len(m.idle)
	m.mu.Unlock()
	if !armed || left != 0 {
		t.Errorf("idle armed %v, left after a new turn %d", armed, left)
	}
}

func TestConfigRefusesBadURLs(t *testing.T) {
	for _, c := range []Config{
		{Webhooks: []string{"file:///etc/passwd"}},
		{Ntfy: []string{"ntfy.sh/topic"}},
		{Webhooks: []string{"http://x/"}, Link: "javascript:alert(1)"},
		{Webhooks: []string{"http://x/"}, Idle: -time.Second},
	} {
		if n, err := New(c); err == nil {
			n.Close(context.Background())
			t.Errorf("%+v accepted", c)
		}
	}
}

// The webhook body is documented as the Notification schema of the
// gateway's OpenAPI document: the same fields, all required.
func TestNotificationMatchesOpenAPI(t *testing.T) {
	raw, err := os.ReadFile("../gateway/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Required   []string                   `json:"required"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	schema, ok := doc.Components.Schemas["Notification"]
	if !ok {
		t.Fatal("openapi.json has no Notification schema")
	}
	b, _ := json.Marshal(Notification{})
	var fields map[string]any
	_ = json.Unmarshal(b, &fields)
	var got, props []string
	for k := range fields {
		got = append(got, k)
	}
	for k := range schema.Properties {
		props = append(props, k)
	}
	slices.Sort(got)
	slices.Sort(props)
	req := slices.Clone(schema.Required)
	slices.Sort(req)
	if !slices.Equal(got, props) || !slices.Equal(got, req) {
		t.Errorf("Notification's fields %v; the schema's properties %v, required %v", got, props, req)
	}
}

// Run takes the sequence Harness.Watch gives: records are observed, and
// records the watch says it missed are counted, not taken for an end.
func TestRunCountsWhatTheWatchMissed(t *testing.T) {
	rc := newReceiver(t, nil)
	n, err := New(Config{Webhooks: []string{rc.srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, n)
	rec := func(ev event.Event) session.Record { ev.SessionID = "a"; return session.Record{Seq: 1, Typed: &ev} }
	n.Run(func(yield func(session.Record, error) bool) {
		_ = yield(rec(event.Event{Type: event.TypeUserMessage, Text: "go"}), nil) &&
			yield(session.Record{}, &harness.WatchDropError{Missed: 3}) &&
			yield(rec(event.Event{Type: event.TypeSessionComplete}), nil) &&
			yield(rec(event.Event{Type: event.TypeProcessExit}), nil)
	})
	if got := n.Missed(); got != 3 {
		t.Errorf("Missed = %d, want 3", got)
	}
	waitFor(t, "the turn's end after the gap", func() bool { return n.Delivered() == 1 })
	if c := rc.got(); len(c) != 1 || c[0].no.Type != TypeTurnCompleted {
		t.Errorf("calls %+v, want one turn:completed", c)
	}
}
