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

// acpAgents are the built-in ACP engines with their offline environment
// against the gateway's fake Messages API (shared/docs/engines.md).
var acpAgents = []struct {
	name, bin, binVar string
	env               func(apiURL string) []string
}{
	{"opencode", "opencode", "HARNESS_OPENCODE_BIN", func(u string) []string {
		return []string{`OPENCODE_CONFIG_CONTENT={"model":"fake/fake-model","provider":{"fake":{"npm":"@ai-sdk/anthropic","options":{"baseURL":"` + u +
			`/v1","apiKey":"x"},"models":{"fake-model":{"name":"Fake","tool_call":true}}}}}`,
			"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1"}
	}},
	{"claude-acp", "claude-agent-acp", "HARNESS_CLAUDE_ACP_BIN", func(string) []string { return []string{"IS_SANDBOX="} }},
	{"copilot", "copilot", "HARNESS_COPILOT_BIN", func(u string) []string {
		return []string{"COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL=" + u, "COPILOT_PROVIDER_TYPE=anthropic",
			"COPILOT_PROVIDER_API_KEY=x", "COPILOT_MODEL=claude-sonnet-4.5"}
	}},
}

// Every ACP engine through the gateway, with the bar of the others:
// session:init first, exactly one ending, process:exit last; the same
// events replayed from /events; an interrupt that ends the turn
// interrupted and leaves nothing but the session's own agent; a second
// turn on the same agent process; DELETE stops it, leaving no process.
func TestACPEnginesThroughTheGateway(t *testing.T) {
	for _, a := range acpAgents {
		bin, err := filepath.Abs("../node_modules/.bin/" + a.bin)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("the pinned %s is missing (make cli): %v", a.bin, err)
		}
		t.Setenv(a.binVar, bin)
	}
	for _, a := range acpAgents {
		t.Run(a.name, func(t *testing.T) {
			mark := fmt.Sprintf("HARNESS_ACP_TEST=%s-%d", a.name, time.Now().UnixNano())
			s := newServerWith(t, func(c *harness.Config) {
				url := ""
				for _, kv := range c.ChildEnv {
					if v, ok := strings.CutPrefix(kv, "ANTHROPIC_BASE_URL="); ok {
						url = v
					}
				}
				c.ChildEnv = append(append(c.ChildEnv, a.env(url)...), mark)
			}, nil)
			s.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
				if len(r.Tools) == 0 {
					return claudetest.TextReply("A title")
				}
				last := r.LastUserText()
				switch {
				case strings.Contains(last, "again"):
					return claudetest.TextReply("hello again")
				case strings.Contains(last, "talk slowly"):
					return claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("slow words ", 150))}, ChunkDelay: 40 * time.Millisecond, ChunkSize: 8}
				}
				return claudetest.TextReply("hello from " + a.name)
			})

			code, out := s.do("GET", "/api/harness/engines", "")
			var st []struct {
				Name, Kind string
				Available  bool
			}
			if code != 200 || json.Unmarshal([]byte(out), &st) != nil {
				t.Fatalf("engines %d %s", code, out)
			}
			found := false
			for _, e := range st {
				if e.Name == a.name {
					found = e.Kind == "acp" && e.Available
				}
			}
			if !found {
				t.Fatalf("GET engines has no available %s: %s", a.name, out)
			}

			_, out = s.createJSON(map[string]any{"engine": a.name})
			id := sessionID(t, out)
			evs := s.turnSSE(id, "say hello")
			checkTurnEvents(t, id, 0, evs)
			var types []string
			text := ""
			for _, e := range evs {
				types = append(types, string(e.Event.Type))
				if e.Event.Type == event.TypeChatDelta {
					text += e.Event.Text
				}
			}
			j := strings.Join(types, ",")
			if !strings.HasPrefix(j, "user:message,session:init,") || !strings.HasSuffix(j, "session:complete,process:exit") || text != "hello from "+a.name {
				t.Fatalf("%s turn: %s %q", a.name, j, text)
			}
			if init := evs[1].Event.Init; init.Engine != a.name || init.ConversationID == "" {
				t.Fatalf("session:init %+v", init)
			}
			resp := s.send("GET", "/api/harness/session/"+id+"/events?after=0&events=all", "")
			replay := events(readSSE(t, resp.Body, nil))
			resp.Body.Close()
			if len(replay) != len(evs) || replay[len(replay)-1].Data != evs[len(evs)-1].Data {
				t.Fatalf("replay %d events, live %d", len(replay), len(evs))
			}
			group := groupOf(t, withEnv(mark))
			if group == "" {
				t.Fatal("no agent process kept for the session: the process checks below would prove nothing")
			}

			// Interrupted mid-answer: session:error interrupted.
			b, _ := json.Marshal(map[string]string{"sessionId": id, "message": "talk slowly"})
			r := s.send("POST", "/api/harness/turn?events=all", string(b))
			var once sync.Once
			evs = events(readSSE(t, r.Body, func(e sseEvent) bool {
				if e.Event.Type == event.TypeChatDelta {
					once.Do(func() {
						if code, out := s.do("POST", "/api/harness/interrupt", `{"sessionId":"`+id+`"}`); code != 200 {
							t.Errorf("interrupt: %d %s", code, out)
						}
					})
				}
				return e.Event.Type == event.TypeProcessExit
			}))
			r.Body.Close()
			if end := evs[len(evs)-2].Event; end.Type != event.TypeSessionError || end.Error.Kind != event.ErrorInterrupted {
				t.Fatalf("interrupted turn ended %+v", end)
			}

			// The session goes on, on the same agent.
			evs = s.turnSSE(id, "once again")
			if end := evs[len(evs)-2].Event; end.Type != event.TypeSessionComplete {
				t.Fatalf("turn after the interrupt ended %+v", end)
			}
			if g := groupOf(t, withEnv(mark)); g != group {
				t.Errorf("agent process group %s, before %s: the session's agent must be kept, nothing else left", g, group)
			}

			// DELETE stops the session's agent.
			if code, out := s.do("DELETE", "/api/harness/session/"+id, ""); code != 200 && code != 204 {
				t.Fatalf("delete: %d %s", code, out)
			}
			deadline := time.Now().Add(15 * time.Second)
			for len(withEnv(mark)) > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("processes left after DELETE: %v", withEnv(mark))
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// groupOf is the one process group the processes are in ("" for none);
// it fails the test when they are in several.
func groupOf(t *testing.T, pids []string) string {
	t.Helper()
	group := ""
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // state ppid pgrp …
		if len(f) < 3 {
			continue
		}
		if group != "" && f[2] != group {
			t.Errorf("agent processes in groups %s and %s: something outlived its agent", group, f[2])
		}
		group = f[2]
	}
	return group
}
