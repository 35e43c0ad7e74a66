package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/event"
)

// The Codex engine through the gateway, with the bar of the CLI engine:
// session:init first, exactly one ending, process:exit last; the same
// events replayed from /events; an interrupt that leaves no process.
func TestCodexThroughTheGateway(t *testing.T) {
	bin, err := filepath.Abs("../node_modules/.bin/codex")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the pinned codex is missing (make cli): %v", err)
	}
	t.Setenv("HARNESS_CODEX_BIN", bin)
	fake, err := codextest.NewFakeAPI(codextest.Reply{Text: "hello from codex", Deltas: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	codexHome := filepath.Join(t.TempDir(), "codex")
	if _, err := fake.WriteConfig(codexHome); err != nil {
		t.Fatal(err)
	}
	s := newServerWith(t, func(c *harness.Config) { c.ChildEnv = append(c.ChildEnv, "CODEX_HOME="+codexHome) }, nil)
	_, out := s.createJSON(map[string]any{"engine": "codex"})
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
	if !strings.HasPrefix(j, "user:message,session:init,") || !strings.HasSuffix(j, "session:complete,process:exit") || text != "hello from codex" {
		t.Fatalf("codex turn: %s %q", j, text)
	}
	init := evs[1].Event.Init
	if init.Engine != "codex" || init.ConversationID == "" {
		t.Fatalf("session:init %+v", init)
	}
	// Replayed from the log: the same events.
	resp := s.send("GET", "/api/harness/session/"+id+"/events?after=0&events=all", "")
	replay := events(readSSE(t, resp.Body, nil))
	resp.Body.Close()
	if len(replay) != len(evs) || replay[len(replay)-1].Data != evs[len(evs)-1].Data {
		t.Fatalf("replay %d events, live %d", len(replay), len(evs))
	}

	// Interrupted mid-answer: session:error interrupted, no codex left.
	fake.Script(codextest.Reply{Text: strings.Repeat("slow words ", 80), Deltas: 80, ChunkDelay: 50 * time.Millisecond})
	b, _ := json.Marshal(map[string]string{"sessionId": id, "message": "talk slowly"})
	r := s.send("POST", "/api/harness/turn?events=all", string(b))
	defer r.Body.Close()
	stopped := false
	evs = events(readSSE(t, r.Body, func(e sseEvent) bool {
		if e.Event.Type == event.TypeChatDelta && !stopped {
			stopped = true
			if len(withEnv("CODEX_HOME="+codexHome)) == 0 {
				t.Error("no codex process seen mid-turn: the process check below would prove nothing")
			}
			if code, out := s.do("POST", "/api/harness/interrupt", `{"sessionId":"`+id+`"}`); code != 200 {
				t.Errorf("interrupt: %d %s", code, out)
			}
		}
		return e.Event.Type == event.TypeProcessExit
	}))
	if end := evs[len(evs)-2].Event; end.Type != event.TypeSessionError || end.Error.Kind != event.ErrorInterrupted {
		t.Fatalf("interrupted codex turn ended %+v", end)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := withEnv("CODEX_HOME=" + codexHome)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("codex processes left: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// withEnv lists the processes whose environment holds kv (the children
// of this test's codex engine: CODEX_HOME is theirs alone).
func withEnv(kv string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || e.Name() == "self" || e.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		for _, v := range strings.Split(string(b), "\x00") {
			if v == kv {
				out = append(out, e.Name())
			}
		}
	}
	return out
}
