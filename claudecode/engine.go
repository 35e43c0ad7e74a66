package claudecode

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/protect"
	"github.com/chirality/harness/mcpconfig"
)

// Engine is the Claude Code CLI behind the engine seam (engine.Engine):
// each turn is one child of its Manager. Use Manager for what only this
// driver has (TurnOpts.ExtraArgs, OnFrame, Pid…).
type Engine struct {
	m *Manager
}

var _ engine.Engine = (*Engine)(nil)

// NewEngine returns an Engine over a new Manager for cfg.
func NewEngine(cfg Config) *Engine { return &Engine{m: NewManager(cfg)} }

// Manager returns the driver the Engine runs turns with.
func (e *Engine) Manager() *Manager { return e.m }

// Name is engine.ClaudeCode.
func (e *Engine) Name() string { return engine.ClaudeCode }

// StartTurn starts one CLI child for req (see OptsFor for the mapping).
// Its errors match engine.ErrBusy, engine.ErrClosed and, for a missing
// CLI, engine.ErrUnavailable (engine's error set, as the Manager's).
func (e *Engine) StartTurn(ctx context.Context, req engine.Request) (engine.Turn, error) {
	opts, err := OptsFor(req)
	if err != nil {
		return nil, err
	}
	t, err := e.m.StartTurn(ctx, req.SessionKey, MessageFor(req), opts)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Controls implements engine.Controller: the CLI forks (--fork-session)
// and cuts (--resume-session-at) a conversation.
func (e *Engine) Controls() engine.Controls { return engine.Controls{Fork: true, Rewind: true} }

var _ engine.Controller = (*Engine)(nil)

// Steers implements engine.SteerCapable: a turn's CLI reads streamed
// input, and a user message written while it runs joins the turn.
func (e *Engine) Steers() bool { return true }

var _ engine.Steerer = (*Turn)(nil)

// MessageFor is the message the CLI is given for req: req.Message, after
// a preamble with the new system prompt when req.PromptChanged on a
// resumed conversation. The CLI keeps a resumed conversation's first
// --append-system-prompt-file (verified on 2.1.329 against the fake API:
// a second turn started with another file still sent the first one's
// text in "system"), so a persona switched between turns reaches the
// model this way; it stays in the conversation's history from then on.
func MessageFor(req engine.Request) string {
	if !req.PromptChanged || req.Resume == "" || req.SystemPrompt == "" {
		return req.Message
	}
	return "<system-reminder>\nThe instructions for this conversation have changed. From now on, follow these instead of the earlier ones:\n\n" +
		req.SystemPrompt + "\n</system-reminder>\n\n" + req.Message
}

// EnvEffortLevel is the CLI's effort variable: OptsFor sets it to
// Request.Effort.
const EnvEffortLevel = "CLAUDE_CODE_EFFORT_LEVEL"

// OptsFor maps an engine request onto the CLI's flags: the system prompt
// file (or, without one, the prompt text) is appended to the built-in
// prompt, tools, permission mode, model and max turns as given, the
// effort becomes CLAUDE_CODE_EFFORT_LEVEL in the child's environment, the
// MCP servers (none when nil) go in a private file in the runtime
// directory, never in the project the agent reads (its StateDir is in
// the project's .chirality/), with --strict-mcp-config (TurnOpts.MCP),
// and
// the Approver answers the CLI's can_use_tool requests when the mode asks
// (engine.AsksApproval).
func OptsFor(req engine.Request) (TurnOpts, error) {
	opts := TurnOpts{
		Cwd: req.Cwd, Resume: req.Resume, Fork: req.Fork, ResumeSessionAt: req.ResumeAt, AppendSystemPromptFile: req.SystemPromptFile,
		Tools: req.Tools, DisallowedTools: req.DisallowedTools, AllowedTools: req.AllowedTools,
		PermissionMode: req.PermissionMode, Model: req.Model, MaxTurns: req.MaxTurns,
		Env: req.Env, Logger: req.Logger,
		MCP: req.MCP,
	}
	if opts.MCP == nil {
		// The core's merged configuration is all the agent gets: none
		// is none (a persona's `mcp_servers: []` holds).
		opts.MCP = &mcpconfig.Config{}
	}
	if req.ResumeAt != "" {
		// Always a copy: the original transcript stays as it was, so a
		// fork's source and a rewound session's earlier forks keep theirs.
		opts.Fork = true
	}
	if (req.Fork || req.ResumeAt != "") && req.Resume == "" {
		return opts, fmt.Errorf("%w: fork or resume-at without a conversation to resume", engine.ErrUnsupported)
	}
	if err := engine.CheckEffort(req.Effort); err != nil {
		return opts, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if req.Effort != "" {
		// The CLI's effort setting (verified on CLI 2.1.329 against the
		// fake API: the request's output_config.effort follows it).
		opts.Env = append(slices.Clip(req.Env), EnvEffortLevel+"="+req.Effort)
	}
	if opts.AppendSystemPromptFile == "" && req.SystemPrompt != "" {
		opts.ExtraArgs = []string{"--append-system-prompt=" + req.SystemPrompt}
	}
	if req.Approver != nil && engine.AsksApproval(req.PermissionMode) {
		opts.Approver = req.Approver
	}
	opts.SettingSources = "user"
	if req.Sandbox {
		opts.Sandbox, opts.Protected, opts.OpenNetwork = true, protect.Or(req.Protected, req.Cwd), req.OpenNetwork
		opts.SandboxWritable = req.SandboxWritable
	}
	if req.PermissionMode != "bypassPermissions" {
		opts.Settings = ProtectSettings(protect.Or(req.Protected, req.Cwd))
	}
	return opts, opts.Validate()
}

// ProtectSettings is the --settings text that makes the CLI ask before a
// file tool (Edit, Write, MultiEdit, NotebookEdit: one Edit rule covers
// them) writes one of protected (internal/protect's form): an "ask" rule
// for each, in the CLI's absolute form //path (a file) or //path/** (a
// directory). Verified on 2.1.329: an ask rule is asked through
// --permission-prompt-tool in every mode that asks, acceptEdits and a
// Write or Edit allow rule included (bypassPermissions as well, which is
// why OptsFor leaves it out there: that mode skips every check), also
// through a planted symlink, and dontAsk denies it. The core's Approver
// then puts it to a person whatever the session's rules say.
func ProtectSettings(protected []string) string {
	b, _ := json.Marshal(map[string]any{"permissions": map[string]any{"ask": protect.ClaudeAskRules(protected)}})
	return string(b)
}

// Check finds the CLI and reads its version.
func (e *Engine) Check(ctx context.Context) engine.Status {
	st := engine.Status{Name: engine.ClaudeCode, Kind: engine.ClaudeCode}
	v, err := e.m.CLIVersion(ctx)
	if err != nil {
		st.Reason = err.Error()
		return st
	}
	st.Available, st.Version = true, v
	return st
}

// Shutdown shuts the Manager down (see Manager.Shutdown).
func (e *Engine) Shutdown(ctx context.Context) error { return e.m.Shutdown(ctx) }
