package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/codex/codextest"
)

// uiEventFields are 004 §1.3's UIEvent union: for each type, its fields
// and their JSON types ("string|null": either). A default stream (no
// ?events=) carries these types only, each with these fields, whatever
// the session's engine: the GUI reads them without knowing the engine.
var uiEventFields = map[string]map[string]string{
	"chat:delta":       {"sessionId": "string", "text": "string"},
	"chat:complete":    {"sessionId": "string", "text": "string"},
	"tool:start":       {"sessionId": "string", "toolUseId": "string", "name": "string", "input": "object"},
	"tool:result":      {"sessionId": "string", "toolUseId": "string", "content": "string", "isError": "boolean"},
	"session:init":     {"sessionId": "string", "claudeSessionId": "string|null", "model": "string", "tools": "array"},
	"session:complete": {"sessionId": "string", "costUsd": "number", "usage": "object"},
	"session:error":    {"sessionId": "string", "error": "string"},
	"process:exit":     {"sessionId": "string", "code": "number|null", "signal": "string|null"},
}

// usageInfoFields is 004's UsageInfo: input_tokens and output_tokens
// required, the cache counts optional; all numbers.
var usageInfoFields = map[string]bool{"input_tokens": true, "output_tokens": true, "cache_read_input_tokens": false, "cache_creation_input_tokens": false}

func jsonType(raw json.RawMessage) string {
	switch {
	case len(raw) == 0:
		return "absent"
	case raw[0] == '"':
		return "string"
	case raw[0] == '{':
		return "object"
	case raw[0] == '[':
		return "array"
	case raw[0] == 't' || raw[0] == 'f':
		return "boolean"
	case raw[0] == 'n':
		return "null"
	}
	return "number"
}

// checkUIEvent reports how data, one SSE message of a default stream,
// departs from 004's UIEvent of its type.
func checkUIEvent(t *testing.T, engine, data string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatalf("%s: data %q: %v", engine, data, err)
	}
	var typ string
	_ = json.Unmarshal(m["type"], &typ)
	fields, ok := uiEventFields[typ]
	if !ok {
		t.Errorf("%s: a default stream sent %q, not a 004 UIEvent type", engine, typ)
		return
	}
	for f, want := range fields {
		got := jsonType(m[f])
		if !strings.Contains("|"+want+"|", "|"+got+"|") {
			t.Errorf("%s: %s.%s is %s (%s), 004 says %s", engine, typ, f, got, m[f], want)
		}
	}
	if typ == "session:init" && jsonType(m["tools"]) == "array" {
		var tools []json.RawMessage
		_ = json.Unmarshal(m["tools"], &tools)
		for _, x := range tools {
			if jsonType(x) != "string" {
				t.Errorf("%s: session:init.tools holds %s, 004 says string[]", engine, x)
			}
		}
	}
	if typ == "session:complete" && jsonType(m["usage"]) == "object" {
		var u map[string]json.RawMessage
		_ = json.Unmarshal(m["usage"], &u)
		for f, required := range usageInfoFields {
			got := jsonType(u[f])
			if (required || got != "absent") && got != "number" {
				t.Errorf("%s: session:complete.usage.%s is %s, 004's UsageInfo says number (usage %s)", engine, f, got, m["usage"])
			}
		}
	}
}

// usePinned sets the variable env to the pinned agent name of
// node_modules/.bin, which must be there (make cli).
func usePinned(t *testing.T, env, name string) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "node_modules", ".bin", name))
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		t.Fatalf("the pinned %s: %v (make cli)", name, err)
	}
	t.Setenv(env, bin)
}

// fakeCodexHome starts codex's fake Responses API answering reply, for
// the test, and returns a CODEX_HOME configured for it.
func fakeCodexHome(t *testing.T, reply codextest.Reply) string {
	t.Helper()
	fake, err := codextest.NewFakeAPI(reply)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	home := filepath.Join(t.TempDir(), "codex")
	if _, err = fake.WriteConfig(home); err != nil {
		t.Fatal(err)
	}
	return home
}

// Every engine's turn, on a default stream of POST /turn and of GET
// /session/{id}/events, is 004's UIEvents field for field.
func TestDefaultStreamIsUIEventsOnEveryEngine(t *testing.T) {
	usePinned(t, "HARNESS_CODEX_BIN", "codex")
	for _, a := range acpAgents {
		usePinned(t, a.binVar, a.bin)
	}
	codexHome := fakeCodexHome(t, codextest.Reply{Text: "hello from codex", Deltas: 3})
	s := newServerWith(t, func(c *harness.Config) {
		url := ""
		for _, kv := range c.ChildEnv {
			if v, ok := strings.CutPrefix(kv, "ANTHROPIC_BASE_URL="); ok {
				url = v
			}
		}
		extra := []string{"CODEX_HOME=" + codexHome}
		for _, a := range acpAgents {
			extra = append(extra, a.env(url)...)
		}
		c.ChildEnv = append(c.ChildEnv, extra...)
	}, nil)
	s.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		if len(r.Tools) == 0 {
			return claudetest.TextReply("A title")
		}
		return claudetest.TextReply("hello")
	})
	names := []string{"claude-code", "anthropic", "codex"}
	for _, a := range acpAgents {
		names = append(names, a.name)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			_, out := s.createJSON(map[string]any{"engine": name})
			id := sessionID(t, out)
			b, _ := json.Marshal(map[string]string{"sessionId": id, "message": "say hello"})
			resp := s.send("POST", "/api/harness/turn", string(b))
			if resp.StatusCode != 200 {
				t.Fatalf("turn: %d", resp.StatusCode)
			}
			live := events(readSSE(t, resp.Body, nil))
			resp.Body.Close()
			resp = s.send("GET", "/api/harness/session/"+id+"/events", "")
			replay := events(readSSE(t, resp.Body, nil))
			resp.Body.Close()
			// 004 §2.3: init first; deltas; result success → chat:complete
			// (the final text) + session:complete; process:exit last.
			var types []string
			deltas, final := "", ""
			for _, e := range live {
				types = append(types, string(e.Event.Type))
				checkUIEvent(t, name, e.Data)
				switch e.Event.Type {
				case "chat:delta":
					deltas += e.Event.Text
				case "chat:complete":
					final = e.Event.Text
				}
			}
			j := strings.Join(types, ",")
			if !regexp.MustCompile(`^session:init(,chat:delta)+,chat:complete,session:complete,process:exit$`).MatchString(j) || final == "" || final != deltas {
				t.Errorf("%s: default stream %s, deltas %q, chat:complete %q", name, j, deltas, final)
			}
			if len(replay) != len(live) {
				t.Errorf("%s: replay has %d events, the live stream %d", name, len(replay), len(live))
			}
			for _, e := range replay {
				checkUIEvent(t, name, e.Data)
			}
		})
	}
}
