package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInstallSkill(t *testing.T) {
	dir := t.TempDir()
	cfg, err := ParseConfig([]byte(`server: {name: lab}
agents:
  - {nick: a, agent: claude, directory: `+dir+`/a, channels: ["#dev"]}
  - {nick: b, agent: codex, directory: `+dir+`/b, channels: ["#dev"]}
  - {nick: c, agent: copilot, directory: `+dir+`/c, channels: ["#dev"]}
  - {nick: d, agent: acp, acp_command: opencode acp, directory: `+dir+`/d, channels: ["#dev"]}
  - {nick: e, agent: anthropic, directory: `+dir+`/e, channels: ["#dev"]}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": ".claude/skills", "b": ".agents/skills", "c": ".github/skills", "d": ".agents/skills", "e": ""}
	for _, a := range cfg.Agents {
		path, err := InstallSkill(cfg, a)
		if err != nil {
			t.Fatal(err)
		}
		if want[a.Nick] == "" {
			if path != "" {
				t.Fatalf("%s: a skill for an engine without a shell: %s", a.Nick, path)
			}
			continue
		}
		if path != filepath.Join(a.Directory, want[a.Nick], "irc-channel", "SKILL.md") {
			t.Fatalf("%s: %s", a.Nick, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if !strings.HasPrefix(s, "---\nname: irc-channel\ndescription: ") || !strings.Contains(s, "You are **lab-"+a.Nick+"**") ||
			!strings.Contains(s, "harness channel send '#chan'") || strings.Contains(s, "<no value>") {
			t.Fatalf("%s: SKILL.md:\n%s", a.Nick, s)
		}
		// every directory of the kind has it; a codex agent also gets its
		// command rule, no one else
		for _, rel := range SkillDirs[a.Agent] {
			if b2, err := os.ReadFile(filepath.Join(a.Directory, rel, "irc-channel", "SKILL.md")); err != nil || string(b2) != s {
				t.Fatalf("%s: %s: %v", a.Nick, rel, err)
			}
		}
		rules, err := os.ReadFile(filepath.Join(a.Directory, ".codex", "rules", "harness-channel.rules"))
		if a.Agent == KindCodex && (err != nil || string(rules) != CodexRules) || a.Agent != KindCodex && err == nil {
			t.Fatalf("%s: codex rules %q %v", a.Nick, rules, err)
		}
		// installing again replaces it
		if _, err := InstallSkill(cfg, a); err != nil {
			t.Fatal(err)
		}
	}
}
