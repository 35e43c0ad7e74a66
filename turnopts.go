package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/permrule"
	"github.com/chirality/harness/persona"
)

// Per-turn options of 004's TurnOpts: systemPromptAppend and the tool
// overrides. They apply to one turn; the session keeps none of them.
//
// The overrides only narrow what the persona and the server allow, never
// widen it (a person decides what a session may do, not a client's
// request):
//
//   - ToolsOverride (004 toolsOverride, --tools form) is the set of tools
//     that exist for the turn. With a persona that lists its tools, each
//     name must be one of them; a persona without a list (or with
//     "default") allows any name. A name outside the persona's list is
//     refused with ErrWidens (403 at the gateway); nothing is dropped
//     silently. "default" alone keeps the persona's set.
//   - DisallowedToolsOverride (004 disallowedToolsOverride) is added to the
//     persona's denies; it never replaces them.
//   - AutoApproveToolsOverride (004 autoApproveToolsOverride) replaces the
//     turn's auto-approvals (the persona's auto_approve_tools and
//     Config.AllowedTools) with a subset of them: each entry must be one
//     of those, exactly as written, else ErrWidens. An empty, non-nil
//     list auto-approves nothing. The session's own "always allow" rules
//     (a person's answers) still apply.
//
// With an override, an auto-approval of a tool the turn took away is
// dropped too, and the core's approval path denies such a tool before
// anyone is asked: engines that cannot take a tool away from their agent
// (Codex, ACP agents) still never run it where they ask first, which is
// every mode but bypassPermissions (there an agent that does not ask runs
// what it runs). Claude Code gets --tools/--disallowedTools/--allowedTools;
// on a resumed conversation CLI 2.1.329 still lists the first turn's tool
// definitions to the model but refuses a call of a tool --tools left out.

// Limits of the per-turn options.
const (
	// MaxSystemPromptAppend bounds TurnOptions.SystemPromptAppend (bytes).
	MaxSystemPromptAppend = 32 << 10
	// MaxToolOverrides bounds each override's entries; MaxToolName an entry.
	MaxToolOverrides = 128
	MaxToolName      = 256
)

var (
	// ErrInvalidTurnOptions: a per-turn option is malformed or too large
	// (400).
	ErrInvalidTurnOptions = engine.NewError(engine.ErrInvalid, "invalid turn options")
	// ErrWidens: a per-turn override names a tool or an auto-approval the
	// persona and the server do not allow; overrides only narrow (403).
	ErrWidens = engine.NewError(engine.ErrRefused, "a turn override may only narrow what the persona and the server allow")
)

// hasTurnOverrides reports whether o narrows the turn's tools.
func (o *TurnOptions) hasTurnOverrides() bool {
	return o.ToolsOverride != "" || o.DisallowedToolsOverride != nil || o.AutoApproveToolsOverride != nil
}

// checkToolList checks one override's entries.
func checkToolList(field string, list []string) error {
	if len(list) > MaxToolOverrides {
		return fmt.Errorf("%w: %s has %d entries, at most %d", ErrInvalidTurnOptions, field, len(list), MaxToolOverrides)
	}
	for _, n := range list {
		if strings.TrimSpace(n) == "" || len(n) > MaxToolName || !utf8.ValidString(n) || strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("%w: %s: %q is not a tool name", ErrInvalidTurnOptions, field, clipName(n))
		}
	}
	return nil
}

func clipName(s string) string {
	if len(s) > 64 {
		return strings.ToValidUTF8(s[:64], "") + "…"
	}
	return s
}

// splitTools reads a --tools value: comma-separated names.
func splitTools(v string) []string {
	var out []string
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// allTools reports whether a persona's tool list leaves every tool.
func allTools(list []string) bool {
	return list == nil || slices.ContainsFunc(list, func(n string) bool { return strings.EqualFold(n, "default") })
}

// applyTurnOptions applies o's per-turn options to the plan's request
// (sessionPromptHash: the prompt the session's conversation was last
// given): the appended system prompt (saved as the turn's prompt file)
// and the narrowing overrides.
func (h *Harness) applyTurnOptions(p *Plan, sessionPromptHash string, o TurnOptions) error {
	req := &p.Request
	if o.SystemPromptAppend != "" {
		if len(o.SystemPromptAppend) > MaxSystemPromptAppend {
			return fmt.Errorf("%w: systemPromptAppend is %d bytes, at most %d", ErrInvalidTurnOptions, len(o.SystemPromptAppend), MaxSystemPromptAppend)
		}
		if !utf8.ValidString(o.SystemPromptAppend) {
			return fmt.Errorf("%w: systemPromptAppend is not UTF-8", ErrInvalidTurnOptions)
		}
	}
	if err := checkToolList("disallowedToolsOverride", o.DisallowedToolsOverride); err != nil {
		return err
	}
	if err := checkToolList("autoApproveToolsOverride", o.AutoApproveToolsOverride); err != nil {
		return err
	}
	if o.ToolsOverride != "" {
		names := splitTools(o.ToolsOverride)
		if err := checkToolList("toolsOverride", names); err != nil {
			return err
		}
		switch {
		case len(names) == 0:
			return fmt.Errorf("%w: toolsOverride %q names no tool", ErrInvalidTurnOptions, clipName(o.ToolsOverride))
		case len(names) == 1 && strings.EqualFold(names[0], "default"):
			// the persona's set
		case slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, "default") }):
			return fmt.Errorf("%w: toolsOverride: \"default\" stands alone (the persona's tools)", ErrInvalidTurnOptions)
		default:
			if !allTools(req.Tools) {
				for _, n := range names {
					if !slices.Contains(req.Tools, n) {
						return fmt.Errorf("%w: toolsOverride names %q, which the persona's tools (%s) do not include", ErrWidens, clipName(n), strings.Join(req.Tools, ","))
					}
				}
			}
			req.Tools = names
		}
	}
	if o.DisallowedToolsOverride != nil {
		deny := slices.Clone(req.DisallowedTools)
		for _, n := range o.DisallowedToolsOverride {
			if !slices.Contains(deny, n) {
				deny = append(deny, n)
			}
		}
		req.DisallowedTools = deny
	}
	if o.AutoApproveToolsOverride != nil {
		for _, n := range o.AutoApproveToolsOverride {
			if !slices.Contains(req.AllowedTools, n) {
				return fmt.Errorf("%w: autoApproveToolsOverride names %q, which neither the persona nor the server auto-approves", ErrWidens, clipName(n))
			}
		}
		req.AllowedTools = slices.Clone(o.AutoApproveToolsOverride)
	}
	if o.hasTurnOverrides() {
		// An auto-approval of a tool the turn took away goes too.
		req.AllowedTools = slices.DeleteFunc(req.AllowedTools, func(rule string) bool {
			r, err := permrule.Parse(rule)
			return err != nil || !toolPermitted(req.Tools, req.DisallowedTools, r.Tool, nil)
		})
	}
	if o.SystemPromptAppend != "" {
		// After the persona's prompt, for this turn only: the saved prompt
		// file is the turn's (004: the prompt used for each turn), and the
		// next turn saves its own. A secret in it is withheld: the file is
		// inside the project.
		req.SystemPrompt = strings.TrimRight(req.SystemPrompt, "\n") + "\n\n" + secrets.Scrub(o.SystemPromptAppend) + "\n"
		path, err := persona.SavePrompt(p.Session.ProjectRoot, p.Session.ID, req.SystemPrompt)
		if err != nil {
			return err
		}
		req.SystemPromptFile, p.PromptFile = path, path
		req.PromptChanged = req.Resume != "" && sessionPromptHash != "" && sessionPromptHash != promptHash(req.SystemPrompt)
	}
	return nil
}

// toolPermitted reports whether a use of tool is left by a turn's tool
// list (nil or "default": every tool) and denies.
func toolPermitted(tools, deny []string, tool string, input json.RawMessage) bool {
	if input == nil {
		input = json.RawMessage(`{}`)
	}
	if !allTools(tools) && !permrule.Allowed(tools, tool, input) {
		return false
	}
	// A deny entry removes the tool (a bare name) or the uses it matches.
	return !permrule.Allowed(deny, tool, input)
}

// narrowedApprover denies, before anyone is asked, a tool the turn's
// overrides took away (an engine that cannot take it from its agent asks
// about it like any tool); the rest goes to the turn's Approver.
type narrowedApprover struct {
	inner       engine.Approver
	tools, deny []string
}

func (n narrowedApprover) Ask(ctx context.Context, q engine.ApprovalRequest) engine.ApprovalDecision {
	if !toolPermitted(n.tools, n.deny, q.ToolName, q.Input) {
		return engine.ApprovalDecision{Message: "The tool " + q.ToolName + " is not available in this turn (its tool overrides took it away); it was not run."}
	}
	return n.inner.Ask(ctx, q)
}
