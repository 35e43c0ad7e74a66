// Package persona loads agent personas and assembles the system prompt of a
// turn.
//
// A persona is a Markdown file <projectRoot>/agents/AGENT_<ID>.md with an
// optional YAML frontmatter that sets the tool flags of the Claude Code CLI.
// The harness ships example personas (package agents); a project's own file
// of the same ID wins over the built-in one.
//
// The flow of one turn:
//
//	p, err := persona.Load(root, "REVIEWER")          // stat, re-read only if changed
//	if err != nil { ... }                             // *NotFoundError, *ParseError
//	prompt, err := persona.BuildSystemPrompt(root, p, persona.ModeWorkbench)
//	path, err := persona.SavePrompt(root, sessionID, prompt) // 0600, atomic
//	// the driver passes p.Tools, p.DisallowedTools, p.AutoApproveTools,
//	// p.MaxTurns, p.Model, p.PermissionMode as CLI flags and path as
//	// --append-system-prompt-file.
//
// The frontmatter's max_cost_usd and max_tokens are the budget of each
// session of the persona (the harness applies it with the session's and
// the project's, the tightest winning); no engine flag carries them.
//
// The prompt has four parts in a fixed order: base identity, project context
// (README.md then AGENTS.md, each capped at ContextFileCap bytes), persona
// instructions, mode instructions. It is kept within MaxPromptChars (the
// 16,000-token budget at four characters a token) by cutting the persona
// instructions first, then the project context; every cut is marked in the
// text.
//
// Persona files and context files are cached by path with their modification
// time and size, so a turn costs one stat per file. All functions are safe
// for concurrent use.
package persona
