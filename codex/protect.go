package codex

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// protectProfile is the permission profile that replaces the
// workspace-write sandbox: Codex's own :workspace (writes inside the
// workspace and the temp dir, .git and .codex read-only) with every
// protected path (engine.Request.Protected, package internal/protect)
// read-only too — one inside the workspace by its path relative to it,
// one outside by its absolute path.
//
// Where a person is asked (approval policy untrusted) the protected
// paths that exist are denied to reading too ("none"), not only to
// writing, and escapeGuard makes sure some read is denied, for two
// things Codex (0.169) does with a command a person approved:
//   - it retries one the sandbox seemed to deny without any sandbox and
//     without asking again, unless the profile denies some read
//     ("unsandboxed execution allowed" would drop a denied read): with a
//     denied read the retry stays in the sandbox;
//   - it runs one the model asked to run outside the sandbox
//     (sandbox_permissions require_escalated) outside it, but keeping
//     the profile's denied reads, which also keeps those paths
//     unwritable ("Read-only file system", "Permission denied").
//
// With "read" only, `echo x > .mcp.json` approved in default mode wrote
// the file on new, resumed and forked threads alike (and in plan mode
// every time), and so did any approved escalation. The cost: where a
// person is asked, Codex's commands cannot read the protected paths
// either. What is not covered: a protected path that does not exist
// stays "read" (denied, Codex puts a placeholder file there, on the disk
// itself when it runs an escalation, and every later sandboxed command
// fails on it: "bwrap: Can't mkdir … Not a directory"), so an approved
// escalation can create it (agents/ where there is none).
//
// Only under untrusted: under never (dontAsk, no Approver) Codex neither
// retries without the sandbox nor escalates, and a denied read would
// also keep a command an execpolicy allow rule matches in the sandbox,
// whose seccomp filter refuses AF_UNIX connects (the IRC daemon's skill
// CLI, daemon.CodexRules, relies on that rule). A profile cannot let that
// socket through on Linux: with the network off, Codex's seccomp filter
// refuses connect(2) whatever the address (a profile's
// network.unix_sockets entry did not change that: `codex sandbox -P`,
// 0.169).
const protectProfile = "harness-protected"

// escapeGuard is a read-denied glob that matches no file (a name nobody
// uses, top level of the workspace only): where a person is asked it
// makes sure the profile denies some read, also when no protected path
// exists yet (see protectProfile). A glob leaves no placeholder.
const escapeGuard = "*.harness-escape-guard"

// withProtectedProfile moves a workspace-write thread onto
// protectProfile, and a read-only one where a person is asked (plan mode
// with an Approver) onto the same profile extending Codex's :read-only
// (there too Codex retried an approved command without the sandbox, and
// it wrote a protected path every time): the sandbox parameter is
// dropped from params (Codex ignores a profile when a sandbox is given)
// and config gets default_permissions and the profile. Verified on 0.169 (bubblewrap on
// Linux): a command's write to .chirality/, .mcp.json or the state
// directory fails with "Read-only file system", a protected path that
// does not exist cannot be made (Codex puts an empty placeholder there),
// other files are written as before.
//
// Left as it was when the thread is neither workspace-write nor
// read-only where a person is asked, or when the
// engine's ThreadConfig chooses a sandbox itself (sandbox_mode,
// sandbox_workspace_write, default_permissions or permissions): Codex
// would use the older settings and ignore the profile. A user's own
// sandbox_mode in $CODEX_HOME/config.toml does the same (Codex's rule:
// the older settings win), and then the protected paths are writable.
//
// A protected path whose directory does not exist (.claude/settings.json
// without .claude/) cannot be bound (bwrap fails the command): the
// highest missing directory is made read-only instead, so while
// .claude/ or .github/ does not exist Codex cannot create it.
func withProtectedProfile(params, config map[string]any, cwd string, protected []string) map[string]any {
	base := ":workspace"
	switch {
	case len(protected) == 0 || cwd == "":
		return config
	case params["sandbox"] == "workspace-write":
	case params["sandbox"] == "read-only" && params["approvalPolicy"] == "untrusted":
		base = ":read-only"
	default:
		return config
	}
	for k := range config {
		for _, own := range []string{"sandbox_mode", "sandbox_workspace_write", "default_permissions", "permissions"} {
			if k == own || strings.HasPrefix(k, own+".") {
				return config
			}
		}
	}
	root := cwd
	if r, err := filepath.EvalSymlinks(cwd); err == nil {
		root = r
	}
	// where a person is asked, an existing protected path is denied to
	// reading too, and the guard makes sure some read is denied
	asking := params["approvalPolicy"] == "untrusted"
	access := func(p string) string {
		if _, err := os.Lstat(p); err == nil && asking {
			return "none"
		}
		return "read"
	}
	inside := map[string]any{}
	fs := map[string]any{":workspace_roots": inside}
	for _, p := range protected {
		p = existingParent(strings.TrimSuffix(p, string(filepath.Separator)))
		if rel, err := filepath.Rel(root, p); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			inside[filepath.ToSlash(rel)] = access(p)
		} else {
			fs[p] = access(p)
		}
	}
	if asking {
		inside[escapeGuard] = "none"
	}
	out := maps.Clone(config)
	if out == nil {
		out = map[string]any{}
	}
	name := protectProfile
	if base != ":workspace" {
		name += "-read-only" // another profile, another name
	}
	out["default_permissions"] = name
	out["permissions"] = map[string]any{name: map[string]any{"extends": base, "filesystem": fs}}
	delete(params, "sandbox")
	return out
}

// existingParent is p when its parent directory exists, else its highest
// missing ancestor (the one whose parent exists).
func existingParent(p string) string {
	for {
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		if _, err := os.Stat(parent); err == nil {
			return p
		}
		p = parent
	}
}

// withCodexHome adds Codex's own home ($CODEX_HOME) to the protected
// paths of its profile (a list of none stays none): its config.toml
// (a sandbox_mode there makes Codex ignore the profile in every later
// session; approval policy, MCP servers, a notify command), its rules/
// (execpolicy allow rules run a command without asking) and its
// auth.json are not a command's to write, and where a person is asked
// not to read either (then also not an approved escalation's: the
// profile's denied reads hold outside the sandbox, protectProfile).
// Codex itself is not bound by the profile; verified on 0.169 that its
// threads, logs and commands work with its home denied.
// Not when the workspace is inside that home (denying the home would
// deny the workspace).
func withCodexHome(protected []string, home, cwd string) []string {
	if len(protected) == 0 || home == "" {
		return protected
	}
	if h, err := filepath.EvalSymlinks(home); err == nil {
		home = h
	}
	if c, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = c
	}
	if rel, err := filepath.Rel(home, cwd); err != nil || rel == "." || !strings.HasPrefix(rel, "..") {
		return protected
	}
	return append(slices.Clip(protected), home+string(filepath.Separator))
}
