package daemon

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

//go:embed skills/SKILL.md.tmpl
var skillTemplate string

var skillTmpl = template.Must(template.New("SKILL.md").Parse(skillTemplate))

// SkillName is the skill's directory name.
const SkillName = "irc-channel"

// SkillDirs are where each kind of agent reads project skills, relative
// to its directory:
//
//   - claude: .claude/skills (Claude Code's project skills)
//   - codex: .agents/skills (Codex's repository scope; its user scope is
//     $CODEX_HOME/skills, not touched here)
//   - copilot: .github/skills (Copilot CLI also reads .claude/skills and
//     .agents/skills)
//   - acp: .agents/skills (read by OpenCode, Copilot and Codex; other ACP
//     agents may not read skills at all — the skill only documents the
//     commands, the daemon works without it)
//   - anthropic/native: none — the native loop has no shell to run the
//     skill CLI; the daemon relays its answers.
var SkillDirs = map[string]string{
	KindClaude:  filepath.Join(".claude", "skills"),
	KindCodex:   filepath.Join(".agents", "skills"),
	KindCopilot: filepath.Join(".github", "skills"),
	KindACP:     filepath.Join(".agents", "skills"),
}

// RenderSkill is the SKILL.md for agent a of cfg.
func RenderSkill(cfg *Config, a AgentConfig) (string, error) {
	note := ""
	switch a.Agent {
	case KindCodex:
		note = "Run the commands with your shell tool; `harness` is on your PATH."
	case KindCopilot, KindACP:
		note = "Run the commands with your shell tool; `harness` is on your PATH. If your tool asks for approval, the daemon allows `harness channel …`."
	}
	var b bytes.Buffer
	err := skillTmpl.Execute(&b, map[string]any{
		"IRCNick": cfg.IRCNick(a), "Channels": strings.Join(a.Channels, ", "),
		"Relayed": true, "Note": note,
	})
	return b.String(), err
}

// InstallSkill writes agent a's SKILL.md where its engine reads project
// skills (see SkillDirs) and returns the path, or "" for an engine that
// reads none. The write is atomic (temp file and rename), 0644.
func InstallSkill(cfg *Config, a AgentConfig) (string, error) {
	rel, ok := SkillDirs[a.Agent]
	if !ok {
		return "", nil
	}
	text, err := RenderSkill(cfg, a)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(a.Directory, rel, SkillName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("skill for %s: %w", a.Nick, err)
	}
	path := filepath.Join(dir, "SKILL.md")
	tmp, err := os.CreateTemp(dir, ".SKILL-*.md")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(text); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}
