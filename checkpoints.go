package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/chirality/harness/checkpoint"
	"github.com/chirality/harness/session"
	"github.com/rs/zerolog"
)

// File checkpoints: before each turn the core snapshots the project's
// files (package checkpoint), and remembers the snapshot under the seq of
// the turn's user:message in the session's state directory
// (<id>.d/checkpoints.jsonl, one line per turn, removed with the
// session). RestoreFiles puts the files back as they were before a turn;
// FilesDiff previews that. A snapshot that fails (no git, a project over
// the limits, a deadline) never stops the turn: it is logged to the
// project's log and recorded, so FileCheckpoints (and Turns) say why the
// turn has none.

// CheckpointConfig configures file checkpoints (Config.Checkpoints). The
// zero value takes a snapshot before every turn, with package
// checkpoint's default limits.
type CheckpointConfig struct {
	// Off takes no snapshots (`--no-checkpoints`): turns started then have
	// no files to restore.
	Off bool
	// MaxFiles and MaxBytes bound a project's snapshot (0 =
	// checkpoint.DefaultMaxFiles, DefaultMaxBytes): the turns of a larger
	// project run without one (said once in the log, and in each turn's
	// FileCheckpoint).
	MaxFiles int
	MaxBytes int64
	// Timeout bounds each git call (0 = checkpoint.DefaultTimeout).
	Timeout time.Duration
}

// FileCheckpoint is what was snapshotted before one turn.
type FileCheckpoint struct {
	// Seq is the seq of the turn's user:message event.
	Seq int64 `json:"seq"`
	// Snapshot is the snapshot's id ("" when none was taken).
	Snapshot string `json:"snapshot,omitempty"`
	// Error says why none was taken; TooLarge is set when the project was
	// over the limits (CheckpointConfig.MaxFiles, MaxBytes).
	Error    string `json:"error,omitempty"`
	TooLarge bool   `json:"tooLarge,omitempty"`
	// Full is set when the snapshot walked the project's tree (the
	// first one, or when the watcher of changes could not vouch for its
	// list); Why says why (e.g. "overflow").
	Full bool   `json:"full,omitempty"`
	Why  string `json:"why,omitempty"`
	// Millis is how long the snapshot took.
	Millis float64   `json:"ms"`
	At     time.Time `json:"at"`
}

// checkpointsFile is the record of a session's snapshots, in its state
// directory.
const checkpointsFile = "checkpoints.jsonl"

// maxCheckpointsFile bounds what FileCheckpoints reads (about 100k turns).
const maxCheckpointsFile = 16 << 20

// checkpoints holds a Harness's stores, one per project root. Each keeps
// a watcher of its project's files (a goroutine, an inotify descriptor)
// from its first snapshot until Shutdown closes it.
type checkpoints struct {
	mu     sync.Mutex
	stores map[string]*checkpoint.Store
	warned map[string]bool // roots whose "too large" was logged
	closed bool            // after Shutdown: stores opened then keep no watcher
}

// closeCheckpoints stops every store's watcher (Shutdown).
func (h *Harness) closeCheckpoints() {
	c := &h.ckpts
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, s := range c.stores {
		s.Close()
	}
}

// checkpointStore returns the store of root, opened on first use.
func (h *Harness) checkpointStore(root string) (*checkpoint.Store, error) {
	c := &h.ckpts
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.stores[root]; s != nil {
		return s, nil
	}
	cc := h.cfg.Checkpoints
	s, err := checkpoint.Open(root, checkpoint.Options{MaxFiles: cc.MaxFiles, MaxBytes: cc.MaxBytes, Timeout: cc.Timeout,
		NoWatch: c.closed})
	if err != nil {
		return nil, err
	}
	if c.stores == nil {
		c.stores = map[string]*checkpoint.Store{}
	}
	c.stores[root] = s
	return s, nil
}

// snapshotTurn snapshots s's project before the turn whose user:message
// is seq, and records it. Failures are logged and recorded, never
// returned: the turn runs either way.
func (h *Harness) snapshotTurn(ctx context.Context, s *session.Session, seq int64, log *zerolog.Logger) {
	if h.cfg.Checkpoints.Off {
		return
	}
	start := time.Now()
	rec := FileCheckpoint{Seq: seq, At: start.UTC()}
	st, err := h.checkpointStore(s.Dir())
	if err == nil {
		var info checkpoint.Info
		info, err = st.SnapshotInfo(ctx)
		rec.Snapshot, rec.Full, rec.Why = info.ID, info.Full, info.Why
	}
	rec.Millis = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		rec.Error, rec.TooLarge = err.Error(), errors.Is(err, checkpoint.ErrTooLarge)
		level := zerolog.WarnLevel
		if rec.TooLarge {
			h.ckpts.mu.Lock()
			if h.ckpts.warned[s.ProjectRoot] {
				level = zerolog.DebugLevel
			} else {
				if h.ckpts.warned == nil {
					h.ckpts.warned = map[string]bool{}
				}
				h.ckpts.warned[s.ProjectRoot] = true
			}
			h.ckpts.mu.Unlock()
			rec.Error += " (harness: Config.Checkpoints.MaxFiles / MaxBytes)"
		}
		log.WithLevel(level).Str("sessionId", s.ID).Int64("seq", seq).Err(err).
			Msg("file checkpoint not taken: this turn's files cannot be restored")
	} else {
		log.Debug().Str("sessionId", s.ID).Int64("seq", seq).Str("snapshot", rec.Snapshot).
			Float64("ms", rec.Millis).Bool("full", rec.Full).Str("why", rec.Why).Msg("file checkpoint")
	}
	if err := appendCheckpoint(s, rec); err != nil {
		log.Warn().Str("sessionId", s.ID).Err(err).Msg("file checkpoint not recorded")
	}
}

func appendCheckpoint(s *session.Session, rec FileCheckpoint) error {
	dir := session.StateDir(s.ProjectRoot, s.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, checkpointsFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readCheckpoints returns s's records by seq, oldest first (the last
// record of a seq wins; torn or foreign lines are skipped).
func readCheckpoints(s *session.Session) ([]FileCheckpoint, error) {
	f, err := os.Open(filepath.Join(session.StateDir(s.ProjectRoot, s.ID), checkpointsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCheckpointsFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxCheckpointsFile {
		return nil, fmt.Errorf("%s is over %d bytes", f.Name(), maxCheckpointsFile)
	}
	bySeq := map[int64]FileCheckpoint{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxCheckpointsFile)
	for sc.Scan() {
		var rec FileCheckpoint
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Seq > 0 {
			bySeq[rec.Seq] = rec
		}
	}
	out := make([]FileCheckpoint, 0, len(bySeq))
	for _, rec := range bySeq {
		out = append(out, rec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// FileCheckpoints lists the file snapshots of session id's turns, oldest
// first: one per turn started with checkpoints on, with the reason when
// none was taken. It fails with ErrNotFound or ErrInvalidID.
func (h *Harness) FileCheckpoints(id string) ([]FileCheckpoint, error) {
	s, err := h.Session(id)
	if err != nil {
		return nil, err
	}
	return readCheckpoints(s)
}

// fileCheckpoint returns the snapshot taken before turn toTurn of s. It
// fails with ErrSeqNotFound when there is none, wrapping
// checkpoint.ErrTooLarge when the project was too large then.
func (h *Harness) fileCheckpoint(s *session.Session, toTurn int64) (string, error) {
	recs, err := readCheckpoints(s)
	if err != nil {
		return "", err
	}
	for _, r := range recs {
		if r.Seq != toTurn {
			continue
		}
		if r.Snapshot != "" {
			return r.Snapshot, nil
		}
		if r.TooLarge {
			return "", fmt.Errorf("turn %d has no file snapshot: %w: %s", toTurn, checkpoint.ErrTooLarge, r.Error)
		}
		return "", fmt.Errorf("%w: turn %d has no file snapshot: %s", ErrSeqNotFound, toTurn, r.Error)
	}
	return "", fmt.Errorf("%w: no file snapshot before a turn at seq %d (see FileCheckpoints)", ErrSeqNotFound, toTurn)
}

// RestoreFiles puts session id's project files back as they were before
// the turn whose user:message is seq toTurn (checkpoint.Store.Restore:
// files created since are removed, changed and deleted ones restored,
// what .gitignore ignores left alone) and returns what it changed. The
// session is busy meanwhile: a turn cannot start. It fails with
// ErrNotFound, ErrBusy (a turn runs), ErrClosed, ErrSeqNotFound (no
// snapshot before that turn), checkpoint.ErrTooLarge (the project is now,
// or was then, over the limits), or a git error; cancelling ctx stops it,
// possibly half done (running it again completes it).
func (h *Harness) RestoreFiles(ctx context.Context, id string, toTurn int64) ([]checkpoint.Change, error) {
	s, err := h.Session(id)
	if err != nil {
		return nil, err
	}
	release, err := h.reserve(id)
	if err != nil {
		return nil, err
	}
	defer release()
	return h.restoreFiles(ctx, s, toTurn)
}

// restoreFiles is RestoreFiles for a caller that has reserved the session
// (Rewind).
func (h *Harness) restoreFiles(ctx context.Context, s *session.Session, toTurn int64) ([]checkpoint.Change, error) {
	snap, err := h.fileCheckpoint(s, toTurn)
	if err != nil {
		return nil, err
	}
	st, err := h.checkpointStore(s.Dir())
	if err != nil {
		return nil, err
	}
	changes, err := st.Restore(ctx, snap)
	log := h.projectLog(s.ProjectRoot)
	if err != nil {
		if errors.Is(err, checkpoint.ErrUnknownSnapshot) {
			err = fmt.Errorf("%w: the snapshot before turn %d is gone from %s: %w", ErrSeqNotFound, toTurn, checkpoint.Dir, err)
		}
		log.Error().Str("sessionId", s.ID).Int64("toTurn", toTurn).Err(err).Msg("files not restored")
		return nil, err
	}
	log.Info().Str("sessionId", s.ID).Int64("toTurn", toTurn).Int("files", len(changes)).Msg("files restored")
	return changes, nil
}

// FilesDiff previews RestoreFiles: what differs between the files before
// turn toTurn and now, with unified patches (bounded; see
// checkpoint.Store.Diff). It changes no file and may run during a turn.
// It fails as RestoreFiles does, but never with ErrBusy.
func (h *Harness) FilesDiff(ctx context.Context, id string, toTurn int64) ([]checkpoint.Change, error) {
	s, err := h.Session(id)
	if err != nil {
		return nil, err
	}
	snap, err := h.fileCheckpoint(s, toTurn)
	if err != nil {
		return nil, err
	}
	st, err := h.checkpointStore(s.Dir())
	if err != nil {
		return nil, err
	}
	changes, err := st.Diff(ctx, snap)
	if errors.Is(err, checkpoint.ErrUnknownSnapshot) {
		err = fmt.Errorf("%w: the snapshot before turn %d is gone from %s: %w", ErrSeqNotFound, toTurn, checkpoint.Dir, err)
	}
	return changes, err
}

// occupy makes lt its session's live turn, which Shutdown waits for
// (h.wg) until it is released. It fails with ErrClosed after Shutdown and
// ErrBusy while the session has one. A turn whose process:exit is being
// stored (exiting) is waited for, up to exitWait: a reader of the log can
// see that process:exit before the turn is forgotten, and a client that
// starts the next turn on it is not refused.
func (h *Harness) occupy(lt *liveTurn) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		o := h.live[lt.id]
		switch {
		case h.closed:
			return ErrClosed
		case o != nil && o.gone == nil:
			return ErrBusy
		case o != nil:
			gone := o.gone
			h.mu.Unlock()
			if testHookOccupyWaits != nil {
				testHookOccupyWaits()
			}
			t := time.NewTimer(exitWait)
			select {
			case <-gone:
			case <-t.C:
			}
			t.Stop()
			h.mu.Lock()
			if h.live[lt.id] == o {
				return ErrBusy
			}
			continue
		}
		h.live[lt.id] = lt
		h.wg.Add(1)
		return nil
	}
}

// testHookOccupyWaits, when set by a test, runs as occupy begins to wait
// for a turn that is ending.
var testHookOccupyWaits func()

// exitWait bounds how long a turn's start waits for the previous turn of
// its session to finish ending (occupy): its save and worktree settling.
const exitWait = 10 * time.Second

// exiting marks lt as ending: its process:exit is about to be stored, and
// nothing of it but its save and bookkeeping (runner.finalize) is left.
func (h *Harness) exiting(lt *liveTurn) {
	h.mu.Lock()
	if lt.gone == nil {
		lt.gone = make(chan struct{})
	}
	h.mu.Unlock()
}

// reserve marks session id busy (as a running turn does) until release:
// StartTurn fails with ErrBusy meanwhile, DeleteSession waits, Shutdown
// waits. It fails with ErrBusy when a turn runs, ErrClosed after
// Shutdown.
//
// Its release starts the session's next queued prompt, as the end of a
// turn does (a prompt queued meanwhile found the session busy, and
// nothing else would start it).
func (h *Harness) reserve(id string) (release func(), err error) {
	return h.reserveAnd(id, true)
}

// reserveAnd is reserve; kick says whether its release drains the
// session's queue (Hold's does not: a cluster node holds a session to
// move it away, and what is queued runs on the node that gets it).
func (h *Harness) reserveAnd(id string, kick bool) (release func(), err error) {
	lt := &liveTurn{id: id, done: make(chan struct{})}
	if err := h.occupy(lt); err != nil {
		return nil, err
	}
	return func() {
		h.forget(lt)
		close(lt.done)
		if kick {
			h.kickQueue(id)
		}
		h.wg.Done()
	}, nil
}
