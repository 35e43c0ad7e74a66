package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/chirality/harness/internal/keylock"
	"github.com/chirality/harness/persona"
)

// IndexDir is the index directory inside the state directory.
const IndexDir = "session-index"

// Config configures Open. The zero value is valid: the state directory is
// DefaultStateDir(), nothing is logged and the clock is time.Now. Open
// copies it; later changes have no effect.
type Config struct {
	// StateDir holds the ID index (StateDir/session-index/). Tests use a
	// temporary directory.
	StateDir string
	// Logger, if set, receives warnings: corrupt files skipped by List,
	// index entries healed, torn event log tails cut.
	Logger *zerolog.Logger
	// Now, if set, replaces time.Now (tests).
	Now func() time.Time
}

// DefaultStateDir returns $XDG_STATE_HOME/harness, or
// ~/.local/state/harness when XDG_STATE_HOME is unset or not absolute.
func DefaultStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "harness"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("session: no state directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "harness"), nil
}

// Store reads and writes sessions. It is safe for concurrent use. Within
// one Store, operations on one session are serialised; across processes,
// a save replaces the file atomically and the last rename wins.
type Store struct {
	stateDir string
	log      zerolog.Logger
	now      func() time.Time

	mu    sync.Mutex
	locks keylock.Map // by session ID
	logs  map[string]*EventLog

	// listCache keeps, per sessions directory, the decoded files of the
	// last List by name, keyed by modification time and size, so listing
	// costs one lstat per unchanged file.
	listMu    sync.Mutex
	listCache map[string]map[string]listEntry
}

type listEntry struct {
	modTime time.Time
	size    int64
	s       *Session
	err     error
}

// Open returns a Store using cfg, creating the index directory (0700).
func Open(cfg Config) (*Store, error) {
	st := &Store{stateDir: cfg.StateDir, now: cfg.Now, log: zerolog.Nop(),
		logs: map[string]*EventLog{}, listCache: map[string]map[string]listEntry{}}
	if cfg.Logger != nil {
		st.log = *cfg.Logger
	}
	if st.now == nil {
		st.now = time.Now
	}
	if st.stateDir == "" {
		d, err := DefaultStateDir()
		if err != nil {
			return nil, err
		}
		st.stateDir = d
	}
	if err := os.MkdirAll(filepath.Join(st.stateDir, IndexDir), 0o700); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	return st, nil
}

// StateDir returns the state directory in use.
func (st *Store) StateDir() string { return st.stateDir }

// lock serialises operations on one session ID within this Store.
func (st *Store) lock(id string) (unlock func()) { return st.locks.Lock(id) }

func (st *Store) timestamp() time.Time { return st.now().UTC() }

// normRoot returns projectRoot absolute and clean, and checks that it is a
// directory.
func normRoot(projectRoot string) (string, error) {
	if projectRoot == "" {
		return "", errors.New("session: empty project root")
	}
	abs, err := filepath.Abs(projectRoot)
	if err != nil {
		return "", fmt.Errorf("session: project root: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("session: project root: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("session: project root %s is not a directory", abs)
	}
	return abs, nil
}

func validate(s *Session) error {
	if err := checkID(s.ID); err != nil {
		return err
	}
	if !persona.ValidMode(s.Mode) {
		return &Error{ID: s.ID, Err: fmt.Errorf("invalid mode %q: want workbench, pipeline or direct", s.Mode)}
	}
	if s.Persona != "" && !persona.ValidID(s.Persona) {
		return &Error{ID: s.ID, Err: fmt.Errorf("invalid persona id %q", s.Persona)}
	}
	if !filepath.IsAbs(s.ProjectRoot) {
		return &Error{ID: s.ID, Err: fmt.Errorf("project root %q is not absolute", s.ProjectRoot)}
	}
	if s.Log != "" && s.Log != LogThread {
		return &Error{ID: s.ID, Err: fmt.Errorf("invalid log %q: want %q or none", s.Log, LogThread)}
	}
	return nil
}

// Create makes a new session with a fresh UUIDv4 in the project at
// projectRoot (made absolute; it must be an existing directory), writes
// its file and indexes it. personaID may be empty; mode must be workbench,
// pipeline or direct.
func (st *Store) Create(projectRoot, personaID, mode string) (*Session, error) {
	return st.Add(Session{ProjectRoot: projectRoot, Persona: personaID, Mode: mode})
}

// Add makes a new session from tmpl (its fields; the times are assigned,
// and the ID unless tmpl has one: a caller that names things after the
// session before storing it, a worktree, gives a fresh uuid.NewString),
// writes its file and indexes it, with the checks of Create. A session
// file of that ID already there is an error.
func (st *Store) Add(tmpl Session) (*Session, error) {
	root, err := normRoot(tmpl.ProjectRoot)
	if err != nil {
		return nil, err
	}
	now := st.timestamp()
	s := &tmpl
	if s.ID == "" {
		s.ID = uuid.NewString()
	} else if err := checkID(s.ID); err != nil {
		return nil, err
	}
	s.CreatedAt, s.UpdatedAt, s.ProjectRoot = now, now, root
	if err := validate(s); err != nil {
		return nil, err
	}
	unlock := st.lock(s.ID)
	defer unlock()
	if _, err := os.Lstat(FilePath(root, s.ID)); err == nil {
		return nil, &Error{ID: s.ID, Err: errors.New("exists already")}
	}
	if err := st.write(s); err != nil {
		return nil, err
	}
	if err := st.writeIndex(s.ID, root); err != nil {
		return nil, err
	}
	return s, nil
}

// write stores s atomically in its project.
func (st *Store) write(s *Session) error {
	path := FilePath(s.ProjectRoot, s.ID)
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return &Error{ID: s.ID, Path: path, Err: err}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return &Error{ID: s.ID, Path: path, Err: err}
	}
	if err := writeFileAtomic(path, append(data, '\n')); err != nil {
		return &Error{ID: s.ID, Path: path, Err: err}
	}
	return nil
}

// Save writes s, which must already exist in s.ProjectRoot, after setting
// s.UpdatedAt to now. The replacement is atomic; concurrent saves of one
// session never interleave (the last one wins). It repairs the session's
// index entry if needed. A session deleted meanwhile is not recreated:
// Save then fails with ErrNotFound.
func (st *Store) Save(s *Session) error {
	if err := validate(s); err != nil {
		return err
	}
	root := filepath.Clean(s.ProjectRoot)
	unlock := st.lock(s.ID)
	defer unlock()
	path := FilePath(root, s.ID)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &Error{ID: s.ID, Path: path, Err: ErrNotFound}
		}
		return &Error{ID: s.ID, Path: path, Err: err}
	}
	prev := s.UpdatedAt
	if s.ProjectRoot != root {
		// Written only when it changes: a running turn reads its copy's
		// root (its directory) while a save of that copy, under the
		// turn's lock, may run.
		s.ProjectRoot = root
	}
	s.UpdatedAt = st.timestamp()
	if err := st.write(s); err != nil {
		s.UpdatedAt = prev
		return err
	}
	if r, err := st.readIndex(s.ID); err != nil || r != root {
		return st.writeIndex(s.ID, root)
	}
	return nil
}

// read loads the session file of id in root.
func read(root, id string) (*Session, error) {
	path := FilePath(root, id)
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{ID: id, Path: path, Err: ErrNotFound}
		}
		return nil, &Error{ID: id, Path: path, Err: err}
	}
	return decode(id, path, data)
}

func decode(id, path string, data []byte) (*Session, error) {
	var s Session
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, &Error{ID: id, Path: path, Err: fmt.Errorf("%w: %v", ErrCorrupt, err)}
	}
	switch {
	case s.ID != id:
		return nil, &Error{ID: id, Path: path, Err: fmt.Errorf("%w: file holds session %q", ErrCorrupt, s.ID)}
	case s.CreatedAt.IsZero() || s.UpdatedAt.IsZero():
		return nil, &Error{ID: id, Path: path, Err: fmt.Errorf("%w: missing createdAt or updatedAt", ErrCorrupt)}
	case !persona.ValidMode(s.Mode):
		return nil, &Error{ID: id, Path: path, Err: fmt.Errorf("%w: invalid mode %q", ErrCorrupt, s.Mode)}
	case s.Log != "" && s.Log != LogThread:
		return nil, &Error{ID: id, Path: path, Err: fmt.Errorf("%w: invalid log %q", ErrCorrupt, s.Log)}
	}
	// The file's location is authoritative (the project may have moved).
	s.ProjectRoot = filepath.Dir(filepath.Dir(filepath.Dir(path)))
	return &s, nil
}

// Get returns session id wherever it lives, using the index (see the
// package documentation). It works after a restart and without a project
// root. A missing session is ErrNotFound; its stale index entry is
// removed.
func (st *Store) Get(id string) (*Session, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	// The usual case reads the index entry and the file it names without
	// the session's lock: a save replaces the file whole (a reader sees
	// the old or the new one), so the lock would only make readers (a
	// turn's start, each of its SSE readers) wait for a save's two fsyncs.
	// Anything else (no entry, a stale or corrupt one, a file that cannot
	// be read) takes the lock and the path that repairs the index.
	if root, ok := st.peekIndex(id); ok {
		if s, err := read(root, id); err == nil {
			return s, nil
		}
	}
	unlock := st.lock(id)
	defer unlock()
	return st.get(id)
}

func (st *Store) get(id string) (*Session, error) {
	root, err := st.readIndex(id)
	if err == nil {
		s, err := read(root, id)
		if !errors.Is(err, ErrNotFound) {
			return s, err
		}
		st.log.Warn().Str("sessionId", id).Str("projectRoot", root).Msg("session index entry points to a missing file; removed")
		st.removeIndex(id)
	}
	// Not indexed (or stale): look in the project roots the index knows.
	for _, r := range st.knownRoots() {
		if r == root {
			continue
		}
		if s, err := read(r, id); err == nil {
			st.log.Info().Str("sessionId", id).Str("projectRoot", r).Msg("session index entry rebuilt")
			st.writeIndex(id, r)
			return s, nil
		}
	}
	return nil, &Error{ID: id, Err: ErrNotFound}
}

// GetIn returns session id from the project at projectRoot without
// consulting the index, and indexes it if it was not.
func (st *Store) GetIn(projectRoot, id string) (*Session, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	root, err := normRoot(projectRoot)
	if err != nil {
		return nil, err
	}
	unlock := st.lock(id)
	defer unlock()
	s, err := read(root, id)
	if err != nil {
		return nil, err
	}
	if r, err := st.readIndex(id); err != nil || r != root {
		st.writeIndex(id, root)
	}
	return s, nil
}

// List returns the sessions of the project at projectRoot, newest
// UpdatedAt first (ties by ID). Files that cannot be used (corrupt,
// foreign, unreadable, or named other than <uuid>.json) are skipped and
// returned in problems, each an *Error naming the path; they are never
// fatal. err is set only when the sessions directory cannot be read; a
// project without one has no sessions. Temporary files older than an hour
// (left by a crash between write and rename) are removed on the way.
//
// Decoded files are cached per Store by modification time and size, so a
// repeated List costs one lstat per unchanged file.
func (st *Store) List(projectRoot string) (sessions []*Session, problems []error, err error) {
	root, err := normRoot(projectRoot)
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(root, SessionsDir)
	des, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("session: list: %w", err)
	}
	st.listMu.Lock()
	prev := st.listCache[dir]
	st.listMu.Unlock()
	next := make(map[string]listEntry, len(des))
	sessions = make([]*Session, 0, len(des))
	for _, de := range des {
		name := de.Name()
		if isTemp(name) {
			st.removeStaleTemp(dir, de)
			continue
		}
		if !strings.HasSuffix(name, ".json") || de.IsDir() {
			continue
		}
		id := strings.TrimSuffix(name, ".json")
		path := filepath.Join(dir, name)
		if !ValidID(id) {
			problems = append(problems, &Error{ID: id, Path: path, Err: fmt.Errorf("%w: file name is not <uuid>.json", ErrCorrupt)})
			continue
		}
		fi, err := de.Info()
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) { // deleted meanwhile: not a problem
				problems = append(problems, &Error{ID: id, Path: path, Err: err})
			}
			continue
		}
		e, ok := prev[name]
		if !ok || !e.modTime.Equal(fi.ModTime()) || e.size != fi.Size() {
			e = listEntry{modTime: fi.ModTime(), size: fi.Size()}
			data, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				problems = append(problems, &Error{ID: id, Path: path, Err: err})
				continue
			}
			e.s, e.err = decode(id, path, data)
			if e.err == nil {
				st.indexListed(id, root, path)
			}
		}
		next[name] = e
		if e.err != nil {
			problems = append(problems, e.err)
			continue
		}
		c := *e.s
		sessions = append(sessions, &c)
	}
	st.listMu.Lock()
	st.listCache[dir] = next
	st.listMu.Unlock()
	for _, p := range problems {
		st.log.Warn().Err(p).Msg("session file skipped")
	}
	sort.Slice(sessions, func(i, j int) bool {
		a, b := sessions[i], sessions[j]
		if !a.UpdatedAt.Equal(b.UpdatedAt) {
			return a.UpdatedAt.After(b.UpdatedAt)
		}
		return a.ID < b.ID
	})
	return sessions, problems, nil
}

// indexListed indexes session id that List found in root when the index
// does not know it (a session another process made with another state
// directory, or a project copied in): what the list shows, Get finds,
// so a client that lists and then opens a session by its ID is not told
// it does not exist. An entry that points elsewhere is left as it is.
func (st *Store) indexListed(id, root, path string) {
	unlock := st.lock(id)
	defer unlock()
	if _, err := st.readIndex(id); err == nil {
		return
	}
	if _, err := os.Lstat(path); err == nil { // not deleted meanwhile
		st.writeIndex(id, root)
	}
}

// staleTempAge is how old a temporary file must be before List removes
// it: older than any write in progress, so it was left by a crash.
const staleTempAge = time.Hour

// removeStaleTemp removes a temporary file left by a crash between write
// and rename. Failures are ignored.
func (st *Store) removeStaleTemp(dir string, de fs.DirEntry) {
	fi, err := de.Info()
	if err != nil || !fi.Mode().IsRegular() || time.Since(fi.ModTime()) < staleTempAge {
		return
	}
	if os.Remove(filepath.Join(dir, de.Name())) == nil {
		st.log.Info().Str("path", filepath.Join(dir, de.Name())).Msg("removed temporary file left by a crash")
	}
}

// Delete removes session id (found through the index, as Get does): its
// file, its event log and its saved prompt, then its index entry. A
// shared EventLog of the session is closed first.
func (st *Store) Delete(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	unlock := st.lock(id)
	defer unlock()
	s, err := st.get(id)
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			// A corrupt file is still deletable.
			if root, ierr := st.readIndex(id); ierr == nil {
				return st.remove(root, id)
			}
		}
		return err
	}
	return st.remove(s.ProjectRoot, id)
}

// DeleteIn is Delete for a session of the project at projectRoot, without
// consulting the index. A corrupt session file is deleted too.
func (st *Store) DeleteIn(projectRoot, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	root, err := normRoot(projectRoot)
	if err != nil {
		return err
	}
	unlock := st.lock(id)
	defer unlock()
	if _, err := os.Stat(FilePath(root, id)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &Error{ID: id, Path: FilePath(root, id), Err: ErrNotFound}
		}
		return &Error{ID: id, Path: FilePath(root, id), Err: err}
	}
	return st.remove(root, id)
}

// remove deletes the files of id in root. The caller holds the ID lock.
func (st *Store) remove(root, id string) error {
	st.mu.Lock()
	l := st.logs[id]
	delete(st.logs, id)
	st.mu.Unlock()
	if l != nil {
		l.Close()
	}
	var errs []error
	logPath := EventLogPath(root, id)
	if s, err := read(root, id); err == nil {
		logPath = s.EventLogPath()
	}
	// The session file goes first: once it is gone the session no longer
	// exists, even if removing a companion file fails.
	for _, p := range []string{FilePath(root, id), logPath, persona.PromptPath(root, id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, &Error{ID: id, Path: p, Err: err})
		}
	}
	if err := os.RemoveAll(StateDir(root, id)); err != nil {
		errs = append(errs, &Error{ID: id, Path: StateDir(root, id), Err: err})
	}
	st.removeIndex(id)
	return errors.Join(errs...)
}

// EventLog returns the event log of session id, opening it on first use.
// The log is shared by all callers of this Store and owned by it: do not
// Close it (Store.Close and Delete do). If it was closed anyway, the next
// call reopens it.
func (st *Store) EventLog(id string) (*EventLog, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	// An open log needs no ID lock: a save holds that across its fsyncs
	// (the session:init save as a turn starts), and each SSE reader
	// joining the turn waited for it. A log handed out here can be
	// closed by Delete right after, as one handed out under the lock
	// could.
	if l := st.openLog(id); l != nil {
		return l, nil
	}
	unlock := st.lock(id)
	defer unlock()
	if l := st.openLog(id); l != nil {
		return l, nil
	}
	s, err := st.get(id)
	if err != nil {
		return nil, err
	}
	l, err := OpenEventLog(s.EventLogPath())
	if err != nil {
		return nil, &Error{ID: id, Path: s.EventLogPath(), Err: err}
	}
	if l.repaired {
		st.log.Warn().Str("sessionId", id).Str("path", l.path).Msg("event log: torn last line cut")
	}
	st.mu.Lock()
	st.logs[id] = l
	st.mu.Unlock()
	return l, nil
}

// openLog returns id's event log when the Store has it open.
func (st *Store) openLog(id string) *EventLog {
	st.mu.Lock()
	l := st.logs[id]
	st.mu.Unlock()
	if l != nil && !l.isClosed() {
		return l
	}
	return nil
}

// Close closes the event logs the Store opened. It is safe to call more
// than once; the Store stays usable (logs are reopened on demand).
func (st *Store) Close() error {
	st.mu.Lock()
	logs := st.logs
	st.logs = map[string]*EventLog{}
	st.mu.Unlock()
	var errs []error
	for _, l := range logs {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// The index: one file per session, <stateDir>/session-index/<id>.json.

type indexEntry struct {
	SchemaVersion int    `json:"schemaVersion"`
	ProjectRoot   string `json:"projectRoot"`
}

func (st *Store) indexPath(id string) string {
	return filepath.Join(st.stateDir, IndexDir, id+".json")
}

func (st *Store) readIndex(id string) (string, error) {
	data, err := os.ReadFile(st.indexPath(id))
	if err != nil {
		return "", err
	}
	var e indexEntry
	if err := json.Unmarshal(data, &e); err != nil || e.SchemaVersion != SchemaVersion || !filepath.IsAbs(e.ProjectRoot) {
		st.log.Warn().Str("sessionId", id).Msg("session index entry corrupt; removed")
		st.removeIndex(id)
		return "", fmt.Errorf("%w: index entry", ErrCorrupt)
	}
	return e.ProjectRoot, nil
}

// peekIndex is readIndex that changes nothing (a corrupt entry is not
// ok, and left for readIndex to remove under the lock).
func (st *Store) peekIndex(id string) (string, bool) {
	data, err := os.ReadFile(st.indexPath(id))
	if err != nil {
		return "", false
	}
	var e indexEntry
	if json.Unmarshal(data, &e) != nil || e.SchemaVersion != SchemaVersion || !filepath.IsAbs(e.ProjectRoot) {
		return "", false
	}
	return e.ProjectRoot, true
}

func (st *Store) writeIndex(id, root string) error {
	data, _ := json.Marshal(indexEntry{SchemaVersion: SchemaVersion, ProjectRoot: root})
	if err := os.MkdirAll(filepath.Join(st.stateDir, IndexDir), 0o700); err != nil {
		return &Error{ID: id, Path: st.indexPath(id), Err: err}
	}
	if err := writeFileAtomic(st.indexPath(id), data); err != nil {
		return &Error{ID: id, Path: st.indexPath(id), Err: err}
	}
	return nil
}

func (st *Store) removeIndex(id string) {
	os.Remove(st.indexPath(id))
}

// knownRoots returns the distinct project roots in the index.
func (st *Store) knownRoots() []string {
	des, err := os.ReadDir(filepath.Join(st.stateDir, IndexDir))
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var roots []string
	for _, de := range des {
		name := de.Name()
		if !strings.HasSuffix(name, ".json") || isTemp(name) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(st.stateDir, IndexDir, name))
		if err != nil {
			continue
		}
		var e indexEntry
		if json.Unmarshal(data, &e) == nil && filepath.IsAbs(e.ProjectRoot) && !seen[e.ProjectRoot] {
			seen[e.ProjectRoot] = true
			roots = append(roots, e.ProjectRoot)
		}
	}
	sort.Strings(roots)
	return roots
}
