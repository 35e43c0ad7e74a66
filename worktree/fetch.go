package worktree

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// FetchTimeout bounds the fetch of a remote base (and no longer than
// the Manager's timeout of one git command).
const FetchTimeout = 60 * time.Second

// remoteRef splits base into the remote it names and the branch there
// when it is a remote-tracking ref of a remote the repository has
// ("origin/main", "refs/remotes/origin/main"); ok false otherwise. The
// longest remote name wins (remote names may hold a slash).
func (m *Manager) remoteRef(ctx context.Context, top, base string) (remote, branch string, ok bool) {
	name := strings.TrimPrefix(base, "refs/remotes/")
	if name == "" || strings.HasPrefix(base, "refs/") && name == base {
		return "", "", false // refs/heads/…, refs/tags/…: not a remote's
	}
	out, err := m.r.out(ctx, top, "remote")
	if err != nil || out == "" {
		return "", "", false
	}
	for _, r := range strings.Split(out, "\n") {
		r = strings.TrimSpace(r)
		if b, found := strings.CutPrefix(name, r+"/"); found && r != "" && b != "" && len(r) > len(remote) {
			remote, branch, ok = r, b, true
		}
	}
	return remote, branch, ok
}

// fetchBase updates the remote-tracking ref base names from its remote,
// bounded by FetchTimeout, never asking for credentials (no terminal
// prompt, no askpass helper, ssh in batch mode): a remote that wants
// them fails the fetch. It reports whether base was a remote's ref; the
// error says why the fetch failed (wrapping ErrNoBase when the remote has
// no such branch).
func (m *Manager) fetchBase(ctx context.Context, top, base string) (bool, error) {
	remote, branch, ok := m.remoteRef(ctx, top, base)
	if !ok {
		return false, nil
	}
	if strings.HasPrefix(branch, "-") || strings.ContainsAny(branch, "\x00\n:^~?*[\\ ") {
		return true, fmt.Errorf("%w: %q", ErrNoBase, base)
	}
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	unlock := m.locks.Lock(top)
	defer unlock()
	_, err := m.r.git(ctx, top, []string{"GIT_ASKPASS=", "SSH_ASKPASS=", "GIT_SSH_COMMAND=ssh -o BatchMode=yes"},
		"-c", "credential.helper=", "-c", "credential.interactive=false",
		"fetch", "--no-tags", "--quiet", "--no-write-fetch-head", "--", remote,
		"+refs/heads/"+branch+":refs/remotes/"+remote+"/"+branch)
	if err == nil {
		return true, nil
	}
	if ge, isGit := err.(*gitError); isGit && strings.Contains(ge.stderr, "couldn't find remote ref") {
		return true, fmt.Errorf("%w: %q: the remote %s has no branch %s", ErrNoBase, base, remote, branch)
	}
	return true, fmt.Errorf("fetching %s from %s: %w", branch, remote, err)
}
