package main

import (
	"fmt"
	"io"

	"github.com/chirality/harness/session"
)

// isolationFlags are --isolation, --base, --branch and --sandbox of the
// doors that make one session (agent serve, tui).
type isolationFlags struct {
	isolation, base, branch string
	sandbox                 bool
	openNetwork             []string // --sandbox-open-network
}

// check refuses --base or --branch without --isolation worktree, and an
// isolation other than worktree.
func (f isolationFlags) check() error {
	switch f.isolation {
	case "", session.IsolationWorktree:
	default:
		return fmt.Errorf("%w: --isolation %q: want worktree (or leave it out)", errAgentUsage, f.isolation)
	}
	if f.isolation == "" && (f.base != "" || f.branch != "") {
		return fmt.Errorf("%w: --base and --branch need --isolation worktree", errAgentUsage)
	}
	return nil
}

// printWorktree says where a worktree session works.
func printWorktree(w io.Writer, s *session.Session) {
	if s == nil || s.Isolation != session.IsolationWorktree {
		return
	}
	fmt.Fprintf(w, "harness agent: worktree %s on branch %s (from %s)\n", s.Workdir, s.Branch, s.Base)
}
