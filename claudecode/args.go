package claudecode

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/lazyre"
	"github.com/chirality/harness/mcpconfig"
)

// DefaultMaxTurns is the --max-turns given when TurnOpts.MaxTurns is 0.
const DefaultMaxTurns = 25

// TurnOpts are the per-turn choices that become the CLI's flags. The zero
// value runs a fresh conversation in the current directory with the CLI's
// own defaults, 25 turns at most, partial messages streamed.
type TurnOpts struct {
	// Cwd is the project root the child runs in ("" = current directory).
	Cwd string
	// Resume continues a Claude session (--resume). SessionID fixes the id
	// of a new one (--session-id, a UUID); with Resume it needs Fork.
	Resume    string
	SessionID string
	Fork      bool
	// ResumeSessionAt continues Resume only up to and including the
	// message of this uuid (--resume-session-at; an assistant message's
	// uuid, as session:complete's Checkpoint reports it). Needs Resume.
	ResumeSessionAt string
	// AppendSystemPromptFile is appended to the built-in system prompt.
	AppendSystemPromptFile string
	// Tools is the set of tools that exist for the model (--tools): nil
	// leaves the CLI's default, an empty non-nil slice means none,
	// []string{"default"} means all.
	Tools []string
	// DisallowedTools are removed outright (--disallowedTools).
	DisallowedTools []string
	// AllowedTools are auto-approved (--allowedTools); this does not
	// restrict what exists, Tools does.
	AllowedTools []string
	// PermissionMode is one of engine.PermissionModes ("" = the CLI's default).
	PermissionMode string
	Model          string
	AddDirs        []string
	// MaxTurns bounds the agentic loop (0 = DefaultMaxTurns).
	MaxTurns int
	// Sandbox runs the CLI in the kernel sandbox (package sandbox): it
	// and its tools write only Cwd minus Protected, the CLI's state under
	// HOME and a private TMPDIR.
	Sandbox   bool
	Protected []string
	// OpenNetwork leaves the sandboxed CLI's TCP open (engine.Request's
	// OpenNetwork); otherwise it connects only to its API's port
	// (ANTHROPIC_BASE_URL, else 443), its proxy's and its HTTP MCP
	// servers'.
	OpenNetwork bool
	// SandboxWritable are more paths the sandboxed CLI may write
	// (engine.Request's).
	SandboxWritable []string
	// NoPartialMessages turns off token streaming: text then arrives a
	// block at a time.
	NoPartialMessages bool
	// MCP, when non-nil, is exactly the MCP servers the CLI gets: the
	// turn writes MCP.JSON() to a private (0600) file in MCPDir, passes it
	// with --mcp-config and --strict-mcp-config (so the CLI reads no
	// .mcp.json or user-level servers of its own; an empty config means
	// none), and removes the file when the child has exited. nil leaves
	// the CLI to find its servers itself.
	MCP *mcpconfig.Config
	// MCPDir is where the MCP file goes ("" = the harness's private
	// runtime directory, package internal/rundir: $XDG_RUNTIME_DIR/harness
	// or a 0700 harness-<uid> in the temp dir, outside every project).
	MCPDir string
	// SettingSources are the setting files the CLI reads
	// (--setting-sources: user, project, local; "" = the CLI's default,
	// all). OptsFor gives "user": a project's .claude/settings.json and
	// .claude/settings.local.json could otherwise allow tools and run
	// hooks that approve them (verified on 2.1.329), so that what an agent
	// writes in a project would widen the next session's permissions.
	SettingSources string
	// Settings is a settings JSON text the CLI reads on top of its files
	// (--settings): OptsFor puts the protected paths' "ask" rules there.
	Settings string
	// ExtraArgs are appended verbatim: the escape hatch for flags this
	// struct does not know.
	ExtraArgs []string
	// Binary overrides the configured CLI path for this turn.
	Binary string
	// Env entries (KEY=VALUE) are added to the child's environment after
	// filtering; they are the caller's explicit choice, so they are not
	// filtered.
	Env []string
	// Logger, when set, receives this turn's driver logs (process spawned,
	// stderr lines, parse errors, exit) instead of the Manager's logger:
	// the harness sends them to the project's log file.
	Logger *zerolog.Logger
	// Approver, when set, is asked for every tool use the CLI's rules do
	// not settle (--permission-prompt-tool stdio: the CLI's can_use_tool
	// control requests). Its answer goes back on stdin. Without one the
	// CLI decides alone (dontAsk denies what no rule allows).
	Approver engine.Approver
	// OnFrame sees every line the CLI prints, including the ones that make
	// no event. It runs on the turn's reader goroutine: keep it fast, and
	// copy Frame.Raw if you keep it.
	OnFrame func(Frame)
}

var (
	uuidPattern           = lazyre.New(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	settingSourcesPattern = lazyre.New(`^(user|project|local)(,(user|project|local))*$`)
	tokenPattern          = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._:/@\[\]()*, -]*$`)
)

// Validate reports the first option the CLI would misread. Values are
// passed as --flag=value, so none can be taken for a flag; this catches
// what would fail later with a less clear message.
func (o *TurnOpts) Validate() error {
	if o.Resume != "" && !uuidPattern.MatchString(o.Resume) {
		return fmt.Errorf("%w: resume id %q is not a UUID", ErrInvalidOptions, o.Resume)
	}
	if o.SessionID != "" && !uuidPattern.MatchString(o.SessionID) {
		return fmt.Errorf("%w: session id %q is not a UUID", ErrInvalidOptions, o.SessionID)
	}
	if o.ResumeSessionAt != "" && (o.Resume == "" || !uuidPattern.MatchString(o.ResumeSessionAt)) {
		return fmt.Errorf("%w: resume-session-at %q needs a resume id and must be a message uuid", ErrInvalidOptions, o.ResumeSessionAt)
	}
	if o.Resume != "" && o.SessionID != "" && !o.Fork {
		return fmt.Errorf("%w: a session id with resume needs Fork", ErrInvalidOptions)
	}
	if o.PermissionMode != "" && !engine.ValidPermissionMode(o.PermissionMode) {
		return fmt.Errorf("%w: permission mode %q is not one of %s", ErrInvalidOptions, o.PermissionMode, strings.Join(engine.PermissionModes, ", "))
	}
	if o.SettingSources != "" && !settingSourcesPattern.MatchString(o.SettingSources) {
		return fmt.Errorf("%w: setting sources %q", ErrInvalidOptions, o.SettingSources)
	}
	if o.Settings != "" && !json.Valid([]byte(o.Settings)) {
		return fmt.Errorf("%w: settings are not JSON", ErrInvalidOptions)
	}
	if o.MaxTurns < 0 {
		return fmt.Errorf("%w: max turns %d is negative", ErrInvalidOptions, o.MaxTurns)
	}
	if o.Model != "" && !tokenPattern.MatchString(o.Model) {
		return fmt.Errorf("%w: model %q", ErrInvalidOptions, o.Model)
	}
	for _, list := range [][]string{o.Tools, o.DisallowedTools, o.AllowedTools} {
		for _, t := range list {
			if !tokenPattern.MatchString(t) {
				return fmt.Errorf("%w: tool name %q", ErrInvalidOptions, t)
			}
		}
	}
	return nil
}

// Args builds the CLI's argv (without the program name). The prompt is
// not among them: it goes on stdin. With MCP set it holds
// --strict-mcp-config; the --mcp-config file is added when the turn
// spawns (its name differs per turn).
func (o *TurnOpts) Args() []string {
	maxTurns := o.MaxTurns
	if maxTurns == 0 {
		maxTurns = DefaultMaxTurns
	}
	args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}
	if !o.NoPartialMessages {
		args = append(args, "--include-partial-messages")
	}
	args = append(args, "--max-turns="+strconv.Itoa(maxTurns))
	flag := func(name, value string) {
		if value != "" {
			args = append(args, name+"="+value)
		}
	}
	flag("--resume", o.Resume)
	flag("--resume-session-at", o.ResumeSessionAt)
	flag("--session-id", o.SessionID)
	if o.Fork {
		args = append(args, "--fork-session")
	}
	flag("--append-system-prompt-file", o.AppendSystemPromptFile)
	if o.Tools != nil {
		args = append(args, "--tools="+strings.Join(o.Tools, ","))
	}
	if len(o.DisallowedTools) > 0 {
		args = append(args, "--disallowedTools="+strings.Join(o.DisallowedTools, ","))
	}
	if len(o.AllowedTools) > 0 {
		args = append(args, "--allowedTools="+strings.Join(o.AllowedTools, ","))
	}
	flag("--permission-mode", o.PermissionMode)
	if o.Approver != nil {
		args = append(args, "--permission-prompt-tool=stdio")
	}
	flag("--model", o.Model)
	flag("--setting-sources", o.SettingSources)
	flag("--settings", o.Settings)
	if o.MCP != nil {
		args = append(args, "--strict-mcp-config")
	}
	for _, d := range o.AddDirs {
		flag("--add-dir", d)
	}
	return append(args, o.ExtraArgs...)
}
