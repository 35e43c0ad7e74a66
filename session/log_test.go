package session

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A session with Log LogThread keeps its one event log at the
// `harness rpc` thread's path, reads it back after a restart, and removes
// it with the session; any other Log is refused, also from a file.
func TestThreadLog(t *testing.T) {
	st := newStore(t)
	root := t.TempDir()
	id := "3f1c2b4a-8d7e-4f6a-9b5c-1d2e3f4a5b6c"
	s, err := st.Add(Session{ID: id, ProjectRoot: root, Mode: "direct", Log: LogThread})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(s.ProjectRoot, ThreadsDir, id, "events.jsonl")
	if s.EventLogPath() != want {
		t.Fatalf("EventLogPath %s, want %s", s.EventLogPath(), want)
	}
	l, err := st.EventLog(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([]byte(`{"type":"user:message","text":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(want); err != nil {
		t.Fatalf("the log is not at the thread's path: %v", err)
	}
	if _, err := os.Stat(EventLogPath(s.ProjectRoot, id)); !os.IsNotExist(err) {
		t.Fatalf("a log at the default path too: %v", err)
	}
	st2, err := Open(Config{StateDir: st.StateDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if got, err := st2.Get(id); err != nil || got.Log != LogThread {
		t.Fatalf("after a restart: %+v %v", got, err)
	}
	if err := st.Delete(id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(want); !os.IsNotExist(err) {
		t.Fatalf("the thread's log outlived its session: %v", err)
	}

	if _, err := st.Add(Session{ProjectRoot: root, Mode: "direct", Log: "../../etc"}); err == nil {
		t.Fatal("a log other than LogThread was accepted")
	}
	path := FilePath(s.ProjectRoot, id)
	data := `{"schemaVersion":1,"id":"` + id + `","createdAt":"2025-01-02T03:04:05Z","updatedAt":"2025-01-02T03:04:05Z","projectRoot":"/x","persona":null,"mode":"direct","claudeSessionId":null,"log":"/etc/passwd"}`
	if _, err := decode(id, path, []byte(data)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a session file naming another log: %v, want ErrCorrupt", err)
	}
}
