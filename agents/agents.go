// Package agents embeds the example personas shipped with the harness:
// AGENT_DECOMP.md, AGENT_ORCHESTRATOR.md and AGENT_REVIEWER.md.
//
// The files live in the repository's agents/ directory, which has the same
// layout a project uses (<projectRoot>/agents/AGENT_<ID>.md), so the
// repository itself can serve as a project root. Package persona reads FS
// when a project has no file of a requested ID; a project's own file always
// wins. FS is read-only and safe for concurrent use.
package agents

import "embed"

// FS holds the built-in persona files at its root, named AGENT_<ID>.md.
//
//go:embed AGENT_*.md
var FS embed.FS
