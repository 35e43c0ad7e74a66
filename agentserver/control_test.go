package agentserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/acp/acptest"
	"github.com/chirality/harness/checkpoint"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
)

// get returns the status and the answer of GET path.
func (e *env) get(path string) (int, string) {
	e.t.Helper()
	return e.do("GET", path, "")
}

// requestText is every text of a request's messages.
func requestText(r *claudetest.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, c := range m.Content {
			b.WriteString(c.Text + "\n")
		}
	}
	return b.String()
}

// On the native engine: POST /session switches persona, model and mode
// for the next turn (the next request to the model shows them); POST
// /fork moves the server to a copy (the stream says so, the next turn
// runs in the fork with the history, the original session is untouched);
// POST /rewind cuts the conversation (the next request lacks the undone
// turn) and restores files; every refusal has its status.
func TestSwitchForkRewind(t *testing.T) {
	e := newEnv(t, engine.Anthropic, "---\ndescription: reviews\n---\nYou review. CODEWORD-PLUM.\n")
	os.WriteFile(filepath.Join(e.root, "agents", "AGENT_BUILDER.md"), []byte("---\ndescription: builds\n---\nYou build. CODEWORD-FIG.\n"), 0o644)
	orig := e.id
	s := e.openStream("", "")
	turn := func(text, answer string) *claudetest.Request {
		t.Helper()
		e.api.Script(claudetest.TextReply(answer))
		n := len(e.api.Requests())
		e.prompt(text)
		if end := s.until(t, isEnd); end[len(end)-1].State != "idle" {
			t.Fatalf("turn %q ended %+v", text, end[len(end)-1])
		}
		reqs := e.api.Requests()
		if len(reqs) != n+1 {
			t.Fatalf("turn %q: %d model requests", text, len(reqs)-n)
		}
		return reqs[n]
	}
	want := func(what string, code int, body string, wantCode int) {
		t.Helper()
		if code != wantCode {
			t.Errorf("%s: %d %s, want %d", what, code, body, wantCode)
		}
	}

	if r := turn("first question ALPHA", "first answer"); !strings.Contains(r.SystemText(), "CODEWORD-PLUM") {
		t.Fatalf("the first turn's system: %q", r.SystemText())
	}

	// Switch.
	code, body := e.post("/session", `{"persona":"BUILDER","model":"model-two","permissionMode":"plan"}`)
	var view SessionView
	if json.Unmarshal([]byte(body), &view); code != 200 || view.Persona != "BUILDER" || view.Model != "model-two" || view.PermissionMode != "plan" || view.SessionID != orig {
		t.Fatalf("POST /session: %d %s", code, body)
	}
	r := turn("second question BETA", "second answer")
	if r.Model != "model-two" || !strings.Contains(r.SystemText(), "CODEWORD-FIG") || strings.Contains(r.SystemText(), "CODEWORD-PLUM") {
		t.Fatalf("the switched turn: model %q system %q", r.Model, r.SystemText())
	}
	if !strings.Contains(requestText(r), "ALPHA") {
		t.Fatalf("the switched turn lost the conversation: %q", requestText(r))
	}
	if code, body := e.get("/session"); code != 200 || !strings.Contains(body, `"model":"model-two"`) {
		t.Fatalf("GET /session: %d %s", code, body)
	}
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"persona":"NOBODY"}`, 404}, {`{"permissionMode":"yolo"}`, 400}, {`{"effort":"extreme"}`, 400}, {`{"colour":"red"}`, 400}, {`[]`, 400},
	} {
		code, body := e.post("/session", c.body)
		want("POST /session "+c.body, code, body, c.code)
	}

	// Turns.
	code, body = e.get("/turns")
	var turns struct{ Turns []harness.TurnInfo }
	if json.Unmarshal([]byte(body), &turns); code != 200 || len(turns.Turns) != 2 || turns.Turns[1].Text != "second question BETA" {
		t.Fatalf("GET /turns: %d %s", code, body)
	}

	// Fork: the server moves; the stream says so and goes on with it.
	code, body = e.post("/fork", `{}`)
	var forked struct{ SessionID, From string }
	if json.Unmarshal([]byte(body), &forked); code != 200 || forked.From != orig || forked.SessionID == "" || forked.SessionID == orig {
		t.Fatalf("POST /fork: %d %s", code, body)
	}
	moved := s.until(t, func(ev Event) bool { return ev.Type == "session" })
	if ev := moved[len(moved)-1]; ev.SessionID != forked.SessionID || ev.From != orig || len(moved) != 1 {
		t.Fatalf("the stream after the fork: %v, last %+v (want only the session event)", kinds(moved), ev)
	}
	if e.srv.SessionID() != forked.SessionID {
		t.Fatalf("the server serves %s", e.srv.SessionID())
	}
	r = turn("third question GAMMA", "third answer")
	if txt := requestText(r); !strings.Contains(txt, "ALPHA") || !strings.Contains(txt, "BETA") {
		t.Fatalf("the fork's turn lacks the history: %q", txt)
	}
	for id, has := range map[string]bool{orig: false, forked.SessionID: true} {
		evs, _ := e.h.EventLog(id)
		recs, _ := evs.ReadAfter(0)
		found := false
		for _, rec := range recs {
			found = found || strings.Contains(string(rec.Event), "GAMMA")
		}
		if found != has {
			t.Errorf("session %s has the fork's turn: %v, want %v", id, found, has)
		}
	}
	// A new client of the fork replays its history, then the session
	// event, then the fork's turn.
	fresh := e.openStream("", "")
	all := fresh.until(t, func(ev Event) bool { return ev.Type == "user" && ev.Content == "third question GAMMA" })
	if k := strings.Join(kinds(all), ","); strings.Count(k, "user") != 3 || !strings.Contains(k, "session,user") {
		t.Errorf("a fresh client of the fork: %s", k)
	}
	fresh.close()

	// Rewind the conversation by one turn: the next request lacks it.
	code, body = e.post("/rewind", `{"turns":1,"conversation":true}`)
	if code != 200 || !strings.Contains(body, `"conversation":true`) {
		t.Fatalf("POST /rewind: %d %s", code, body)
	}
	rw := s.until(t, func(ev Event) bool { return ev.Type == "rewound" })
	if ev := rw[len(rw)-1]; ev.Conversation == nil || !*ev.Conversation || ev.ToTurn == 0 {
		t.Fatalf("the rewound event: %+v", ev)
	}
	r = turn("fourth question DELTA", "fourth answer")
	if txt := requestText(r); strings.Contains(txt, "GAMMA") || !strings.Contains(txt, "BETA") {
		t.Fatalf("after the rewind the request has: %q", txt)
	}

	// Refusals.
	for _, c := range []struct {
		path, body string
		code       int
	}{
		{"/rewind", `{}`, 400},
		{"/rewind", `{"turns":1}`, 400},
		{"/rewind", `{"turns":-1,"files":true}`, 400},
		{"/rewind", `{"turns":1,"toTurn":3,"files":true}`, 400},
		{"/rewind", `{"turns":99,"conversation":true}`, 404},
		{"/rewind", `{"toTurn":99999,"conversation":true}`, 404},
		{"/fork", `{"atSeq":99999}`, 404},
		{"/fork", `{"atSeq":-1}`, 400},
		{"/fork", `{"at":1}`, 400},
	} {
		code, body := e.post(c.path, c.body)
		want(c.path+" "+c.body, code, body, c.code)
	}
	// While a turn runs: 409, and nothing moves.
	e.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("word ", 80))}, ChunkSize: 5, ChunkDelay: 20 * time.Millisecond})
	e.prompt("a slow one")
	s.until(t, func(ev Event) bool { return ev.Type == "status" && ev.State == "thinking" })
	for _, c := range []struct{ path, body string }{{"/fork", `{}`}, {"/rewind", `{"turns":1,"conversation":true}`}} {
		code, body := e.post(c.path, c.body)
		want(c.path+" during a turn", code, body, 409)
	}
	if e.srv.SessionID() != forked.SessionID {
		t.Fatal("a refused fork moved the server")
	}
	// A switch during a turn is taken for the next one.
	code, body = e.post("/session", `{"model":"model-three"}`)
	want("POST /session during a turn", code, body, 200)
	s.until(t, isEnd)
	if r := turn("sixth", "six"); r.Model != "model-three" {
		t.Fatalf("a switch during a turn: the next turn ran on %q", r.Model)
	}
}

// POST /rewind {"files":true} restores the project's files as they were
// before the last turn (a file made since is gone, a changed one is back),
// says which in its answer and in the rewound event, and leaves the
// conversation as it is.
func TestRewindFiles(t *testing.T) {
	e := newEnv(t, engine.Anthropic, "")
	s := e.openStream("", "")
	e.api.Script(claudetest.TextReply("one"), claudetest.TextReply("two"))
	e.prompt("first")
	s.until(t, isEnd)
	e.prompt("second")
	s.until(t, isEnd)
	made, changed := filepath.Join(e.root, "made-after.txt"), filepath.Join(e.root, "hello.go")
	os.WriteFile(made, []byte("x"), 0o644)
	os.WriteFile(changed, []byte("package changed\n"), 0o644)
	// The preview says what would be undone and changes nothing.
	code, body := e.get("/rewind?turns=1")
	var pv RewindPreview
	if json.Unmarshal([]byte(body), &pv); code != 200 || pv.Text != "second" || pv.FilesError != "" ||
		fmt.Sprint(pv.Files) != "[{hello.go modified} {made-after.txt added}]" {
		t.Fatalf("GET /rewind?turns=1: %d %s", code, body)
	}
	if code, body := e.get(fmt.Sprintf("/rewind?toTurn=%d", pv.ToTurn)); code != 200 || !strings.Contains(body, "made-after.txt") {
		t.Fatalf("GET /rewind?toTurn: %d %s", code, body)
	}
	if _, err := os.Stat(made); err != nil {
		t.Fatal("the preview changed the files")
	}
	for q, want := range map[string]int{"turns=3": 404, "toTurn=99999": 404, "turns=x": 400, "turns=0": 400, "toTurn=-1": 400, "turns=1&toTurn=1": 400} {
		if code, body := e.get("/rewind?" + q); code != want {
			t.Errorf("GET /rewind?%s: %d %s, want %d", q, code, body, want)
		}
	}
	code, body = e.post("/rewind", `{"files":true}`)
	if code != 200 || !strings.Contains(body, "made-after.txt") || !strings.Contains(body, "hello.go") || !strings.Contains(body, `"conversation":false`) {
		t.Fatalf("POST /rewind files: %d %s", code, body)
	}
	if _, err := os.Stat(made); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file made after the snapshot is still there: %v", err)
	}
	if b, _ := os.ReadFile(changed); string(b) != "package hello\n" {
		t.Fatalf("hello.go is %q", b)
	}
	rw := s.until(t, func(ev Event) bool { return ev.Type == "rewound" })
	if ev := rw[len(rw)-1]; !strings.Contains(fmt.Sprint(ev.Files), "made-after.txt") || ev.Conversation == nil || *ev.Conversation {
		t.Fatalf("the rewound event: %+v", ev)
	}
}

// On an ACP agent that does not offer session/fork: POST /fork is 422
// (the server stays where it was) and POST /rewind of the conversation
// past the first turn is 422 (nothing is undone).
func TestForkRewindUnsupported(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, "fakeacp", "", func() []engine.Engine {
		fake, err := acp.NewEngine(acp.Config{Name: "fakeacp", Command: []string{"fakeagent"}, Binary: bin,
			Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, ExtraEnv: []string{acptest.AgentEnv, "ACPTEST_STATE=" + t.TempDir()},
			StopGrace: 500 * time.Millisecond, InterruptGrace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return []engine.Engine{fake}
	})
	s := e.openStream("", "")
	for _, text := range []string{"first words", "second words"} {
		e.prompt(text)
		if end := s.until(t, isEnd); end[len(end)-1].State != "idle" {
			t.Fatalf("turn %q ended %+v", text, end[len(end)-1])
		}
	}
	if code, body := e.post("/fork", `{}`); code != 422 || !strings.Contains(body, "fakeacp") {
		t.Errorf("POST /fork: %d %s, want 422 naming the engine", code, body)
	}
	if e.srv.SessionID() != e.id {
		t.Error("a refused fork moved the server")
	}
	if code, body := e.post("/rewind", `{"turns":1,"conversation":true}`); code != 422 {
		t.Errorf("POST /rewind: %d %s, want 422", code, body)
	}
	code, body := e.get("/turns")
	if code != 200 || strings.Contains(body, `"rewound":true`) || strings.Count(body, `"seq"`) != 2 {
		t.Errorf("GET /turns after the refusals: %d %s", code, body)
	}
}

// The door's one mapping of the core's errors.
func TestStatusOf(t *testing.T) {
	for err, code := range map[error]int{
		harness.ErrSeqNotFound:                                     404,
		fmt.Errorf("x: %w", harness.ErrUnsupported):                422,
		harness.ErrBusy:                                            409,
		harness.ErrPersonaNotFound:                                 404,
		harness.ErrInvalidPermissionMode:                           400,
		harness.ErrInvalidEffort:                                   400,
		ErrNothingToRewind:                                         400,
		fmt.Errorf("%w: x", engine.ErrUnsupported):                 422,
		fmt.Errorf("x: %w", harness.ErrBypassRefused):              403,
		fmt.Errorf("%w: no", harness.ErrNotFound):                  404,
		fmt.Errorf("%w: bad", ErrBadBody):                          400,
		errors.Join(harness.ErrUnsupported, engine.ErrUnsupported): 422,
		fmt.Errorf("x: %w", checkpoint.ErrTooLarge):                422,
		checkpoint.ErrUnsafeStore:                                  422,
		checkpoint.ErrNoGit:                                        503,
	} {
		if got := statusOf(err); got != code {
			t.Errorf("%v: %d, want %d", err, got, code)
		}
	}
}
