package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// TestBudgetStopsATurn: a Claude Code session with a $0.20 budget whose
// first model call costs $0.50 (100,000 input tokens on Opus) ends that
// turn with session:error budget_exceeded before the model is called
// again; the next turn is refused with 422 naming the budget; raising it
// (PATCH) lets the session run again.
func TestBudgetStopsATurn(t *testing.T) {
	s := newServer(t, nil)
	os.WriteFile(filepath.Join(s.root, "notes.txt"), []byte("apricot\n"), 0o644)
	var mu sync.Mutex
	calls := 0
	s.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		if !r.Stream || len(r.Tools) == 0 {
			return claudetest.TextReply("side")
		}
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("Reading."),
				claudetest.ToolUse("", "Read", map[string]any{"file_path": filepath.Join(s.root, "notes.txt")})}, InputTokens: 100_000}
		}
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("SECOND CALL")}}
	})
	code, out := s.createJSON(map[string]any{"budget": map[string]any{"maxCostUsd": 0.2}})
	if code != 201 || !strings.Contains(out, `"budget":{"maxCostUsd":0.2}`) {
		t.Fatalf("create with a budget: %d %s", code, out)
	}
	id := sessionID(t, out)

	evs := s.turnSSE(id, "read my notes")
	checkTurnEvents(t, id, 0, evs)
	var end *event.SessionError
	for _, e := range evs {
		if e.Event.Type == event.TypeSessionError {
			end = e.Event.Error
		}
		if e.Event.Type == event.TypeChatDelta && strings.Contains(e.Event.Text, "SECOND") {
			t.Errorf("the model was called again after the budget was crossed")
		}
	}
	if end == nil || end.Kind != event.ErrorBudgetExceeded || end.Budget == nil || end.Budget.MaxCostUSD != 0.2 || end.Budget.SpentCostUSD < 0.5 {
		t.Fatalf("the turn ended with %+v, want budget_exceeded of the $0.20 budget having spent ≥ $0.50", end)
	}
	mu.Lock()
	n := calls
	mu.Unlock()
	if n != 1 {
		t.Errorf("%d model calls, want 1: the turn was not stopped before the next call", n)
	}

	b, _ := json.Marshal(map[string]string{"sessionId": id, "message": "go on"})
	code, out = s.do("POST", "/api/harness/turn", string(b))
	if code != 422 || !strings.Contains(out, "budget") || !strings.Contains(out, "0.2000") {
		t.Fatalf("the next turn: %d %s, want 422 naming the budget", code, out)
	}

	code, out = s.do("PATCH", "/api/harness/session/"+id, `{"budget":{"maxCostUsd":5}}`)
	if code != 200 || !strings.Contains(out, `"maxCostUsd":5`) {
		t.Fatalf("raising the budget: %d %s", code, out)
	}
	evs = s.turnSSE(id, "go on")
	if last := evs[len(evs)-2].Event; last.Type != event.TypeSessionComplete {
		t.Fatalf("after raising the budget the turn ended with %s", last.Type)
	}
	if code, out := s.do("PATCH", "/api/harness/session/"+id, `{"budget":{"maxCostUsd":-1}}`); code != 400 {
		t.Errorf("a negative budget: %d %s", code, out)
	}
}
