package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// stillEngine is an engine without steering: its turns wait for release.
type stillEngine struct {
	release chan struct{}
	once    sync.Once
}

func (s *stillEngine) Name() string { return "still" }
func (s *stillEngine) Check(context.Context) engine.Status {
	return engine.Status{Kind: "still", Available: true}
}
func (s *stillEngine) Shutdown(context.Context) error { s.free(); return nil }
func (s *stillEngine) free()                          { s.once.Do(func() { close(s.release) }) }
func (s *stillEngine) StartTurn(_ context.Context, req engine.Request) (engine.Turn, error) {
	return &stillTurn{e: s, key: req.SessionKey}, nil
}

type stillTurn struct {
	e   *stillEngine
	key string
	i   int
	ev  event.Event
}

func (t *stillTurn) Next() bool {
	switch t.i++; t.i {
	case 1:
		t.ev = event.Event{Type: event.TypeSessionInit, SessionID: t.key, Init: &event.SessionInit{Engine: "still", ConversationID: "s"}}
	case 2:
		<-t.e.release
		t.ev = event.Event{Type: event.TypeSessionComplete, SessionID: t.key, Complete: &event.SessionComplete{}}
	case 3:
		t.ev = event.Event{Type: event.TypeProcessExit, SessionID: t.key, Exit: &event.ProcessExit{}}
	default:
		return false
	}
	return true
}
func (t *stillTurn) Event() event.Event { return t.ev }
func (t *stillTurn) Err() error         { return nil }
func (t *stillTurn) Interrupt() error   { t.e.free(); return nil }
func (t *stillTurn) Kill() error        { return t.Interrupt() }
func (t *stillTurn) Close() error       { return nil }

func (s *testServer) createOn(engineName string) string {
	s.t.Helper()
	body, _ := json.Marshal(map[string]any{"projectRoot": s.root, "persona": nil, "mode": "direct", "engine": engineName})
	code, out := s.do("POST", "/api/harness/session/create", string(body))
	if code != http.StatusCreated {
		s.t.Fatalf("create: %d %s", code, out)
	}
	var env struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	_ = json.Unmarshal([]byte(out), &env)
	return env.Session.ID
}

// POST /session/{id}/steer: 200 into a running native turn, whose next
// model call carries the message and whose log has it as a user:message;
// 409 with no turn running; 422 naming the engines that can on an engine
// that cannot; 400 for a blank message.
func TestSteerRoute(t *testing.T) {
	still := &stillEngine{release: make(chan struct{})}
	s := newServerWith(t, func(c *harness.Config) { c.Engines = append(c.Engines, still) }, nil)
	t.Cleanup(still.free)
	asked, steered := make(chan struct{}), make(chan struct{})
	var once, sonce sync.Once
	release := func() { sonce.Do(func() { close(steered) }) }
	t.Cleanup(func() { once.Do(func() { close(asked) }); release() })
	var mu sync.Mutex
	var got []string
	s.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		mu.Lock()
		got = append(got, r.LastUserText())
		mu.Unlock()
		if r.LastUserText() == "hold" {
			once.Do(func() { close(asked) })
			<-steered
			return claudetest.TextReply("held answer")
		}
		return claudetest.TextReply("answer to " + r.LastUserText())
	})
	id := s.createOn(engine.Anthropic)
	path := "/api/harness/session/" + id + "/steer"
	if code, out := s.do("POST", path, `{"message":"nothing runs"}`); code != http.StatusConflict {
		t.Fatalf("steer with no turn = %d %s, want 409", code, out)
	}
	resp := s.send("POST", "/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"hold"}`)
	defer resp.Body.Close()
	<-asked
	if code, out := s.do("POST", path, `{"message":"  "}`); code != http.StatusBadRequest {
		t.Fatalf("blank steer = %d %s, want 400", code, out)
	}
	if code, out := s.do("POST", path, `{"message":"use tabs"}`); code != http.StatusOK || !strings.Contains(out, `"delivered":true`) {
		t.Fatalf("steer = %d %s, want 200 delivered", code, out)
	}
	release()
	waitFor(t, "the turn to end", func() bool { return !s.h.IsRunning(id) })
	mu.Lock()
	calls := strings.Join(got, "|")
	mu.Unlock()
	if calls != "hold|use tabs" {
		t.Fatalf("model calls %q: the steer must be the next call's", calls)
	}
	elog, err := s.h.EventLog(id)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for rec, err := range elog.Records(0) {
		var ev event.Event
		if err != nil || json.Unmarshal(rec.Event, &ev) != nil {
			t.Fatalf("log: %v", err)
		}
		if ev.Type == event.TypeUserMessage {
			users = append(users, ev.Text)
		}
	}
	if strings.Join(users, "|") != "hold|use tabs" {
		t.Fatalf("user:message events %q", users)
	}

	sid := s.createOn("still")
	resp2 := s.send("POST", "/api/harness/turn?events=all", `{"sessionId":"`+sid+`","message":"wait"}`)
	defer resp2.Body.Close()
	waitFor(t, "the still turn to run", func() bool { return s.h.IsRunning(sid) })
	code, out := s.do("POST", "/api/harness/session/"+sid+"/steer", `{"message":"turn left"}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(out, "claude-code") || !strings.Contains(out, "codex") {
		t.Fatalf("steer on an engine that cannot = %d %s, want 422 naming the engines that can", code, out)
	}
}
