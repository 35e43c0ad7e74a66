package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// heldAPI answers the native engine: a message "hold" is answered only
// once release is closed; every message is recorded in order.
type heldAPI struct {
	mu      sync.Mutex
	msgs    []string
	release chan struct{}
	once    sync.Once
}

func (a *heldAPI) respond(r *claudetest.Request) claudetest.Reply {
	m := r.LastUserText()
	a.mu.Lock()
	a.msgs = append(a.msgs, m)
	a.mu.Unlock()
	if m == "hold" {
		<-a.release
	}
	return claudetest.TextReply("answer to " + m)
}

func (a *heldAPI) free() { a.once.Do(func() { close(a.release) }) }

func (a *heldAPI) messages() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.msgs)
}

func queueServer(t *testing.T) (*testServer, *heldAPI, string) {
	t.Helper()
	s := newServer(t, nil)
	a := &heldAPI{release: make(chan struct{})}
	s.api.SetResponder(a.respond)
	t.Cleanup(a.free) // before the fake API closes
	body, _ := json.Marshal(map[string]any{"projectRoot": s.root, "persona": nil, "mode": "direct", "engine": engine.Anthropic})
	code, out := s.do("POST", "/api/harness/session/create", string(body))
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, out)
	}
	var env struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	_ = json.Unmarshal([]byte(out), &env)
	return s, a, env.Session.ID
}

type queued struct {
	Queued   bool   `json:"queued"`
	PromptID string `json:"promptId"`
	Position int    `json:"position"`
}

func (s *testServer) queueList(id string) []string {
	s.t.Helper()
	code, out := s.do("GET", "/api/harness/session/"+id+"/queue", "")
	if code != 200 {
		s.t.Fatalf("GET queue = %d %s", code, out)
	}
	var q struct {
		Prompts []struct {
			Message string `json:"message"`
		} `json:"prompts"`
	}
	if err := json.Unmarshal([]byte(out), &q); err != nil {
		s.t.Fatal(err)
	}
	var msgs []string
	for _, p := range q.Prompts {
		msgs = append(msgs, p.Message)
	}
	return msgs
}

// Three prompts queued over HTTP behind a long turn run in order after
// it, with a person's delete and move honoured; without queue a busy
// session is still 409; the events say what happened.
func TestQueueRoutes(t *testing.T) {
	s, a, id := queueServer(t)
	turn := `{"sessionId":"` + id + `","message":"%s","queue":true}`
	resp := s.send("POST", "/api/harness/turn?events=all", strings.Replace(turn, "%s", "hold", 1))
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("queue:true on an idle session = %d, want 200 and the turn's stream", resp.StatusCode)
	}
	waitFor(t, "the held turn to reach the model", func() bool { return len(a.messages()) == 1 })
	if code, body := s.do("POST", "/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"not queued"}`); code != 409 {
		t.Fatalf("a busy session without queue = %d %s, want 409", code, body)
	}
	var ids []string
	for i, m := range []string{"one", "two", "three"} {
		code, out := s.do("POST", "/api/harness/turn?events=all", strings.Replace(turn, "%s", m, 1))
		var q queued
		if code != 202 || json.Unmarshal([]byte(out), &q) != nil || !q.Queued || q.Position != i {
			t.Fatalf("queue %s = %d %s, want 202 at %d", m, code, out, i)
		}
		ids = append(ids, q.PromptID)
	}
	if got := s.queueList(id); !slices.Equal(got, []string{"one", "two", "three"}) {
		t.Fatalf("queue = %v", got)
	}
	qpath := "/api/harness/session/" + id + "/queue/"
	if code, out := s.do("DELETE", qpath+ids[1], ""); code != 204 {
		t.Fatalf("DELETE = %d %s", code, out)
	}
	if code, _ := s.do("DELETE", qpath+ids[1], ""); code != 404 {
		t.Fatalf("DELETE again = %d, want 404", code)
	}
	if code, out := s.do("PATCH", qpath+ids[2], `{"position":0}`); code != 200 || !strings.Contains(out, `"three"`) {
		t.Fatalf("PATCH position = %d %s", code, out)
	}
	if code, out := s.do("PATCH", qpath+ids[0], `{"message":"one, edited"}`); code != 200 {
		t.Fatalf("PATCH message = %d %s", code, out)
	}
	if code, _ := s.do("PATCH", qpath+"nope", `{"position":0}`); code != 404 {
		t.Fatalf("PATCH of no such prompt = %d, want 404", code)
	}
	if code, _ := s.do("PATCH", qpath+ids[0], `{"position":-1}`); code != 400 {
		t.Fatalf("PATCH to a negative position = %d, want 400", code)
	}
	if got := s.queueList(id); !slices.Equal(got, []string{"three", "one, edited"}) {
		t.Fatalf("queue after the edits = %v", got)
	}
	a.free()
	evs := events(readSSE(t, resp.Body, nil))
	checkTurnEvents(t, id, 0, evs)
	var inTurn []event.Type
	for _, e := range evs {
		if e.Event.Type == event.TypePromptQueued || e.Event.Type == event.TypePromptDequeued {
			inTurn = append(inTurn, e.Event.Type)
		}
	}
	if want := []event.Type{event.TypePromptQueued, event.TypePromptQueued, event.TypePromptQueued, event.TypePromptDequeued}; !slices.Equal(inTurn, want) {
		t.Errorf("the running turn's stream has %v, want %v", inTurn, want)
	}
	waitFor(t, "the queue to drain", func() bool {
		return len(a.messages()) == 3 && !s.h.IsRunning(id) && len(s.queueList(id)) == 0
	})
	if got := a.messages(); !slices.Equal(got, []string{"hold", "three", "one, edited"}) {
		t.Fatalf("the model was asked %q", got)
	}
	// The whole log, as a late reader sees it.
	r2 := s.send("GET", "/api/harness/session/"+id+"/events?after=0&events=all", "")
	defer r2.Body.Close()
	var started []string
	for _, e := range events(readSSE(t, r2.Body, nil)) {
		if e.Event.Type == event.TypePromptDequeued && e.Event.Dequeued.Reason == event.DequeuedStarted {
			started = append(started, e.Event.Dequeued.PromptID)
		}
	}
	if !slices.Equal(started, []string{ids[2], ids[0]}) {
		t.Errorf("started prompts %v, want %v", started, []string{ids[2], ids[0]})
	}
}

// The queue's bounds: 429 past harness.MaxQueued, 422 for a message over
// harness.MaxQueuedMessage.
func TestQueueBoundsHTTP(t *testing.T) {
	s, a, id := queueServer(t)
	resp := s.send("POST", "/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"hold","queue":true}`)
	defer resp.Body.Close()
	waitFor(t, "the held turn to reach the model", func() bool { return len(a.messages()) == 1 })
	big, _ := json.Marshal(map[string]any{"sessionId": id, "message": strings.Repeat("x", harness.MaxQueuedMessage+1), "queue": true})
	if code, _ := s.do("POST", "/api/harness/turn?events=all", string(big)); code != 422 {
		t.Fatalf("a message over the limit = %d, want 422", code)
	}
	for i := range harness.MaxQueued {
		if code, out := s.do("POST", "/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"p","queue":true}`); code != 202 {
			t.Fatalf("prompt %d = %d %s", i, code, out)
		}
	}
	if code, _ := s.do("POST", "/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"p","queue":true}`); code != 429 {
		t.Fatalf("prompt %d = %d, want 429", harness.MaxQueued+1, code)
	}
	// Deleting the session drops what is queued.
	if code, out := s.do("DELETE", "/api/harness/session/"+id, ""); code != 204 {
		t.Fatalf("delete = %d %s", code, out)
	}
	a.free()
	_, _ = io.Copy(io.Discard, resp.Body)
	if n := len(a.messages()); n != 1 {
		t.Errorf("the model was asked %d times, want once (nothing queued runs after the delete)", n)
	}
}
