package gateway

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// TestPersonaBudget: a persona's max_cost_usd is a budget of each of its
// sessions, on Claude Code against the fake Messages API, where every
// model call of the session costs what 100,000 input tokens cost (c).
//
// A persona of $0.20 stops the turn whose first call crosses it, before
// the model is called again, with budget_exceeded of scope persona; the
// next turn answers 422 naming the persona, and a session budget raised
// above it changes nothing (the tightest wins).
//
// A persona a person chose at 1.5c: after a turn (c spent), a lowering
// written into its file (as an agent can) applies at once (422); a raise
// to 100c does not: the turn says trust:required and is stopped by the
// trusted 1.5c; once a person trusts the file the session runs again.
func TestPersonaBudget(t *testing.T) {
	s := newServer(t, nil)
	os.WriteFile(filepath.Join(s.root, "notes.txt"), []byte("apricot\n"), 0o644)
	var mu sync.Mutex
	calls, readFirst := 0, true
	s.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		if !r.Stream || len(r.Tools) == 0 {
			return claudetest.TextReply("side")
		}
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 && readFirst {
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("Reading."),
				claudetest.ToolUse("", "Read", map[string]any{"file_path": filepath.Join(s.root, "notes.txt")})}, InputTokens: 100_000}
		}
		if readFirst {
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("SECOND CALL")}}
		}
		return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("Done.")}, InputTokens: 100_000}
	})
	writePersona := func(id, budget string) {
		t.Helper()
		os.MkdirAll(filepath.Join(s.root, "agents"), 0o755)
		content := "---\ndescription: counts its pennies\n" + budget + "---\nYou are careful.\n"
		if err := os.WriteFile(filepath.Join(s.root, "agents", "AGENT_"+id+".md"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	turn := func(id string) (end event.Event, trust []*event.TrustRequired) {
		t.Helper()
		evs := s.turnSSE(id, "look around")
		checkTurnEvents(t, id, evs[0].ID-1, evs)
		for _, e := range evs {
			if e.Event.Type == event.TypeTrustRequired {
				trust = append(trust, e.Event.Trust)
			}
		}
		return evs[len(evs)-2].Event, trust
	}
	refused := func(id string, want ...string) {
		t.Helper()
		b, _ := json.Marshal(map[string]string{"sessionId": id, "message": "go on"})
		code, out := s.do("POST", "/api/harness/turn?events=all", string(b))
		if code != 422 {
			t.Fatalf("the next turn: %d %s, want 422", code, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Fatalf("the 422 %s does not say %q", out, w)
			}
		}
	}

	// 1. A persona budget stops a turn.
	writePersona("thrifty", "max_cost_usd: 0.2\n")
	_, out := s.createJSON(map[string]any{"persona": "thrifty"})
	id := sessionID(t, out)
	end, _ := turn(id)
	if end.Type != event.TypeSessionError || end.Error.Kind != event.ErrorBudgetExceeded || end.Error.Budget == nil ||
		end.Error.Budget.Scope != "persona" || end.Error.Budget.MaxCostUSD != 0.2 || end.Error.Budget.SpentCostUSD < 0.2 {
		t.Fatalf("the turn ended with %s %+v, want budget_exceeded of the persona's $0.20", end.Type, end.Error)
	}
	if !strings.Contains(end.Error.Error, "persona thrifty") {
		t.Errorf("the session:error %q does not name the persona", end.Error.Error)
	}
	mu.Lock()
	n := calls
	mu.Unlock()
	if n != 1 {
		t.Errorf("%d model calls, want 1: the turn was not stopped before the next call", n)
	}
	c := end.Error.Budget.SpentCostUSD // what one call of 100,000 input tokens costs
	refused(id, "persona thrifty", "0.2000", "max_cost_usd")
	if code, out := s.do("PATCH", "/api/harness/session/"+id, `{"budget":{"maxCostUsd":50}}`); code != 200 {
		t.Fatalf("raising the session's budget: %d %s", code, out)
	}
	refused(id, "persona thrifty", "0.2000")

	// 2. The file of a persona a person chose at 1.5c.
	mu.Lock()
	readFirst = false
	mu.Unlock()
	money := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	trusted := 1.5 * c
	writePersona("worker", "max_cost_usd: "+money(trusted)+"\n")
	_, out = s.createJSON(map[string]any{"persona": "worker"})
	id = sessionID(t, out)
	if end, tr := turn(id); end.Type != event.TypeSessionComplete || len(tr) != 0 {
		t.Fatalf("the first turn (c = $%.4f of $%.4f): %s %+v, trust:required %+v", c, trusted, end.Type, end.Error, tr)
	}

	writePersona("worker", "max_cost_usd: "+money(c/2)+"\n")
	refused(id, "persona worker", money(c/2))

	writePersona("worker", "max_cost_usd: "+money(100*c)+"\n")
	end, tr := turn(id)
	raised, _ := strconv.ParseFloat(money(100*c), 64)
	if len(tr) != 1 || tr[0].Kind != "persona" || len(tr[0].Changes) != 1 || tr[0].Changes[0].Field != "max_cost_usd" ||
		tr[0].Changes[0].Now != strconv.FormatFloat(raised, 'f', -1, 64) {
		t.Fatalf("the raise: trust:required %+v, want the persona's max_cost_usd", tr)
	}
	if end.Type != event.TypeSessionError || end.Error.Kind != event.ErrorBudgetExceeded || end.Error.Budget.Scope != "persona" ||
		fmt.Sprintf("%.4f", end.Error.Budget.MaxCostUSD) != money(trusted) {
		t.Fatalf("after the untrusted raise the turn ended with %s %+v, want budget_exceeded of the trusted $%s", end.Type, end.Error, money(trusted))
	}
	refused(id, "persona worker", money(trusted))

	// 3. A person trusts the file: its budget now applies.
	code, out := s.do("GET", "/api/harness/trust?projectRoot="+url.QueryEscape(s.root), "")
	var list struct {
		Items []struct{ Kind, Name, Path, Hash string }
	}
	if code != 200 || json.Unmarshal([]byte(out), &list) != nil || len(list.Items) != 1 || list.Items[0].Name != "worker" {
		t.Fatalf("GET trust: %d %s, want the persona worker", code, out)
	}
	it := list.Items[0]
	body, _ := json.Marshal(map[string]string{"projectRoot": s.root, "kind": it.Kind, "name": it.Name, "path": it.Path, "hash": it.Hash})
	if code, out := s.do("POST", "/api/harness/trust", string(body)); code != 200 {
		t.Fatalf("POST trust: %d %s", code, out)
	}
	if end, tr := turn(id); end.Type != event.TypeSessionComplete || len(tr) != 0 {
		t.Fatalf("after a person trusted the raise: %s %+v, trust:required %+v", end.Type, end.Error, tr)
	}
}
