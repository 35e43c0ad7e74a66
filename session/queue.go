package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// QueueFile is the name of a session's prompt queue in its state
// directory (StateDir): <projectRoot>/.chirality/sessions/<id>.d/queue.json.
// It goes with the session when the session is deleted.
const QueueFile = "queue.json"

// MaxQueueFile bounds what LoadQueue reads: the file is in the project,
// where anything may write it. The core's own queues stay far below it
// (100 prompts of 256 KiB, each byte at most 6 in JSON); a larger file is
// ErrCorrupt, not read.
const MaxQueueFile = 160 << 20

// errTooLarge: a file over the bound readBounded was given.
var errTooLarge = errors.New("file too large")

// readBounded is os.ReadFile refusing (errTooLarge) a file of more than
// max bytes, before reading it and while reading it.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if fi.Size() > max {
		return nil, errTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		return nil, errTooLarge
	}
	return data, err
}

// QueuedPrompt is one prompt waiting in a session's queue.
type QueuedPrompt struct {
	PromptID string    `json:"promptId"`
	Message  string    `json:"message"`
	QueuedAt time.Time `json:"queuedAt"`
}

// Queue is a session's stored prompt queue: Prompts in the order they
// run, and Started, the prompt whose turn was started from the queue and
// has not yet been seen to end. Started is written, and the prompt taken
// out of Prompts, in one atomic write before its turn starts: after a
// crash a prompt is either still queued or started, never both, so none
// runs twice. Held is a hold on the queue (a door paused the session:
// no queued prompt starts until it is released); it is stored so that it
// outlives a restart, and a held queue is kept even with nothing in it.
type Queue struct {
	Prompts []QueuedPrompt `json:"prompts"`
	Started *QueuedPrompt  `json:"started,omitempty"`
	Held    bool           `json:"held,omitempty"`
}

// Empty reports whether q holds nothing (no file is kept for it).
func (q Queue) Empty() bool { return len(q.Prompts) == 0 && q.Started == nil && !q.Held }

// QueuePath returns the queue file of session id in projectRoot.
func QueuePath(projectRoot, id string) string {
	return filepath.Join(StateDir(projectRoot, id), QueueFile)
}

// LoadQueue returns the stored queue of session id (empty when it has
// none). A file that is not a queue is ErrCorrupt.
func (st *Store) LoadQueue(id string) (Queue, error) {
	s, err := st.Get(id)
	if err != nil {
		return Queue{}, err
	}
	path := QueuePath(s.ProjectRoot, id)
	data, err := readBounded(path, MaxQueueFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Queue{}, nil
	}
	if errors.Is(err, errTooLarge) {
		return Queue{}, &Error{ID: id, Path: path, Err: fmt.Errorf("%w: larger than %d bytes", ErrCorrupt, MaxQueueFile)}
	}
	if err != nil {
		return Queue{}, &Error{ID: id, Path: path, Err: err}
	}
	var q Queue
	if err := json.Unmarshal(data, &q); err != nil {
		return Queue{}, &Error{ID: id, Path: path, Err: ErrCorrupt}
	}
	return q, nil
}

// SaveQueue stores q as session id's queue, atomically (after a crash the
// file holds the old or the new queue) and durably; an empty queue
// removes the file.
func (st *Store) SaveQueue(id string, q Queue) error {
	s, err := st.Get(id)
	if err != nil {
		return err
	}
	path := QueuePath(s.ProjectRoot, id)
	if q.Empty() {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return &Error{ID: id, Path: path, Err: err}
		}
		return nil
	}
	if q.Prompts == nil {
		q.Prompts = []QueuedPrompt{}
	}
	data, err := json.Marshal(q)
	if err != nil {
		return &Error{ID: id, Path: path, Err: err}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return &Error{ID: id, Path: path, Err: err}
	}
	if err := writeFileAtomic(path, data); err != nil {
		return &Error{ID: id, Path: path, Err: err}
	}
	return nil
}

// QueuedSessions returns the IDs of the sessions, in roots and in every
// project this store's index knows, that have a stored queue.
func (st *Store) QueuedSessions(roots []string) []string {
	var ids []string
	seen := map[string]bool{}
	for _, root := range slices.Concat(roots, st.knownRoots()) {
		if seen[root] {
			continue
		}
		seen[root] = true
		matches, _ := filepath.Glob(filepath.Join(root, SessionsDir, "*.d", QueueFile))
		for _, m := range matches {
			d := filepath.Base(filepath.Dir(m))
			id := d[:len(d)-len(".d")]
			if ValidID(id) && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}
