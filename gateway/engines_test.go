package gateway

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

func (s *testServer) createJSON(body map[string]any) (int, string) {
	s.t.Helper()
	if _, ok := body["projectRoot"]; !ok {
		body["projectRoot"] = s.root
	}
	if _, ok := body["mode"]; !ok {
		body["mode"] = "direct"
	}
	b, _ := json.Marshal(body)
	return s.do("POST", "/api/harness/session/create", string(b))
}

func sessionID(t *testing.T, out string) string {
	t.Helper()
	var env struct {
		Session struct {
			ID     string `json:"id"`
			Engine string `json:"engine"`
		} `json:"session"`
		Pending []json.RawMessage `json:"pendingApprovals"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil || env.Session.ID == "" || env.Pending == nil {
		t.Fatalf("envelope %s", out)
	}
	return env.Session.ID
}

// turnSSE posts a turn and reads its stream to process:exit.
func (s *testServer) turnSSE(id, message string) []sseEvent {
	s.t.Helper()
	b, _ := json.Marshal(map[string]string{"sessionId": id, "message": message})
	resp := s.send("POST", "/api/harness/turn?events=all", string(b))
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		s.t.Fatalf("turn: %d", resp.StatusCode)
	}
	return events(readSSE(s.t, resp.Body, func(e sseEvent) bool { return e.Event.Type == event.TypeProcessExit }))
}

func TestEnginesRootsAndTitle(t *testing.T) {
	s := newServer(t, nil)
	code, out := s.do("GET", "/api/harness/engines", "")
	var st []struct {
		Name      string `json:"name"`
		Available bool   `json:"available"`
		Reason    string `json:"reason"`
	}
	if code != 200 || json.Unmarshal([]byte(out), &st) != nil || len(st) < 2 || st[0].Name != "claude-code" || !st[0].Available ||
		st[1].Name != "anthropic" || !st[1].Available {
		t.Fatalf("engines %d %s", code, out)
	}
	if code, out := s.do("GET", "/api/harness/roots", ""); code != 200 || !strings.Contains(out, s.root) {
		t.Fatalf("roots %d %s", code, out)
	}
	// A root outside is refused with the allowed roots named.
	code, out = s.createJSON(map[string]any{"projectRoot": "/etc"})
	if code != 403 || !strings.Contains(out, s.root) {
		t.Fatalf("outside root: %d %s", code, out)
	}
	if code, out := s.createJSON(map[string]any{"engine": "nope"}); code != 400 || !strings.Contains(out, "unknown engine") {
		t.Fatalf("unknown engine: %d %s", code, out)
	}
	code, out = s.createJSON(map[string]any{"engine": "anthropic", "title": "My task"})
	if code != 201 || !strings.Contains(out, `"engine": "anthropic"`) && !strings.Contains(out, `"engine":"anthropic"`) {
		t.Fatalf("create: %d %s", code, out)
	}
	id := sessionID(t, out)
	if code, out := s.do("PATCH", "/api/harness/session/"+id, `{"title":"Renamed"}`); code != 200 || !strings.Contains(out, "Renamed") {
		t.Fatalf("patch: %d %s", code, out)
	}
	if code, _ := s.do("PATCH", "/api/harness/session/"+id, `{}`); code != 400 {
		t.Fatalf("empty patch: %d", code)
	}
	if code, out := s.do("GET", "/api/harness/session/list?projectRoot="+s.root, ""); code != 200 || !strings.Contains(out, `"title":"Renamed"`) || !strings.Contains(out, `"engine":"anthropic"`) {
		t.Fatalf("list: %d %s", code, out)
	}
}

// The native engine behind the gateway: a tool turn over SSE, the
// history intact after a restart, an interrupt.
func TestNativeEngineThroughTheGateway(t *testing.T) {
	state := t.TempDir()
	s := newServerWith(t, func(c *harness.Config) { c.StateDir = state }, nil)
	os.WriteFile(filepath.Join(s.root, "notes.txt"), []byte("remember the APRICOT\n"), 0o644)
	s.api.Script(
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("Reading it."), claudetest.ToolUse("t1", "read", map[string]any{"path": "notes.txt"})}},
		claudetest.TextReply("It says APRICOT."),
	)
	_, out := s.createJSON(map[string]any{"engine": "anthropic"})
	id := sessionID(t, out)
	evs := s.turnSSE(id, "what do my notes say?")
	checkTurnEvents(t, id, 0, evs)
	var kinds []string
	for _, e := range evs {
		if e.Event.Type != event.TypeUsageUpdate { // the model call's, between its tool's start and result
			kinds = append(kinds, string(e.Event.Type))
		}
	}
	joined := strings.Join(kinds, ",")
	if !strings.HasPrefix(joined, "user:message,session:init,") || !strings.Contains(joined, "tool:start,tool:result") || !strings.HasSuffix(joined, "session:complete,process:exit") {
		t.Fatalf("events %s", joined)
	}
	for _, e := range evs {
		if e.Event.Type == event.TypeToolResult && !strings.Contains(e.Event.ToolResult.Content, "APRICOT") {
			t.Fatalf("tool result %+v", e.Event.ToolResult)
		}
	}

	// Restart: a new Harness and gateway over the same state and project.
	s2 := newServerWith(t, func(c *harness.Config) { c.StateDir = state; c.Roots = []string{s.root} }, nil)
	s2.api.Script(claudetest.TextReply("You asked about your notes."))
	evs = s2.turnSSE(id, "what did I ask?")
	if got := evs[len(evs)-2].Event.Type; got != event.TypeSessionComplete {
		t.Fatalf("second turn ended %s", got)
	}
	msgs := s2.api.Requests()[len(s2.api.Requests())-1].Messages
	if len(msgs) != 5 || msgs[0].Content[0].Text != "what do my notes say?" {
		t.Fatalf("after a restart the model got %d messages", len(msgs))
	}

	// Interrupt mid-stream.
	s2.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("long words ", 300))}, ChunkSize: 4, ChunkDelay: 20 * time.Millisecond})
	b, _ := json.Marshal(map[string]string{"sessionId": id, "message": "talk a lot"})
	resp := s2.send("POST", "/api/harness/turn?events=all", string(b))
	defer resp.Body.Close()
	interrupted := false
	evs = events(readSSE(t, resp.Body, func(e sseEvent) bool {
		if e.Event.Type == event.TypeChatDelta && !interrupted {
			interrupted = true
			if code, out := s2.do("POST", "/api/harness/interrupt", `{"sessionId":"`+id+`"}`); code != 200 {
				t.Errorf("interrupt: %d %s", code, out)
			}
		}
		return e.Event.Type == event.TypeProcessExit
	}))
	end := evs[len(evs)-2].Event
	if end.Type != event.TypeSessionError || end.Error.Kind != event.ErrorInterrupted {
		t.Fatalf("interrupted turn ended %+v", end)
	}
}

// Approvals over HTTP: the request reaches a reader, a second reader that
// joins later sees it too, one answer wins (200), the others get 409.
func TestApprovalOverHTTP(t *testing.T) {
	s := newServerWith(t, func(c *harness.Config) { c.Approvals, c.PermissionMode = true, "default" }, nil)
	s.api.SetResponder(touchMarker)
	_, out := s.createJSON(map[string]any{})
	id := sessionID(t, out)
	b, _ := json.Marshal(map[string]string{"sessionId": id, "message": "make a marker"})
	resp := s.send("POST", "/api/harness/turn?events=all", string(b))
	defer resp.Body.Close()
	var reqID string
	evs := events(readSSE(t, resp.Body, func(e sseEvent) bool {
		if e.Event.Type == event.TypeApprovalRequested {
			reqID = e.Event.Approval.RequestID
			// A reader joining now replays the request from the log.
			late := s.send("GET", fmt.Sprintf("/api/harness/session/%s/events?after=0&events=all", id), "")
			seen := false
			readSSE(t, late.Body, func(e sseEvent) bool {
				seen = seen || e.Event.Type == event.TypeApprovalRequested
				return seen
			})
			late.Body.Close()
			if !seen {
				t.Error("a late reader did not see the pending request")
			}
			if _, out := s.do("GET", "/api/harness/session/"+id, ""); !strings.Contains(out, reqID) {
				t.Errorf("GET session does not list the pending request: %s", out)
			}
			if code, _ := s.do("POST", "/api/harness/approval", `{"sessionId":"`+id+`","requestId":"nope","decision":"allow"}`); code != 404 {
				t.Errorf("unknown request: %d", code)
			}
			if code, _ := s.do("POST", "/api/harness/approval", `{"sessionId":"`+id+`","requestId":"`+reqID+`","decision":"maybe"}`); code != 400 {
				t.Errorf("bad decision: %d", code)
			}
			var wg sync.WaitGroup
			codes := make([]int, 4)
			for i := range codes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					codes[i], _ = s.do("POST", "/api/harness/approval", `{"sessionId":"`+id+`","requestId":"`+reqID+`","decision":"allow"}`)
				}()
			}
			wg.Wait()
			won := 0
			for _, c := range codes {
				if c == 200 {
					won++
				} else if c != 409 {
					t.Errorf("answer: %d", c)
				}
			}
			if won != 1 {
				t.Errorf("%d answers won: %v", won, codes)
			}
		}
		return e.Event.Type == event.TypeProcessExit
	}))
	if reqID == "" {
		t.Fatal("no approval:requested")
	}
	if _, err := os.Stat(filepath.Join(s.root, "marker")); err != nil {
		t.Fatalf("the allowed tool did not run: %v", err)
	}
	var resolved *event.ApprovalResolved
	for _, e := range evs {
		if e.Event.Type == event.TypeApprovalResolved {
			resolved = e.Event.Resolved
		}
	}
	if resolved == nil || resolved.Decision != "allow" || resolved.By != "user" {
		t.Fatalf("resolved %+v", resolved)
	}
	if code, _ := s.do("POST", "/api/harness/approval", `{"sessionId":"`+id+`","requestId":"`+reqID+`","decision":"deny"}`); code != 409 {
		t.Fatalf("answer after the turn: %d, want 409", code)
	}
}

// Bad paths under /api/harness/ get a JSON 400 or 404, never a redirect.
func TestUncleanPathsAreNotRedirected(t *testing.T) {
	s := newServer(t, nil)
	for _, p := range []string{
		"/api/harness/session/..%2F..%2Fetc%2Fpasswd",
		"/api/harness/session/%2e%2e",
		"/api/harness/session/..",
		"/api/harness//session/list",
		"/api/harness/session/./list",
		"/api/harness/../harness/health",
	} {
		for _, m := range []string{"GET", "DELETE"} {
			code, _ := s.do(m, p, "") // do checks the body is {"error":…}
			if code != 400 && code != 404 && code != 405 {
				t.Errorf("%s %s: %d, want a JSON 400/404", m, p, code)
			}
		}
	}
}
