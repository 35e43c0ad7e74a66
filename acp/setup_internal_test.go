package acp

import (
	"encoding/json"
	"testing"
)

func TestModeChoice(t *testing.T) {
	var claude, opencode, copilot sessionSetup
	_ = json.Unmarshal([]byte(`{"modes":{"currentModeId":"auto","availableModes":[{"id":"default"},{"id":"acceptEdits"},{"id":"plan"},{"id":"auto"},{"id":"bypassPermissions"}]}}`), &claude)
	_ = json.Unmarshal([]byte(`{"configOptions":[{"id":"mode","category":"mode","type":"select","currentValue":"build","options":[{"value":"build"},{"value":"plan"}]},{"id":"model","category":"model","type":"select","currentValue":"a/b","options":[{"group":"g","options":[{"value":"a/b"},{"value":"c/d"}]}]}]}`), &opencode)
	_ = json.Unmarshal([]byte(`{"modes":{"currentModeId":"https://x#agent","availableModes":[{"id":"https://x#agent"},{"id":"https://x#plan"}]}}`), &copilot)
	for _, c := range []struct {
		s          *sessionSetup
		mode, want string
	}{
		{&claude, "dontAsk", "default"}, {&claude, "", "default"}, {&claude, "acceptEdits", "acceptEdits"}, {&claude, "bypassPermissions", "bypassPermissions"},
		{&copilot, "plan", "https://x#plan"}, {&copilot, "default", ""}, {&opencode, "plan", ""},
	} {
		if got := c.s.modeFor(c.mode); got != c.want {
			t.Errorf("modeFor(%q) = %q, want %q", c.mode, got, c.want)
		}
	}
	if id, v := opencode.modeOption("plan"); id != "mode" || v != "plan" {
		t.Errorf("opencode plan: %q %q", id, v)
	}
	if id, _ := opencode.modeOption("dontAsk"); id != "" {
		t.Errorf("opencode dontAsk sets %q", id)
	}
	if id, cur, ok := opencode.modelOption("c/d"); id != "model" || cur != "a/b" || !ok {
		t.Errorf("model option: %q %q %v", id, cur, ok)
	}
	if _, _, ok := opencode.modelOption("x/y"); ok {
		t.Error("an unoffered model is offered")
	}
}
