package worktree

import (
	"bytes"
	"context"
)

// unhide clears the skip-worktree and assume-unchanged bits of every
// entry of the index the worktree at dir uses (extraEnv: GIT_INDEX_FILE
// for another). The index is the agent's to write (a sandboxed agent's
// too: Grants), and `git add -A` does not compare an entry with either
// bit with its file: with them the agent could stage what its files do
// not hold, a protected path the sandbox kept it from writing
// (.mcp.json, agents/…) included, and have Commit, and so a merge, take
// it into the project. Cleared, the index follows the files. Nothing to
// clear costs one git command.
func (m *Manager) unhide(ctx context.Context, dir string, extraEnv []string) error {
	p, err := m.pin(dir)
	if err != nil {
		return err
	}
	env := p.env(extraEnv...)
	out, err := m.r.git(ctx, dir, env, "ls-files", "-v", "-z")
	if err != nil {
		return err
	}
	// "<tag> <path>": S skip-worktree, a lower-case tag assume-unchanged
	// (s both)
	var skip, assumed bytes.Buffer
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) < 3 || rec[1] != ' ' {
			continue
		}
		tag, path := rec[0], rec[2:]
		if tag == 'S' || tag == 's' {
			skip.Write(path)
			skip.WriteByte(0)
		}
		if tag >= 'a' && tag <= 'z' {
			assumed.Write(path)
			assumed.WriteByte(0)
		}
	}
	if skip.Len() > 0 {
		if _, err := m.r.run(ctx, dir, env, &skip, "update-index", "-z", "--no-skip-worktree", "--stdin"); err != nil {
			return err
		}
	}
	if assumed.Len() > 0 {
		if _, err := m.r.run(ctx, dir, env, &assumed, "update-index", "-z", "--no-assume-unchanged", "--stdin"); err != nil {
			return err
		}
	}
	return nil
}
