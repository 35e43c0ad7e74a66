package gateway

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// 004 Phase 3: list() returns summaries "sorted by updatedAt descending",
// and save() runs after every completed turn: a turn on the older of two
// sessions puts it first. (TestListNewestFirst cannot tell updatedAt
// from createdAt: its sessions have no turns.)
func TestListIsByUpdatedAt(t *testing.T) {
	s := newServer(t, nil)
	older := s.create("", "direct")
	newer := s.create("", "workbench")
	list := func() []harness.SessionSummary {
		code, body := s.do("GET", "/api/harness/session/list?projectRoot="+s.root, "")
		var l []harness.SessionSummary
		if code != 200 || json.Unmarshal([]byte(body), &l) != nil || len(l) != 2 {
			t.Fatalf("list = %d %s", code, body)
		}
		return l
	}
	if l := list(); l[0].ID != newer {
		t.Fatalf("before any turn the list starts with %s, want the newer %s", l[0].ID, newer)
	}
	s.api.Script(claudetest.TextReply("hello"))
	s.turnSSE(older, "hi")
	l := list()
	if l[0].ID != older || !l[0].UpdatedAt.After(l[1].UpdatedAt) || l[0].ConversationID == nil {
		t.Errorf("after a turn on %s the list is %s (updated %s, claudeSessionId %v), %s (updated %s): want it first, saved with its claudeSessionId",
			older, l[0].ID, l[0].UpdatedAt, l[0].ConversationID, l[1].ID, l[1].UpdatedAt)
	}
}

// 004 Phase 3: delete() "remove[s] session file, kill[s] associated
// process if running". DELETE during a turn: 204; the turn's stream ends
// with process:exit last; no Claude Code process is left; the file
// {projectRoot}/.chirality/sessions/{id}.json is gone, and the session
// is 404 afterwards.
func TestDeleteDuringATurn(t *testing.T) {
	mark := fmt.Sprintf("HARNESS_DELETE_TEST=%d", time.Now().UnixNano())
	s := newServerWith(t, func(c *harness.Config) { c.ChildEnv = append(c.ChildEnv, mark) }, nil)
	id := s.create("", "workbench")
	file := filepath.Join(s.root, ".chirality", "sessions", id+".json")
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the session is not at %s: %v", file, err)
	}
	s.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("slow words ", 400))}, ChunkSize: 4, ChunkDelay: 20 * time.Millisecond})
	resp := s.send("POST", "/api/harness/turn", `{"sessionId":"`+id+`","message":"talk slowly"}`)
	defer resp.Body.Close()
	deleted := false
	evs := events(readSSE(t, resp.Body, func(e sseEvent) bool {
		if e.Event.Type == event.TypeChatDelta && !deleted {
			deleted = true
			if len(withEnv(mark)) == 0 {
				t.Error("no Claude Code process seen mid-turn: the process check below would prove nothing")
			}
			if code, body := s.do("DELETE", "/api/harness/session/"+id, ""); code != 204 || body != "" {
				t.Errorf("DELETE during the turn = %d %q, want 204 and no body", code, body)
			}
		}
		return false
	}))
	if !deleted || len(evs) == 0 || evs[len(evs)-1].Event.Type != event.TypeProcessExit {
		t.Fatalf("the turn's stream did not end with process:exit: %+v", evs)
	}
	waitFor(t, "no process left after DELETE", func() bool { return len(withEnv(mark)) == 0 })
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("%s after DELETE: %v", file, err)
	}
	if code, _ := s.do("GET", "/api/harness/session/"+id, ""); code != 404 {
		t.Errorf("GET after DELETE = %d, want 404", code)
	}
}
