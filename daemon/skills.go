package daemon

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/template"

	"github.com/chirality/harness/internal/atomicfile"
)

//go:embed skills/SKILL.md.tmpl
var skillTemplate string

// skillTmpl is parsed on first use, not when the binary starts (issue 35).
var skillTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("SKILL.md").Parse(skillTemplate))
})

// SkillName is the skill's directory name.
const SkillName = "irc-channel"

// SkillDirs are where each kind of agent reads project skills, relative
// to its directory; InstallSkill writes the skill into each. Verified on
// the pinned binaries (the model's request carried the skill's name and
// description: daemon/engines_e2e_test.go):
//
//   - claude: .claude/skills (Claude Code's project skills)
//   - codex: .agents/skills (Codex's repository scope; its user scope is
//     $CODEX_HOME/skills, not touched here)
//   - copilot: .github/skills (Copilot CLI also reads .claude/skills and
//     .agents/skills)
//   - acp: .agents/skills (OpenCode; also Copilot's and Codex's) and
//     .claude/skills (Claude over ACP, claude-agent-acp, reads only
//     Claude Code's); an agent that reads skills from elsewhere, or not
//     at all, works without it — the skill only documents the commands
//   - anthropic/native: none — the native loop has no shell to run the
//     skill CLI; the daemon relays its answers.
var SkillDirs = map[string][]string{
	KindClaude:  {filepath.Join(".claude", "skills")},
	KindCodex:   {filepath.Join(".agents", "skills")},
	KindCopilot: {filepath.Join(".github", "skills")},
	KindACP:     {filepath.Join(".agents", "skills"), filepath.Join(".claude", "skills")},
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
	err := skillTmpl().Execute(&b, map[string]any{
		"IRCNick": cfg.IRCNick(a), "Channels": strings.Join(a.Channels, ", "),
		"Relayed": true, "Note": note,
	})
	return b.String(), err
}

// CodexRulesFile is where InstallSkill puts a codex agent's command
// rule, relative to its directory: Codex reads the project's
// .codex/rules/*.rules (its execpolicy).
var CodexRulesFile = filepath.Join(".codex", "rules", "harness-channel.rules")

// CodexRules lets a codex agent run the skill CLI. Codex runs commands in
// its sandbox (workspace-write, in dontAsk), whose seccomp filter denies
// connect(2) — the skill CLI cannot reach the daemon's Unix socket
// ("operation not permitted") — and approval "never" cannot lift it. A
// command an allow rule matches runs without asking and outside the
// sandbox; this rule matches commands that start with `harness
// channel`, and Codex lifts the sandbox only when every command of the
// line matches (checked on 0.169.0: `harness channel send x; touch
// /outside` runs sandboxed, the touch refused). The alternative,
// [sandbox_workspace_write] network_access = true, would lift the filter
// for every command of the agent.
const CodexRules = `# Written by harness (the IRC daemon): the agent's skill CLI talks to
# its daemon over a Unix socket, which Codex's sandbox would refuse.
prefix_rule(pattern = ["harness", "channel"], decision = "allow")
`

// InstallSkill writes agent a's SKILL.md where its engine reads project
// skills (every directory of SkillDirs) and returns the path of the
// first, or "" for an engine that reads none; for a codex agent it also writes CodexRules to
// CodexRulesFile. The writes are atomic (temp file and rename), 0644.
func InstallSkill(cfg *Config, a AgentConfig) (string, error) {
	dirs := SkillDirs[a.Agent]
	if len(dirs) == 0 {
		return "", nil
	}
	text, err := RenderSkill(cfg, a)
	if err != nil {
		return "", err
	}
	if a.Agent == KindCodex {
		if err := writeFileAtomic(filepath.Join(a.Directory, CodexRulesFile), CodexRules); err != nil {
			return "", fmt.Errorf("codex rules for %s: %w", a.Nick, err)
		}
	}
	first := ""
	for _, rel := range dirs {
		path := filepath.Join(a.Directory, rel, SkillName, "SKILL.md")
		if err := writeFileAtomic(path, text); err != nil {
			return "", fmt.Errorf("skill for %s: %w", a.Nick, err)
		}
		if first == "" {
			first = path
		}
	}
	return first, nil
}

// writeFileAtomic writes text to path (its directory made 0755) with
// atomicfile (temp file, fsync, rename), then opens it to 0644: the
// agent's engine and the people editing its directory read it.
func writeFileAtomic(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(path, []byte(text), nil); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}
