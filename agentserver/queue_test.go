package agentserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
)

// do sends method path with body (JSON for a POST or PATCH) and returns
// the status and the answer.
func (e *env) do(method, path, body string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.token)
	if method == "POST" || method == "PATCH" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (e *env) queue() []string {
	e.t.Helper()
	code, body := e.do("GET", "/queue", "")
	var l QueueList
	if code != 200 || json.Unmarshal([]byte(body), &l) != nil {
		e.t.Fatalf("GET /queue: %d %s", code, body)
	}
	var out []string
	for _, p := range l.Prompts {
		out = append(out, p.PromptID+"="+p.Message)
	}
	return out
}

// Prompts sent with queue while a turn waits on a person are queued
// (202), listed, edited, moved and deleted; once the turn ends the core
// runs what is left in order, and the server's event stream, which did
// not start those turns, shows each of them to its end.
func TestQueueOverHTTP(t *testing.T) {
	e := newEnv(t, engine.ClaudeCode, "")
	s := e.openStream("", "")
	e.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash", map[string]any{"command": "touch x", "description": "make x"})}},
		claudetest.TextReply("done"))
	e.prompt("make x")
	evs := s.until(t, func(ev Event) bool { return ev.Type == "approval" })
	ap := evs[len(evs)-1]

	if code, body := e.post("/prompt", `{"content":"busy"}`); code != 409 {
		t.Errorf("a prompt without queue on a busy session: %d %s, want 409", code, body)
	}
	ids := map[string]string{}
	for i, msg := range []string{"one", "two", "three"} {
		code, body := e.post("/prompt", `{"content":"`+msg+`","queue":true}`)
		var q QueuedAnswer
		if code != 202 || json.Unmarshal([]byte(body), &q) != nil || !q.Queued || q.Position != i || q.PromptID == "" {
			t.Fatalf("queue %s: %d %s", msg, code, body)
		}
		ids[msg] = q.PromptID
	}
	if code, body := e.do("PATCH", "/queue/"+ids["one"], `{"message":"one edited"}`); code != 200 {
		t.Fatalf("edit: %d %s", code, body)
	}
	if code, body := e.do("PATCH", "/queue/"+ids["three"], `{"position":0}`); code != 200 {
		t.Fatalf("move: %d %s", code, body)
	}
	if code, body := e.do("DELETE", "/queue/"+ids["two"], ""); code != 204 {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, _ := e.do("DELETE", "/queue/"+ids["two"], ""); code != 404 {
		t.Errorf("delete twice: %d, want 404", code)
	}
	if code, _ := e.do("PATCH", "/queue/"+ids["one"], `{"nope":1}`); code != 400 {
		t.Errorf("unknown field: %d, want 400", code)
	}
	want := []string{ids["three"] + "=three", ids["one"] + "=one edited"}
	if got := e.queue(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("queue %v, want %v", got, want)
	}

	if code, body := e.post("/approval", `{"requestId":"`+ap.RequestID+`","decision":"allow"}`); code != 200 {
		t.Fatalf("approval: %d %s", code, body)
	}
	var users []string
	for len(users) < 2 {
		for _, ev := range s.until(t, func(ev Event) bool { return ev.Type == "user" }) {
			if ev.Type == "user" {
				users = append(users, ev.Content)
			}
		}
	}
	s.until(t, isEnd)
	if strings.Join(users, "|") != "three|one edited" {
		t.Errorf("the queued turns ran as %v, want three, then one edited", users)
	}
	if got := e.queue(); len(got) != 0 {
		t.Errorf("queue after: %v", got)
	}
}
