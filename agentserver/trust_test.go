package agentserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
)

// A persona file widened after a person chose it: the turn sends a trust
// event with the change and the hash; POST /trust with another hash is
// 409, with the shown one trusts it, and the next turn has no notice.
func TestTrustEventAndRoute(t *testing.T) {
	e := newEnv(t, engine.ClaudeCode, "---\npermission_mode: default\n---\nReview.\n")
	e.api.SetResponder(func(*claudetest.Request) claudetest.Reply { return claudetest.TextReply("ok") })
	path := filepath.Join(e.root, "agents", "AGENT_REVIEWER.md")
	if err := os.WriteFile(path, []byte("---\npermission_mode: default\nauto_approve_tools: [Bash]\n---\nReview.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := e.openStream("", "")
	defer s.close()
	e.prompt("hello")
	var notice *Event
	for _, ev := range s.until(t, isEnd) {
		if ev.Type == "trust" {
			notice = &ev.Event
		}
	}
	if notice == nil || notice.TrustKind != "persona" || notice.Path != path || notice.Hash == "" ||
		len(notice.Changes) != 1 || notice.Changes[0].Field != "auto_approve_tools" {
		t.Fatalf("trust event %+v", notice)
	}
	if code, body := e.post("/trust", `{"kind":"persona","name":"REVIEWER","hash":"sha256:00"}`); code != 409 {
		t.Fatalf("stale hash: %d %s", code, body)
	}
	b, _ := json.Marshal(map[string]string{"kind": "persona", "path": notice.Path, "hash": notice.Hash})
	if code, body := e.post("/trust", string(b)); code != 200 {
		t.Fatalf("trust: %d %s", code, body)
	}
	e.prompt("again")
	for _, ev := range s.until(t, isEnd) {
		if ev.Type == "trust" {
			t.Fatalf("a trust event after the person trusted the file: %+v", ev.Event)
		}
	}
}
