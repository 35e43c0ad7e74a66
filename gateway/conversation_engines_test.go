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
	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/event"
)

// turnSeqs runs a turn that must complete and returns the seqs of its
// user:message and session:complete.
func (s *testServer) turnSeqs(id, message string) (user, complete int64) {
	s.t.Helper()
	for _, e := range s.turnSSE(id, message) {
		switch e.Event.Type {
		case event.TypeUserMessage:
			user = e.ID
		case event.TypeSessionComplete:
			complete = e.ID
		case event.TypeSessionError:
			s.t.Fatalf("turn %q: %s", message, e.Data)
		}
	}
	if user == 0 || complete == 0 {
		s.t.Fatalf("turn %q: user:message %d, session:complete %d", message, user, complete)
	}
	return user, complete
}

// forkJSON forks session id (at atSeq when not 0) and returns the new
// session's id, or fails unless the status is want.
func (s *testServer) forkJSON(id string, atSeq int64, want int) string {
	s.t.Helper()
	body := `{}`
	if atSeq != 0 {
		body = `{"atSeq":` + strconv.FormatInt(atSeq, 10) + `}`
	}
	code, out := s.do("POST", "/api/harness/session/"+id+"/fork", body)
	if code != want {
		s.t.Fatalf("fork of %s at %d: %d %s, want %d", id, atSeq, code, out, want)
	}
	if code != 201 {
		return out
	}
	var env struct {
		Session struct{ ID, Engine string } `json:"session"`
	}
	if json.Unmarshal([]byte(out), &env) != nil || env.Session.ID == "" || env.Session.ID == id {
		s.t.Fatalf("fork answer %s", out)
	}
	return env.Session.ID
}

// TestCodexForkAndRewindThroughTheGateway: on the Codex engine (the
// pinned codex against its fake Responses API), POST /session/{id}/fork
// at the end and in the middle makes sessions whose next model requests
// carry their own histories only, diverging from the original's; POST
// /session/{id}/rewind of the conversation makes the next request lack
// the cut turns.
func TestCodexForkAndRewindThroughTheGateway(t *testing.T) {
	bin, err := filepath.Abs("../node_modules/.bin/codex")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the pinned codex is missing (make cli): %v", err)
	}
	t.Setenv("HARNESS_CODEX_BIN", bin)
	fake, err := codextest.NewFakeAPI(codextest.Reply{Text: "noted"})
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
	// next runs a turn and returns the texts of the model request it made.
	next := func(sid, msg string) []string {
		t.Helper()
		before := len(fake.Requests())
		s.turnSeqs(sid, msg)
		reqs := fake.Requests()
		if len(reqs) != before+1 {
			t.Fatalf("turn %q made %d model requests", msg, len(reqs)-before)
		}
		return reqs[len(reqs)-1].Texts()
	}
	want := func(what string, texts, has, not []string) {
		t.Helper()
		for _, h := range has {
			if !slices.Contains(texts, h) {
				t.Errorf("%s: the model request lacks %q: %q", what, h, texts)
			}
		}
		for _, n := range not {
			if slices.Contains(texts, n) {
				t.Errorf("%s: the model request has %q: %q", what, n, texts)
			}
		}
	}

	next(id, "ALPHA")
	_, bravoEnd := s.turnSeqs(id, "BRAVO")
	charlie, _ := s.turnSeqs(id, "CHARLIE")

	whole := s.forkJSON(id, 0, 201)
	middle := s.forkJSON(id, bravoEnd, 201)
	want("the middle fork", next(middle, "DELTA"), []string{"ALPHA", "BRAVO", "DELTA"}, []string{"CHARLIE"})
	want("the whole fork", next(whole, "ECHO"), []string{"ALPHA", "BRAVO", "CHARLIE", "ECHO"}, []string{"DELTA"})
	want("the original", next(id, "FOXTROT"), []string{"ALPHA", "CHARLIE", "FOXTROT"}, []string{"DELTA", "ECHO"})
	want("the middle fork again", next(middle, "GOLF"), []string{"ALPHA", "BRAVO", "DELTA", "GOLF"}, []string{"CHARLIE", "ECHO", "FOXTROT"})

	code, out := s.do("GET", "/api/harness/session/"+id+"/turns", "")
	var turns []struct {
		Seq        int64 `json:"seq"`
		Checkpoint bool  `json:"checkpoint"`
	}
	if code != 200 || json.Unmarshal([]byte(out), &turns) != nil || len(turns) != 4 || !turns[2].Checkpoint || turns[2].Seq != charlie {
		t.Fatalf("turns %d %s", code, out)
	}
	code, out = s.do("POST", "/api/harness/session/"+id+"/rewind", `{"toTurn":`+strconv.FormatInt(charlie, 10)+`,"files":false,"conversation":true}`)
	if code != 200 {
		t.Fatalf("rewind %d %s", code, out)
	}
	want("after the rewind", next(id, "HOTEL"), []string{"ALPHA", "BRAVO", "HOTEL"}, []string{"CHARLIE", "FOXTROT"})
	want("after the rewind, again", next(id, "INDIA"), []string{"ALPHA", "BRAVO", "HOTEL", "INDIA"}, []string{"CHARLIE", "FOXTROT"})

	// A fork is pinned when it is made: a turn the original runs before
	// the fork's first turn is not in the fork.
	pinned := s.forkJSON(id, 0, 201)
	want("the original after the fork", next(id, "JULIET"), []string{"HOTEL", "INDIA", "JULIET"}, nil)
	want("the fork's first turn", next(pinned, "KILO"), []string{"ALPHA", "BRAVO", "HOTEL", "INDIA", "KILO"}, []string{"JULIET", "CHARLIE"})
	want("the original again", next(id, "LIMA"), []string{"INDIA", "JULIET", "LIMA"}, []string{"KILO"})
}

// TestACPForkThroughTheGateway: on opencode and claude-agent-acp (their
// pinned versions advertise session/fork) a fork of the whole
// conversation continues it and diverges from the original; a fork in the middle and a rewind of
// the conversation are refused with 422 (ACP cannot cut a session), and
// nothing changes.
func TestACPForkThroughTheGateway(t *testing.T) {
	for _, a := range acpAgents[:2] {
		if a.name != "opencode" && a.name != "claude-acp" {
			t.Fatalf("acpAgents[:2] has %s", a.name)
		}
		t.Run(a.name, func(t *testing.T) { acpForkThroughTheGateway(t, a) })
	}
}

func acpForkThroughTheGateway(t *testing.T, a struct {
	name, bin, binVar string
	env               func(apiURL string) []string
}) {
	bin, err := filepath.Abs("../node_modules/.bin/" + a.bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the pinned %s is missing (make cli): %v", a.bin, err)
	}
	t.Setenv(a.binVar, bin)
	s := newServerWith(t, func(c *harness.Config) {
		url := ""
		for _, kv := range c.ChildEnv {
			if v, ok := strings.CutPrefix(kv, "ANTHROPIC_BASE_URL="); ok {
				url = v
			}
		}
		c.ChildEnv = append(c.ChildEnv, a.env(url)...)
	}, nil)
	s.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		if len(r.Tools) == 0 {
			return claudetest.TextReply("A title")
		}
		return claudetest.TextReply("noted")
	})
	_, out := s.createJSON(map[string]any{"engine": a.name})
	id := sessionID(t, out)
	// next runs a turn and returns the text of the last main model
	// request it made.
	next := func(sid, msg string) string {
		t.Helper()
		before := len(s.api.Requests())
		s.turnSeqs(sid, msg)
		reqs := s.api.Requests()
		for i := len(reqs) - 1; i >= before; i-- {
			if len(reqs[i].Tools) > 0 {
				var b strings.Builder
				for _, m := range reqs[i].Messages {
					for _, c := range m.Content {
						b.WriteString(c.Text + "\n")
					}
				}
				return b.String()
			}
		}
		t.Fatalf("turn %q made no model request", msg)
		return ""
	}
	_, alphaEnd := s.turnSeqs(id, "remember ALPHA")
	bravo, _ := s.turnSeqs(id, "remember BRAVO")

	if out := s.forkJSON(id, alphaEnd, 422); !strings.Contains(out, "fork") {
		t.Errorf("fork in the middle refused without saying why: %s", out)
	}
	code, out := s.do("POST", "/api/harness/session/"+id+"/rewind", `{"toTurn":`+strconv.FormatInt(bravo, 10)+`,"files":false,"conversation":true}`)
	if code != 422 {
		t.Errorf("rewind of the conversation on %s: %d %s, want 422", a.name, code, out)
	}

	// The fork is pinned when it is made (session/fork at once): the
	// original's turn before the fork's first is not in the fork.
	fork := s.forkJSON(id, 0, 201)
	if h := next(id, "remember DELTA-ORIG"); !strings.Contains(h, "BRAVO") || strings.Contains(h, "CHARLIE-FORK") {
		t.Errorf("the original's request after the fork:\n%s", h)
	}
	if h := next(fork, "remember CHARLIE-FORK"); !strings.Contains(h, "ALPHA") || !strings.Contains(h, "BRAVO") || !strings.Contains(h, "CHARLIE-FORK") || strings.Contains(h, "DELTA-ORIG") {
		t.Errorf("the fork's request:\n%s", h)
	}
	if h := next(fork, "remember ECHO-FORK"); !strings.Contains(h, "CHARLIE-FORK") || strings.Contains(h, "DELTA-ORIG") {
		t.Errorf("the fork's second request:\n%s", h)
	}
}
