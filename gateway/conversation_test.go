package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/httpguard"
)

// The conversation controls through the gateway, on the native engine
// (the fake Messages API answers in milliseconds): switch the model, list
// the turns, preview and rewind files and conversation, fork in the middle.
// Each step is checked where it lands: in the next request the fake API
// receives, in the project's files, in the event log.

// plainEngine is an engine with no conversation controls: the native engine
// under another name, its Controls hidden (the embedded interface promotes
// only engine.Engine's methods).
type plainEngine struct{ engine.Engine }

func (plainEngine) Name() string { return "plain" }

type turnRow struct {
	Seq        int64  `json:"seq"`
	Text       string `json:"text"`
	Checkpoint bool   `json:"checkpoint"`
	Files      bool   `json:"files"`
	Rewound    bool   `json:"rewound"`
}

func (s *testServer) turns(id string) []turnRow {
	s.t.Helper()
	code, out := s.do("GET", "/api/harness/session/"+id+"/turns", "")
	var rows []turnRow
	if code != 200 || json.Unmarshal([]byte(out), &rows) != nil {
		s.t.Fatalf("turns: %d %s", code, out)
	}
	return rows
}

// lastMessages is what the fake API got in its last request: the user texts
// of the conversation it was sent, in order.
func (s *testServer) lastUserTexts() []string {
	s.t.Helper()
	reqs := s.api.Requests()
	if len(reqs) == 0 {
		s.t.Fatal("no request reached the fake API")
	}
	var out []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role != "user" {
			continue
		}
		for _, c := range m.Content {
			if c.Text != "" {
				out = append(out, c.Text)
			}
		}
	}
	return out
}

func (s *testServer) storedEvents(id string) []sseEvent {
	s.t.Helper()
	resp := s.send("GET", "/api/harness/session/"+id+"/events?events=all", "")
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		s.t.Fatalf("events: %d", resp.StatusCode)
	}
	return events(readSSE(s.t, resp.Body, nil))
}

func TestConversationControls(t *testing.T) {
	s := newServer(t, nil)
	code, out := s.do("GET", "/api/harness/engines", "")
	var st []struct {
		Name     string `json:"name"`
		Controls *struct {
			Fork   bool `json:"fork"`
			Rewind bool `json:"rewind"`
		} `json:"controls"`
	}
	if code != 200 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("engines: %d %s", code, out)
	}
	for _, e := range st {
		if e.Controls == nil {
			t.Errorf("engine %s: no controls in %s", e.Name, out)
		} else if e.Name == "anthropic" && (!e.Controls.Fork || !e.Controls.Rewind) {
			t.Errorf("the native engine's controls: %+v", *e.Controls)
		}
	}

	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(s.root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(s.root, name))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	write("a.txt", "one\n")
	write("gone.txt", "keep me\n")

	_, out = s.createJSON(map[string]any{"engine": "anthropic"})
	id := sessionID(t, out)

	// Switch the model between turns: the next request carries it.
	code, out = s.do("PATCH", "/api/harness/session/"+id, `{"model":"claude-switched-1","effort":"high"}`)
	if code != 200 || !strings.Contains(out, `"model":"claude-switched-1"`) {
		t.Fatalf("patch model: %d %s", code, out)
	}
	s.api.Script(claudetest.TextReply("first answer"))
	s.turnSSE(id, "first question")
	if got := s.api.Requests()[len(s.api.Requests())-1].Model; got != "claude-switched-1" {
		t.Fatalf("the turn after PATCH model ran with %q", got)
	}

	// Between turns the project changes; the next turn snapshots it first.
	write("a.txt", "two\n")
	s.api.Script(claudetest.TextReply("second answer"))
	s.turnSSE(id, "second question")
	write("a.txt", "three\n")
	write("new.txt", "made after\n")
	if err := os.Remove(filepath.Join(s.root, "gone.txt")); err != nil {
		t.Fatal(err)
	}

	rows := s.turns(id)
	if len(rows) != 2 || rows[0].Text != "first question" || rows[1].Text != "second question" || rows[0].Seq >= rows[1].Seq {
		t.Fatalf("turns %+v", rows)
	}
	for _, r := range rows {
		if !r.Checkpoint || !r.Files || r.Rewound {
			t.Fatalf("turn %+v: want a checkpoint and a snapshot, not rewound", r)
		}
	}
	first, second := rows[0].Seq, rows[1].Seq

	// Preview: what rewinding to before the second turn would change.
	code, out = s.do("GET", fmt.Sprintf("/api/harness/session/%s/rewind?toTurn=%d", id, second), "")
	var prev struct {
		ToTurn int64 `json:"toTurn"`
		Turn   turnRow
		Files  []struct {
			Path, Op, Patch string
		}
	}
	if code != 200 || json.Unmarshal([]byte(out), &prev) != nil || prev.ToTurn != second || prev.Turn.Text != "second question" {
		t.Fatalf("preview: %d %s", code, out)
	}
	ops := map[string]string{}
	for _, f := range prev.Files {
		ops[f.Path] = f.Op
		if f.Path == "a.txt" && (!strings.Contains(f.Patch, "-two") || !strings.Contains(f.Patch, "+three")) {
			t.Errorf("a.txt's patch: %q", f.Patch)
		}
	}
	if ops["a.txt"] != "modified" || ops["new.txt"] != "added" || ops["gone.txt"] != "deleted" {
		t.Fatalf("preview files %v (%s)", ops, out)
	}
	if read("a.txt") != "three\n" {
		t.Fatal("the preview changed a file")
	}

	// Fork in the middle: the fork's next request holds the first turn only;
	// the original keeps both.
	code, out = s.do("POST", "/api/harness/session/"+id+"/fork", fmt.Sprintf(`{"atSeq":%d}`, first))
	if code != http.StatusCreated {
		t.Fatalf("fork: %d %s", code, out)
	}
	forkID := sessionID(t, out)
	if forkID == id {
		t.Fatal("the fork has the source's id")
	}
	var forked bool
	for _, e := range s.storedEvents(forkID) {
		if e.Event.Type == event.TypeSessionForked {
			forked = e.Event.Forked.From == id && e.Event.Forked.AtSeq == first
		}
	}
	if !forked {
		t.Error("the fork's log has no session:forked naming its source")
	}
	s.api.Script(claudetest.TextReply("fork answer"))
	s.turnSSE(forkID, "fork question")
	if got := strings.Join(s.lastUserTexts(), "|"); got != "first question|fork question" {
		t.Fatalf("the fork sent %q", got)
	}
	// Switch the persona between turns: its prompt reaches the next request.
	if err := os.MkdirAll(filepath.Join(s.root, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("agents/AGENT_PLANNER.md", "---\ndescription: plans\n---\nYou are PLANNER-7: plan, do not build.\n")
	if code, out := s.do("PATCH", "/api/harness/session/"+id, `{"persona":"PLANNER"}`); code != 200 || !strings.Contains(out, `"persona":"PLANNER"`) {
		t.Fatalf("patch persona: %d %s", code, out)
	}
	s.api.Script(claudetest.TextReply("third answer"))
	s.turnSSE(id, "third question")
	if got := strings.Join(s.lastUserTexts(), "|"); got != "first question|second question|third question" {
		t.Fatalf("the original sent %q", got)
	}
	if sys := strings.Join(s.api.Requests()[len(s.api.Requests())-1].System, "\n"); !strings.Contains(sys, "PLANNER-7") {
		t.Fatalf("the turn after PATCH persona had the system prompt %q", sys)
	}
	// "" goes back to no persona.
	if code, out := s.do("PATCH", "/api/harness/session/"+id, `{"persona":""}`); code != 200 || !strings.Contains(out, `"persona":null`) {
		t.Fatalf("patch persona back: %d %s", code, out)
	}
	if err := os.RemoveAll(filepath.Join(s.root, "agents")); err != nil {
		t.Fatal(err)
	}

	// Rewind files and conversation to before the second turn.
	code, out = s.do("POST", "/api/harness/session/"+id+"/rewind", fmt.Sprintf(`{"toTurn":%d,"files":true,"conversation":true}`, second))
	var res struct {
		Files []struct {
			Path, Op string
		}
		Conversation bool
	}
	if code != 200 || json.Unmarshal([]byte(out), &res) != nil || !res.Conversation || len(res.Files) != 3 {
		t.Fatalf("rewind: %d %s", code, out)
	}
	if read("a.txt") != "two\n" || read("gone.txt") != "keep me\n" {
		t.Fatalf("after the rewind a.txt=%q gone.txt=%q", read("a.txt"), read("gone.txt"))
	}
	if _, err := os.Stat(filepath.Join(s.root, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("new.txt survived the rewind: %v", err)
	}
	var rewound *event.SessionRewound
	for _, e := range s.storedEvents(id) {
		if e.Event.Type == event.TypeSessionRewound {
			rewound = e.Event.Rewound
		}
	}
	if rewound == nil || rewound.ToTurn != second || !rewound.Conversation || len(rewound.Files) != 3 {
		t.Fatalf("session:rewound %+v", rewound)
	}
	rows = s.turns(id)
	if len(rows) < 3 || rows[0].Rewound || !rows[1].Rewound || !rows[2].Rewound {
		t.Fatalf("turns after the rewind %+v", rows)
	}
	s.api.Script(claudetest.TextReply("after rewind"))
	s.turnSSE(id, "after rewind")
	if got := strings.Join(s.lastUserTexts(), "|"); got != "first question|after rewind" {
		t.Fatalf("after the rewind the model got %q", got)
	}
}

// What the core refuses, through the gateway: unknown sessions and seqs
// (404), a running turn (409), an engine without the control (422, named
// in the OpenAPI document), each answer validated against the document.
func TestConversationErrors(t *testing.T) {
	s := newServerWith(t, func(c *harness.Config) {
		for _, e := range engines.Builtin(engines.Config{ChildEnv: c.ChildEnv}) {
			if e.Name() == "anthropic" {
				c.Engines = append(c.Engines, plainEngine{e})
			}
		}
	}, nil)
	_, out := s.createJSON(map[string]any{"engine": "anthropic"})
	id := sessionID(t, out)
	s.api.Script(claudetest.TextReply("an answer"))
	s.turnSSE(id, "a question")
	seq := s.turns(id)[0].Seq

	const unknown = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b" // a valid UUIDv4 no session has
	sp := "/api/harness/session/" + id
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/api/harness/session/" + unknown + "/fork", `{}`, 404},
		{"GET", "/api/harness/session/" + unknown + "/turns", "", 404},
		{"GET", "/api/harness/session/" + unknown + "/rewind?toTurn=1", "", 404},
		{"POST", "/api/harness/session/" + unknown + "/rewind", `{"toTurn":1,"files":true}`, 404},
		{"PATCH", "/api/harness/session/" + unknown, `{"model":"m"}`, 404},
		{"POST", "/api/harness/session/not-a-uuid/fork", `{}`, 400},
		{"GET", "/api/harness/session/" + strings.Repeat("9", 100<<10) + "/turns", "", 400},
		{"POST", "/api/harness/session/..%2f..%2fetc/fork", `{}`, 404},
		{"GET", "/api/harness/session/%2e%2e/rewind?toTurn=1", "", 400},
		{"POST", sp + "/fork", `{"atSeq":999999999}`, 404},
		{"GET", sp + "/rewind?toTurn=999999999", "", 404},
		{"GET", sp + "/rewind?toTurn=-1", "", 400},
		{"GET", sp + "/rewind?toTurn=0", "", 400},
		{"GET", sp + "/rewind?toTurn=abc", "", 400},
		{"GET", sp + "/rewind?toTurn=" + strings.Repeat("9", 100<<10), "", 400},
		{"GET", sp + "/rewind", "", 400},
		{"POST", sp + "/rewind", `{"toTurn":999999999,"files":true,"conversation":true}`, 404},
		// A seq inside the turn that is not its user:message.
		{"POST", sp + "/rewind", fmt.Sprintf(`{"toTurn":%d,"conversation":true}`, seq+1), 404},
		{"GET", fmt.Sprintf("%s/rewind?toTurn=%d", sp, seq+1), "", 404},
		// A persona that does not exist, a permission mode or effort that is not one.
		{"PATCH", sp, `{"persona":"no-such-persona"}`, 404},
		{"PATCH", sp, `{"persona":"../../etc/passwd"}`, 400},
		{"PATCH", sp, `{"permissionMode":"yolo"}`, 400},
		{"PATCH", sp, `{"effort":"maximal"}`, 400},
		{"PATCH", sp, `{"model":"` + strings.Repeat("m", 100<<10) + `"}`, 400},
	} {
		code, out := s.do(c.method, c.path, c.body)
		if code != c.want {
			t.Errorf("%s %.80s %.60s: %d, want %d (%.200s)", c.method, c.path, c.body, code, c.want, out)
		}
		if len(out) > httpguard.MaxMessage+64 {
			t.Errorf("%s %.40s: %d bytes back, the input echoed", c.method, c.path, len(out))
		}
	}
	if code, out := s.do("GET", "/api/harness/session/list", ""); code != 200 || strings.Count(out, `"id"`) != 1 {
		t.Fatalf("sessions after the bad requests: %s", out)
	}
	if rows := s.turns(id); len(rows) != 1 || rows[0].Rewound {
		t.Fatalf("turns after the bad requests: %+v", rows)
	}

	// An engine without the controls: a clear 422 naming what it lacks.
	_, out = s.createJSON(map[string]any{"engine": "plain"})
	plain := sessionID(t, out)
	s.api.Script(claudetest.TextReply("plain answer"))
	s.turnSSE(plain, "plain question")
	s.api.Script(claudetest.TextReply("plain answer 2"))
	s.turnSSE(plain, "plain question 2")
	prows := s.turns(plain)
	if code, out := s.do("POST", "/api/harness/session/"+plain+"/fork", ""); code != 422 || !strings.Contains(out, "plain engine cannot fork") {
		t.Errorf("fork on an engine without it: %d %s", code, out)
	}
	if code, out := s.do("POST", "/api/harness/session/"+plain+"/rewind", fmt.Sprintf(`{"toTurn":%d,"conversation":true}`, prows[1].Seq)); code != 422 {
		t.Errorf("conversation rewind on an engine without it: %d %s", code, out)
	}
	// Its files still rewind: that is the harness's, not the engine's.
	if code, out := s.do("POST", "/api/harness/session/"+plain+"/rewind", fmt.Sprintf(`{"toTurn":%d,"files":true}`, prows[1].Seq)); code != 200 {
		t.Errorf("files rewind on an engine without controls: %d %s", code, out)
	}

	// While a turn runs: 409 for fork and rewind; a switch is taken for the
	// next turn.
	s.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("slow words ", 200))}, ChunkSize: 4, ChunkDelay: 20 * time.Millisecond})
	b, _ := json.Marshal(map[string]string{"sessionId": id, "message": "talk slowly"})
	resp := s.send("POST", "/api/harness/turn?events=all", string(b))
	defer resp.Body.Close()
	waitFor(t, "the slow turn to run", func() bool { return s.h.IsRunning(id) })
	if code, out := s.do("POST", sp+"/fork", `{}`); code != 409 {
		t.Errorf("fork during a turn: %d %s", code, out)
	}
	if code, out := s.do("POST", sp+"/rewind", fmt.Sprintf(`{"toTurn":%d,"files":true,"conversation":true}`, seq)); code != 409 {
		t.Errorf("rewind during a turn: %d %s", code, out)
	}
	if code, out := s.do("PATCH", sp, `{"model":"claude-next"}`); code != 200 {
		t.Errorf("switch during a turn: %d %s", code, out)
	}
	if code, _ := s.do("POST", "/api/harness/interrupt", `{"sessionId":"`+id+`"}`); code != 200 {
		t.Errorf("interrupt: %d", code)
	}
	readSSE(t, resp.Body, func(e sseEvent) bool { return e.Event.Type == event.TypeProcessExit })
}

// Requests to the conversation routes that the gateway refuses itself,
// before the core sees them: every answer is a JSON error of the right
// status that the OpenAPI document lists (s.send validates each against
// it), none echoes a huge input, and no session is made.
func TestConversationRequestsRefused(t *testing.T) {
	s := newServer(t, nil)
	id := s.create("", "direct")
	sp := "/api/harness/session/" + id
	long := strings.Repeat("9", 100<<10)
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		// Seqs: negative, zero, absurd, not integers.
		{"POST", sp + "/fork", `{"atSeq":-1}`, 400},
		{"POST", sp + "/fork", `{"atSeq":1e400}`, 400},
		{"POST", sp + "/fork", `{"atSeq":1.5}`, 400},
		{"POST", sp + "/fork", `{"atSeq":"1"}`, 400},
		{"POST", sp + "/fork", `{"atSeq":99999999999999999999}`, 400},
		{"POST", sp + "/fork", `{"atSeq":` + long + `}`, 400},
		{"POST", sp + "/rewind", `{"toTurn":-5,"files":true}`, 400},
		{"POST", sp + "/rewind", `{"toTurn":0,"conversation":true}`, 400},
		{"POST", sp + "/rewind", `{"files":true}`, 400},
		{"POST", sp + "/rewind", `{"toTurn":3}`, 400}, // nothing to rewind
		{"POST", sp + "/rewind", `{"toTurn":3,"files":false,"conversation":false}`, 400},
		{"GET", sp + "/rewind?toTurn=-1", "", 400},
		{"GET", sp + "/rewind?toTurn=0", "", 400},
		{"GET", sp + "/rewind?toTurn=abc", "", 400},
		{"GET", sp + "/rewind?toTurn=1e3", "", 400},
		{"GET", sp + "/rewind?toTurn=99999999999999999999", "", 400},
		{"GET", sp + "/rewind?toTurn=" + long, "", 400},
		{"GET", sp + "/rewind", "", 400},
		// Unknown fields, wrong types, two values, not JSON, no body.
		{"POST", sp + "/rewind", `{"toTurn":3,"files":true,"force":true}`, 400},
		{"POST", sp + "/rewind", `{"toTurn":3,"files":"yes"}`, 400},
		{"POST", sp + "/fork", `{"atSeq":0,"engine":"codex"}`, 400},
		{"POST", sp + "/fork", `{}{}`, 400},
		{"PATCH", sp, `{"model":"m","allowedTools":["Bash"]}`, 400},
		{"PATCH", sp, `{"model":7}`, 400},
		{"PATCH", sp, `{"model":"m"}{"model":"n"}`, 400},
		{"PATCH", sp, `{}`, 400},
		{"PATCH", sp, `null`, 400},
		{"POST", sp + "/rewind", `[`, 400},
		{"POST", sp + "/rewind", "", 400},
		// Huge bodies: 413 before anything is read.
		{"POST", sp + "/fork", `{"atSeq":` + strings.Repeat("1", 2<<20) + `}`, 413},
		{"POST", sp + "/rewind", `{"toTurn":1,"files":true,"x":"` + strings.Repeat("x", 2<<20) + `"}`, 413},
		{"PATCH", sp, `{"title":"` + strings.Repeat("t", 2<<20) + `"}`, 413},
		// Paths that leave the session: not routed.
		{"POST", "/api/harness/session/../session/list/fork", `{}`, 404},
		{"GET", "/api/harness/session/" + id + "/turns/x", "", 404},
		{"DELETE", sp + "/rewind", "", 405},
	} {
		code, out := s.do(c.method, c.path, c.body)
		if code != c.want {
			t.Errorf("%s %.80s %.60s: %d, want %d (%.200s)", c.method, c.path, c.body, code, c.want, out)
		}
		if len(out) > httpguard.MaxMessage+64 {
			t.Errorf("%s %.40s: %d bytes back, the input echoed", c.method, c.path, len(out))
		}
	}
	if code, out := s.do("GET", "/api/harness/session/list", ""); code != 200 || strings.Count(out, `"id"`) != 1 {
		t.Fatalf("sessions after the refused requests: %d %s", code, out)
	}
}
