package harness

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/session"
)

// A session file of the shape from before the one conversation id (an
// engine other than Claude Code kept its id as engineSessionId, with
// claudeSessionId null) is continued by its next turn, which writes the
// file back with the specification's claudeSessionId alone.
func TestOldSessionFileResumes(t *testing.T) {
	se := &scriptEngine{}
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{se} })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "script"})
	if err != nil {
		t.Fatal(err)
	}
	path := session.FilePath(e.root, s.ID)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["claudeSessionId"], m["engineSessionId"] = nil, "conv-old"
	old, _ := json.Marshal(m)
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := e.h.Session(s.ID); err != nil || got.ConversationID != "conv-old" {
		t.Fatalf("old file read as %+v, %v", got, err)
	}

	e.turn(s.ID, "go on")
	se.mu.Lock()
	reqs := slices.Clone(se.reqs)
	se.mu.Unlock()
	if len(reqs) != 1 || reqs[0].Resume != "conv-old" {
		t.Fatalf("requests %+v: the turn must continue the old file's conversation", reqs)
	}
	data, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"claudeSessionId":"conv-1"`) && !strings.Contains(string(data), `"claudeSessionId": "conv-1"`) ||
		strings.Contains(string(data), "engineSessionId") {
		t.Fatalf("written back as %s", data)
	}
}
