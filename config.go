package harness

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/persona"
)

// DefaultPermissionMode is the permission mode of every mode unless a
// persona or the server configuration says otherwise: dontAsk never
// waits for an answer nobody can give (the CLI runs headless) and denies
// what no rule allows.
const DefaultPermissionMode = "dontAsk"

// BypassPermissionMode is the mode that skips every permission check. It is
// refused unless Config.AllowBypass is set.
const BypassPermissionMode = "bypassPermissions"

// DefaultSubscriberBuffer is the number of live events a slow reader may
// lag behind before it is dropped back to the event log.
const DefaultSubscriberBuffer = 512

// ModeMaxTurns are the --max-turns defaults of each mode: 25 in every
// mode, as 004 says (TurnOpts.maxTurns, "default: 25"), and as `harness
// turn --help` and the Claude Code driver (claudecode.DefaultMaxTurns)
// say. A persona's max_turns replaces them; Config.MaxTurns replaces both.
var ModeMaxTurns = map[persona.Mode]int{
	persona.ModeWorkbench: 25,
	persona.ModePipeline:  25,
	persona.ModeDirect:    25,
}

// Config configures New. Engines is required (a command builds the
// built-in ones with package engines); with the rest zero, the current
// directory is the only allowed root, the session index lives in
// session.DefaultStateDir(), turns run in dontAsk mode, and the server
// logs nothing (project logs are still written). New copies it; later
// changes have no effect.
type Config struct {
	// Roots are the directories a project root must resolve inside
	// (symlinks followed). Empty means the current directory.
	Roots []string
	// StateDir holds the session ID index ("" = session.DefaultStateDir()).
	StateDir string
	// ProjectBudgets limit what the sessions of a project root spend
	// together (budget.go); a turn that crosses one ends with
	// budget_exceeded and later turns are refused until it is raised.
	ProjectBudgets map[string]Budget

	// DefaultPermissionMode is the mode when the persona sets none (""
	// = DefaultPermissionMode). PermissionMode, when set, overrides the
	// persona's: precedence is DefaultPermissionMode < persona
	// permission_mode < PermissionMode.
	DefaultPermissionMode string
	PermissionMode        string
	// AllowBypass lets a turn run in bypassPermissions mode. Without it
	// such a turn is refused with ErrBypassRefused.
	AllowBypass bool
	// MaxTurns, when positive, overrides the persona's and the mode's
	// --max-turns.
	MaxTurns int
	// Effort is every turn's thinking level (engine.Request.Effort): ""
	// (each engine's default) or one of engine.EffortLevels; New refuses
	// another with engine.ErrInvalidEffort. Each engine maps it onto its
	// agent's setting or ignores it (see engine.EffortLevels).
	Effort string
	// MCP is the server's MCP configuration (--mcp-config), layered over
	// each project's .mcp.json (see package mcpconfig): every engine gets
	// the merged servers with its turns. nil = only the projects' own.
	MCP *mcpconfig.Config
	// AllowedTools are auto-approved (--allowedTools) on every turn, in
	// addition to the persona's auto_approve_tools: operator policy, e.g.
	// "Bash(ls:*)". Clients can never add to it.
	AllowedTools []string

	// ChildEnv entries (KEY=VALUE) are added to every turn's environment
	// (engine.Request.Env: an engine with a child process adds them after
	// filtering its own environment): the demo's fake API URL and key.
	ChildEnv []string

	// Logger receives the server's own log lines (nil = none). Turn logs
	// go to each project's .chirality/logs/harness.log unless
	// NoProjectLogs is set.
	Logger        *zerolog.Logger
	NoProjectLogs bool

	// SubscriberBuffer is the live-event queue of one reader (0 =
	// DefaultSubscriberBuffer). See Harness.Follow for the policy.
	SubscriberBuffer int

	// Engines are the engines sessions run on, by Name, offered in this
	// order (at least one; the core knows no engine of its own: package
	// engines builds the built-in ones). A later entry of a name replaces
	// an earlier one. The Harness shuts them down with itself.
	Engines []engine.Engine
	// Aliases are other names of engines (alias → engine name, the alias
	// lower-case): a session, persona or client naming an alias gets that
	// engine, and sessions store the engine's own name (engines.Aliases:
	// claude → claude-code, native → anthropic, openai → codex).
	Aliases map[string]string
	// DefaultEngine runs sessions whose request and persona name none
	// ("" = engine.ClaudeCode when Engines has it, else the first).
	DefaultEngine string

	// Approvals makes turns in the permission modes default, acceptEdits
	// and plan ask a person before a tool runs that no rule allows (see
	// Harness.Approve). Without it such turns run headless, as dontAsk
	// does. ApprovalTimeout bounds each question (0 =
	// DefaultApprovalTimeout); an unanswered one is denied.
	Approvals       bool
	ApprovalTimeout time.Duration

	// Sandbox runs every session's agent in the kernel sandbox, whatever
	// the session says (see sandbox.go; `harness serve --sandbox`).
	Sandbox bool
	// SandboxOpenNetwork names the engines whose sandboxed agents keep
	// an open network ("*": every engine; `--sandbox-open-network`).
	// Others connect over TCP only to their model API's port, their
	// proxy's and the session's HTTP MCP servers' (engine.Request's
	// OpenNetwork), where the kernel has Landlock's network rules.
	SandboxOpenNetwork []string

	// WarmTurns is how many agents may exist started ahead for a
	// session's next message, counting those starting, waiting and being
	// stopped (0 = warm turns off; `harness serve` defaults to 2). WarmIdle bounds each one's wait (0 =
	// DefaultWarmIdle). See Harness.Prewarm.
	WarmTurns int
	WarmIdle  time.Duration

	// Checkpoints configures the snapshot of each project's files taken
	// before every turn, for RestoreFiles (the zero value: on, default
	// limits; Off for `--no-checkpoints`). See CheckpointConfig.
	Checkpoints CheckpointConfig

	// Worktrees configures sessions created with isolation "worktree"
	// (where their worktrees go). See WorktreeConfig.
	Worktrees WorktreeConfig

	// ResumeQueues makes New drain the prompt queues a previous process
	// left (queue.go): what a server sets; a one-shot command leaves it
	// off, so it never runs another process's queued prompts.
	ResumeQueues bool
}

// DefaultApprovalTimeout is how long a tool waits for a person.
const DefaultApprovalTimeout = 10 * time.Minute

func (c *Config) clone() Config {
	d := *c
	d.Roots = slices.Clone(c.Roots)
	d.AllowedTools = slices.Clone(c.AllowedTools)
	d.Aliases = maps.Clone(c.Aliases)
	d.ChildEnv = slices.Clone(c.ChildEnv)
	d.Engines = slices.Clone(c.Engines)
	if d.ApprovalTimeout <= 0 {
		d.ApprovalTimeout = DefaultApprovalTimeout
	}
	if d.DefaultPermissionMode == "" {
		d.DefaultPermissionMode = DefaultPermissionMode
	}
	if d.SubscriberBuffer <= 0 {
		d.SubscriberBuffer = DefaultSubscriberBuffer
	}
	return d
}

// permissionMode applies the precedence: config default < persona <
// config override; bypass only when allowed.
func (c *Config) permissionMode(p *persona.Persona) (string, error) {
	return c.permissionModeFor(p, "")
}

// permissionModeFor is permissionMode with a session's own choice
// (SessionUpdate.PermissionMode; "" = none) between the persona's and the
// config override.
func (c *Config) permissionModeFor(p *persona.Persona, chosen string) (string, error) {
	mode := c.DefaultPermissionMode
	if p != nil && p.PermissionMode != "" {
		mode = p.PermissionMode
	}
	if chosen != "" {
		mode = chosen
	}
	if c.PermissionMode != "" {
		mode = c.PermissionMode
	}
	if !engine.ValidPermissionMode(mode) {
		return "", fmt.Errorf("%w %q: want one of %s", ErrInvalidPermissionMode, mode, strings.Join(engine.PermissionModes, ", "))
	}
	if mode == BypassPermissionMode && !c.AllowBypass {
		return "", ErrBypassRefused
	}
	return mode, nil
}

// maxTurns applies the precedence: mode default < persona < config.
func (c *Config) maxTurns(p *persona.Persona, mode persona.Mode) int {
	n := ModeMaxTurns[mode]
	if p != nil && p.MaxTurns > 0 {
		n = p.MaxTurns
	}
	if c.MaxTurns > 0 {
		n = c.MaxTurns
	}
	return n
}
