package session

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A queue is stored in the session's state directory, read back as
// written, found by QueuedSessions, removed when empty, and goes with the
// session; a crash before the rename leaves the old queue.
func TestQueueStoredWithSession(t *testing.T) {
	st := newStore(t)
	root := t.TempDir()
	s, err := st.Create(root, "", "workbench")
	if err != nil {
		t.Fatal(err)
	}
	if q, err := st.LoadQueue(s.ID); err != nil || !q.Empty() {
		t.Fatalf("new session's queue = %+v, %v; want empty", q, err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	q := Queue{Prompts: []QueuedPrompt{{PromptID: "a", Message: "one", QueuedAt: at}, {PromptID: "b", Message: "two", QueuedAt: at}}}
	if err := st.SaveQueue(s.ID, q); err != nil {
		t.Fatal(err)
	}
	got, err := st.LoadQueue(s.ID)
	if err != nil || len(got.Prompts) != 2 || got.Prompts[1].Message != "two" || !got.Prompts[0].QueuedAt.Equal(at) {
		t.Fatalf("LoadQueue = %+v, %v", got, err)
	}
	if ids := st.QueuedSessions([]string{root}); !slices.Equal(ids, []string{s.ID}) {
		t.Fatalf("QueuedSessions = %v, want [%s]", ids, s.ID)
	}

	// A crash between the write and the rename: the old queue stays.
	testHookBeforeRename = func(string) error { return errors.New("crash") }
	started := Queue{Prompts: q.Prompts[1:], Started: &q.Prompts[0]}
	if err := st.SaveQueue(s.ID, started); err == nil {
		t.Fatal("SaveQueue with a crash before rename succeeded")
	}
	testHookBeforeRename = nil
	if got, _ := st.LoadQueue(s.ID); len(got.Prompts) != 2 || got.Started != nil {
		t.Fatalf("after a torn save the queue is %+v, want the old one", got)
	}

	if err := st.SaveQueue(s.ID, Queue{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(QueuePath(root, s.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("empty queue left its file: %v", err)
	}
	if ids := st.QueuedSessions([]string{root}); len(ids) != 0 {
		t.Fatalf("QueuedSessions after emptying = %v", ids)
	}
	// A hold is stored, and a held queue is kept with no prompt in it.
	if err := st.SaveQueue(s.ID, Queue{Held: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.LoadQueue(s.ID); err != nil || !got.Held || got.Empty() {
		t.Fatalf("a held empty queue reads back as %+v, %v", got, err)
	}
	if ids := st.QueuedSessions([]string{root}); !slices.Equal(ids, []string{s.ID}) {
		t.Fatalf("QueuedSessions with a held empty queue = %v", ids)
	}
	if err := st.SaveQueue(s.ID, q); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(QueuePath(root, s.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("deleted session left its queue: %v", err)
	}
}

// The queue file is in the project, where an agent may write it: one over
// MaxQueueFile is reported corrupt without being read (a sparse file
// here, so the test writes nothing of that size).
func TestLoadQueueRefusesAHugeFile(t *testing.T) {
	st := newStore(t)
	s, err := st.Create(t.TempDir(), "", "workbench")
	if err != nil {
		t.Fatal(err)
	}
	path := QueuePath(s.ProjectRoot, s.ID)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxQueueFile + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := st.LoadQueue(s.ID); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("LoadQueue of a %d-byte file = %v, want ErrCorrupt for its size", MaxQueueFile+1, err)
	}
}
