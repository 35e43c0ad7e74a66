package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/eventsel"
)

// specOnly is evs without the types outside 004's UIEvent union.
func specOnly(evs []sseEvent) []sseEvent {
	return slices.DeleteFunc(slices.Clone(evs), func(e sseEvent) bool { return !slices.Contains(eventsel.Spec, e.Event.Type) })
}

// sseIDs is each event's id and data, to compare streams.
func sseIDs(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = strconv.FormatInt(e.ID, 10) + " " + e.Data
	}
	return out
}

func (s *testServer) stream(method, path, body string, header ...string) []sseEvent {
	s.t.Helper()
	resp := s.send(method, path, body, header...)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		s.t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
	}
	return events(readSSE(s.t, resp.Body, nil))
}

// A client that knows only 004's UIEvent union gets nothing else, on
// both streams, from a turn that also had the user's message, thinking
// and usage; ?events= opts in (all, or groups); Last-Event-ID resumes a
// filtered stream across its gaps, from any id.
func TestStreamsSendSpecTypesByDefault(t *testing.T) {
	s := newServer(t, nil)
	os.WriteFile(filepath.Join(s.root, "notes.txt"), []byte("remember the APRICOT\n"), 0o644)
	s.api.Script(
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.Thinking("Let me look at the notes."), claudetest.Text("Reading them."),
			claudetest.ToolUse("", "Read", map[string]any{"file_path": filepath.Join(s.root, "notes.txt")})}, ChunkSize: 4},
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("They say APRICOT.")}, ChunkSize: 4},
	)
	id := s.create("", "direct")
	body := `{"sessionId":"` + id + `","message":"what do my notes say?"}`

	turn := s.stream("POST", "/api/harness/turn", body)
	var types []string
	for _, e := range turn {
		types = append(types, string(e.Event.Type))
		if !slices.Contains(eventsel.Spec, e.Event.Type) {
			t.Errorf("the default turn stream sent %s", e.Data)
		}
	}
	for _, want := range eventsel.Spec {
		if want != event.TypeSessionError && !slices.Contains(types, string(want)) {
			t.Errorf("no %s in the turn: %s", want, strings.Join(types, ","))
		}
	}
	if types[len(types)-1] != string(event.TypeProcessExit) {
		t.Fatalf("the turn did not end with process:exit: %s", strings.Join(types, ","))
	}

	all := s.stream("GET", "/api/harness/session/"+id+"/events?events=all", "")
	checkTurnEvents(t, id, 0, all) // everything, ids 1, 2, 3… with no gap
	for _, typ := range []event.Type{event.TypeUserMessage, event.TypeThinkingDelta, event.TypeUsageUpdate} {
		if !slices.ContainsFunc(all, func(e sseEvent) bool { return e.Event.Type == typ }) {
			t.Errorf("the turn had no %s to leave out", typ)
		}
	}
	want := specOnly(all)
	if !slices.Equal(sseIDs(turn), sseIDs(want)) {
		t.Errorf("the turn stream is not the log's spec events:\n got %q\nwant %q", sseIDs(turn), sseIDs(want))
	}
	if got := s.stream("GET", "/api/harness/session/"+id+"/events", ""); !slices.Equal(sseIDs(got), sseIDs(want)) {
		t.Errorf("the default replay is not the log's spec events:\n got %q\nwant %q", sseIDs(got), sseIDs(want))
	}

	// Groups: what they name, besides the spec types; repeated params add up.
	got := s.stream("GET", "/api/harness/session/"+id+"/events?events=usage&events=thinking", "")
	wantSome := slices.DeleteFunc(slices.Clone(all), func(e sseEvent) bool {
		return !slices.Contains(eventsel.Spec, e.Event.Type) && e.Event.Type != event.TypeUsageUpdate && e.Event.Type != event.TypeRateLimit && e.Event.Type != event.TypeThinkingDelta
	})
	if !slices.Equal(sseIDs(got), sseIDs(wantSome)) {
		t.Errorf("?events=usage&events=thinking:\n got %q\nwant %q", sseIDs(got), sseIDs(wantSome))
	}

	// Resume from every id of the log, a left-out one too (a client that
	// had it from an all stream): the spec events after it, nothing lost,
	// nothing repeated.
	for _, from := range all {
		after := strconv.FormatInt(from.ID, 10)
		tail := slices.DeleteFunc(slices.Clone(want), func(e sseEvent) bool { return e.ID <= from.ID })
		if got := s.stream("GET", "/api/harness/session/"+id+"/events", "", "Last-Event-ID", after); !slices.Equal(sseIDs(got), sseIDs(tail)) {
			t.Fatalf("resumed after %s (%s):\n got %q\nwant %q", after, from.Event.Type, sseIDs(got), sseIDs(tail))
		}
	}

	// A name the gateway does not know is 400, on both routes, and starts
	// no turn.
	for _, bad := range []string{"nope", "usage,nope", "ALL"} {
		if code, out := s.do("GET", "/api/harness/session/"+id+"/events?events="+bad, ""); code != 400 || !strings.Contains(out, "events") {
			t.Errorf("GET events?events=%s: %d %s", bad, code, out)
		}
		if code, out := s.do("POST", "/api/harness/turn?events="+bad, body); code != 400 {
			t.Errorf("POST turn?events=%s: %d %s", bad, code, out)
		}
	}
	if again := s.stream("GET", "/api/harness/session/"+id+"/events?events=all", ""); len(again) != len(all) {
		t.Errorf("a refused turn wrote %d events", len(again)-len(all))
	}

	// ?events=all on a turn: every event, the same as the log's.
	turn2 := s.stream("POST", "/api/harness/turn?events=all", `{"sessionId":"`+id+`","message":"and again?"}`)
	checkTurnEvents(t, id, all[len(all)-1].ID, turn2)
	if turn2[0].Event.Type != event.TypeUserMessage {
		t.Errorf("?events=all turn starts with %s", turn2[0].Data)
	}
}

// touchMarker answers a turn with a Bash tool use (touch marker), which
// asks a person in permission mode default, then "done".
func touchMarker(r *claudetest.Request) claudetest.Reply {
	if len(r.ToolResults()) == 0 {
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash", map[string]any{"command": "touch marker"})}}
	}
	return claudetest.TextReply("done")
}

// A turn that waits for a person, on a default stream: the spec events
// before the wait reach the client (the left-out approval:requested ends
// the burst, which is still flushed), but the request itself does not:
// a client of a server with approvals must ask for approval events. Once
// answered elsewhere, the turn streams on to its end.
func TestDefaultStreamAroundAnApproval(t *testing.T) {
	s := newServerWith(t, func(c *harness.Config) { c.Approvals, c.PermissionMode = true, "default" }, nil)
	s.api.SetResponder(touchMarker)
	id := s.create("", "direct")
	resp := s.send("POST", "/api/harness/turn", `{"sessionId":"`+id+`","message":"make a marker"}`)
	defer resp.Body.Close()
	answered := false
	evs := events(readSSE(t, resp.Body, func(e sseEvent) bool {
		if e.Event.Type == event.TypeToolStart && !answered {
			answered = true
			var env envelopeJSON
			waitFor(t, "the pending approval", func() bool {
				_, out := s.do("GET", "/api/harness/session/"+id, "")
				return json.Unmarshal([]byte(out), &env) == nil && len(env.PendingApprovals) == 1
			})
			if code, out := s.do("POST", "/api/harness/approval", `{"sessionId":"`+id+`","requestId":"`+env.PendingApprovals[0].RequestID+`","decision":"allow"}`); code != 200 {
				t.Fatalf("approval: %d %s", code, out)
			}
		}
		return e.Event.Type == event.TypeProcessExit
	}))
	if !answered {
		t.Fatal("no tool:start before the approval")
	}
	for _, e := range evs {
		if !slices.Contains(eventsel.Spec, e.Event.Type) {
			t.Errorf("the default stream sent %s", e.Data)
		}
	}
	if last := evs[len(evs)-1].Event; last.Type != event.TypeProcessExit || last.Exit.Code != 0 {
		t.Errorf("the turn ended %+v", last)
	}
	if _, err := os.Stat(filepath.Join(s.root, "marker")); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
}
