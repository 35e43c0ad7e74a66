package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/chirality/harness/session"
)

// isolationFlags are --isolation, --base, --branch and --sandbox of the
// doors that make one session (agent serve, tui).
type isolationFlags struct {
	isolation, base, branch string
	sandbox                 bool
}

func flagIsolation(cmd *cobra.Command, f *isolationFlags) {
	cmd.Flags().StringVar(&f.isolation, "isolation", "", `"worktree": the new session works in a git worktree of its own, on a new branch, outside the project's tree (the project must be in a git repository)`)
	cmd.Flags().StringVar(&f.base, "base", "", "with --isolation worktree: the commit-ish the branch starts at (default: the project's HEAD; a remote ref such as origin/main is fetched first)")
	cmd.Flags().StringVar(&f.branch, "branch", "", "with --isolation worktree: the new branch's name (default: harness/<first 8 of the session id>)")
	cmd.Flags().BoolVar(&f.sandbox, "sandbox", false, "run the agent in the kernel sandbox (Landlock): it writes only its workdir minus the protected paths, its own state and a private TMPDIR; turns fail on a kernel without Landlock")
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
