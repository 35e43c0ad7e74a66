package gateway

import (
	"encoding/json"
	"testing"
)

// TestEnginesShowControls: GET /engines says which conversation controls
// the Codex and ACP engines support (engine.Controller): Codex forks and
// rewinds (thread/fork with lastTurnId); the ACP agents whose pinned
// versions advertise session/fork (opencode, claude-acp) fork, copilot
// does not; no ACP agent rewinds.
func TestEnginesShowControls(t *testing.T) {
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
		t.Fatalf("engines %d %s", code, out)
	}
	want := map[string][2]bool{"codex": {true, true}, "opencode": {true, false}, "claude-acp": {true, false}, "copilot": {false, false}}
	seen := 0
	for _, e := range st {
		w, ok := want[e.Name]
		if !ok {
			continue
		}
		seen++
		if e.Controls == nil || e.Controls.Fork != w[0] || e.Controls.Rewind != w[1] {
			t.Errorf("%s: controls %+v, want fork %v rewind %v", e.Name, e.Controls, w[0], w[1])
		}
	}
	if seen != len(want) {
		t.Errorf("GET /engines lists %d of %v: %s", seen, want, out)
	}
}
