// Package checkpoint snapshots a project's files before each turn and puts
// them back on demand: the file half of a rewind, on every engine (an
// agent's own checkpoints cover only its own edit tools, or nothing).
//
// A Store keeps its snapshots in a private git object store,
// <root>/.chirality/checkpoints/ (a bare repository with its own index),
// driven by the git binary. A snapshot is a git tree id:
//
//	s, err := checkpoint.Open(root, checkpoint.Options{})  // no git call yet
//	id, err := s.Snapshot(ctx)        // before the turn: "4b825dc6…"
//	// … the agent edits, creates and deletes files …
//	changes, err := s.Diff(ctx, id)    // preview: path, op, unified patch
//	changes, err = s.Restore(ctx, id)  // the files as they were
//
// What a snapshot holds: every file the project's .gitignore files do not
// ignore, tracked by the project's git or not (also in a project that is no
// git repository), with its executable bit; symlinks as symlinks. Never
// .git, nor any .chirality directory (the harness's sessions and logs,
// this store), nor `harness rpc`'s .harness/threads. A nested git repository is recorded as a link, not its
// files. A file the store once held stays in later snapshots after a
// .gitignore starts to ignore it (git's rule for tracked files).
//
// Snapshots are incremental: git's index keeps each file's size and
// times, so only files changed since the last snapshot are read and
// hashed, and only their new contents (and the directories above them)
// are stored. Many new files at once (the first snapshot) are streamed
// into one pack file as they are hashed, and loose objects are packed
// every few thousand (git repack), rather than taking a disk block each. Each snapshot has a ref
// (refs/snapshots/<id>), so packing keeps them all; nothing is ever
// deleted from the store (no gc or prune runs). The counts of a too-large
// check come from the store's index (the files it holds, at their size
// when last snapshotted) and git's list of untracked files (sized
// before they are read).
//
// # The user's repository is never touched
//
// git runs with an environment of its own: GIT_DIR is the store (checked
// to be a plain directory that is not the project's .git), GIT_INDEX_FILE
// its index, no GIT_* variable of the caller, no user or system config.
// Hooks, fsmonitor, filters, diff drivers and line-ending or attribute
// conversions are switched off on every call (-c overrides, and the
// store's config, info/attributes and info/exclude are rewritten before
// each operation, since an agent can write into the project), so bytes
// round-trip and no configured program runs. The project's HEAD, index,
// stash, branches and config are never read or written; the store holds a
// .gitignore of "*" so the project's git status does not list it.
//
// # Bounds
//
// Options.MaxFiles and MaxBytes bound a snapshot (counted before anything
// is hashed): beyond them Snapshot, Diff and Restore fail with
// ErrTooLarge (a *LimitError naming the limit and how to raise it). Every
// git call has a deadline (Options.Timeout) and a bounded output; Diff's
// patches are cut at MaxPatchBytes each and MaxDiffBytes in all.
//
// # Concurrency
//
// A Store is safe for concurrent use; its operations run one at a time,
// also across processes on one project (a lock file in the store).
package checkpoint
