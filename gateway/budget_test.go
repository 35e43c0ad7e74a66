package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/codex/codextest"
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
				claudetest.ToolUse("", "Read", map[string]any{"file_path": filepath.Join(s.root, "notes.txt")})}, InputTokens: 100_000,
				// The crossing call's usage comes with its message_delta; a real
				// call's stream then still takes a moment, in which the core's
				// interrupt lands. Without it the interrupt raced the CLI's
				// instant Read and next request, and lost under load.
				ChunkDelay: 150 * time.Millisecond}
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
	code, out = s.do("POST", "/api/harness/turn?events=all", string(b))
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

// TestBudgetOnCodexAndNative: the same on Codex and on the native loop:
// a first model call of 100,000 input tokens crosses a $0.05 budget; the
// turn ends budget_exceeded within one more model call at most; the next
// turn is refused with 422.
func TestBudgetOnCodexAndNative(t *testing.T) {
	t.Run("codex", func(t *testing.T) {
		bin, err := filepath.Abs("../node_modules/.bin/codex")
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("HARNESS_CODEX_BIN", bin)
		var mu sync.Mutex
		calls := 0
		fake, err := codextest.NewFakeAPI(codextest.Reply{Text: "default"})
		if err != nil {
			t.Fatal(err)
		}
		defer fake.Close()
		fake.SetResponder(func(*codextest.Request) codextest.Reply {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls == 1 {
				return codextest.Reply{Text: "Looking.", Call: &codextest.Call{Command: "echo hi"}, InputTokens: 100_000}
			}
			return codextest.Reply{Text: "SECOND CALL"}
		})
		codexHome := filepath.Join(t.TempDir(), "codex")
		if _, err := fake.WriteConfig(codexHome); err != nil {
			t.Fatal(err)
		}
		s := newServerWith(t, func(c *harness.Config) { c.ChildEnv = append(c.ChildEnv, "CODEX_HOME="+codexHome) }, nil)
		budgetTurn(t, s, map[string]any{"engine": "codex"}, func() int { mu.Lock(); defer mu.Unlock(); return calls })
	})
	t.Run("native", func(t *testing.T) {
		s := newServer(t, nil)
		os.WriteFile(filepath.Join(s.root, "notes.txt"), []byte("apricot\n"), 0o644)
		var mu sync.Mutex
		calls := 0
		s.api.SetResponder(func(*claudetest.Request) claudetest.Reply {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls == 1 {
				return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("Reading."),
					claudetest.ToolUse("t1", "read", map[string]any{"path": "notes.txt"})}, InputTokens: 100_000}
			}
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("SECOND CALL")}}
		})
		budgetTurn(t, s, map[string]any{"engine": "anthropic"}, func() int { mu.Lock(); defer mu.Unlock(); return calls })
	})
}

// budgetTurn creates a session with a $0.05 budget, runs the turn that
// crosses it and checks its end, the model calls made and the 422 after.
func budgetTurn(t *testing.T, s *testServer, create map[string]any, calls func() int) {
	t.Helper()
	create["budget"] = map[string]any{"maxCostUsd": 0.05}
	_, out := s.createJSON(create)
	id := sessionID(t, out)
	evs := s.turnSSE(id, "look around")
	checkTurnEvents(t, id, 0, evs)
	last := evs[len(evs)-2].Event
	if last.Type != event.TypeSessionError || last.Error.Kind != event.ErrorBudgetExceeded || last.Error.Budget.SpentCostUSD < 0.05 {
		t.Fatalf("the turn ended with %s %+v, want budget_exceeded", last.Type, last.Error)
	}
	if n := calls(); n > 2 {
		t.Errorf("%d model calls: the turn went on after the call that crossed the budget", n)
	}
	b, _ := json.Marshal(map[string]string{"sessionId": id, "message": "go on"})
	if code, out := s.do("POST", "/api/harness/turn?events=all", string(b)); code != 422 || !strings.Contains(out, "budget") {
		t.Fatalf("the next turn: %d %s, want 422", code, out)
	}
}
