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
// Snapshots cost what changed. The first one walks the tree (git ls-files
// and add -A; its many new files are read, hashed and packed in process,
// in parallel, and entered in the store's index so git finds them done)
// and starts a watcher (Linux: inotify through fsnotify) on the
// project's directories. Each later snapshot asks the watcher which
// paths changed since (a sync file in the store, whose event the kernel
// queues after every earlier one, makes the list complete), reads and
// hashes those only (a new directory is walked), checks new paths
// against .gitignore with one git call, and writes their blobs and the
// trees above them into one pack, from an in-memory picture of the last
// snapshot; nothing changed costs no git call at all. The store walks
// again, with git's index as stat cache (only files whose size or times
// changed are read), when the watcher cannot vouch for its list: its
// queue overflowed, a watch limit or error, a directory was renamed, a
// .gitignore changed, a nested repository, a network filesystem, or no
// inotify; Store.SnapshotInfo says so (Info.Full, Info.Why). The picture
// is checked against git's own trees after each walk, and written back
// as the index before git reads it. Store.Close stops the watcher (its
// goroutine and file descriptor).
//
// Loose objects are packed every few thousand, and the packs of single
// snapshots merged past 64 (git repack --geometric=2). Each snapshot has
// a ref (refs/snapshots/<id>), so packing keeps them all; nothing is
// ever deleted from the store (no gc or prune runs). The counts of a
// too-large check come from the store's index or picture (the files it
// holds, at their size when last snapshotted) and the new files (sized
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
