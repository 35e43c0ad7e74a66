package session

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fakeClock returns increasing times one second apart.
func fakeClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func newStore(t testing.TB) *Store {
	t.Helper()
	st, err := Open(Config{StateDir: t.TempDir(), Now: fakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestSessionJSONGolden(t *testing.T) {
	created := time.Date(2025, 1, 2, 3, 4, 5, 600000000, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		s    Session
	}{
		{"unset_fields_are_null", Session{ID: "0b8f3a2e-1c4d-4e5f-8a9b-0c1d2e3f4a5b", CreatedAt: created, UpdatedAt: created,
			ProjectRoot: "/work/project", Mode: "workbench"}},
		{"all_fields", Session{ID: "0b8f3a2e-1c4d-4e5f-8a9b-0c1d2e3f4a5b", CreatedAt: created, UpdatedAt: created.Add(90 * time.Minute),
			ProjectRoot: "/work/project", Persona: "REVIEWER", Mode: "pipeline", ConversationID: "6c3e0d1a-0000-4000-8000-000000000001"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.MarshalIndent(tt.s, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tt.name+".json")
			if *update {
				os.MkdirAll("testdata", 0o755)
				os.WriteFile(path, append(got, '\n'), 0o644)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got)+"\n" != string(want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			var back Session
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			if !back.CreatedAt.Equal(tt.s.CreatedAt) || back.Persona != tt.s.Persona || back.ConversationID != tt.s.ConversationID {
				t.Errorf("round trip: %+v", back)
			}
		})
	}
}

// A session file written before the one conversation id (an engine other
// than Claude Code had its id as engineSessionId, claudeSessionId null)
// reads the same, and is written back as the specification's
// claudeSessionId alone.
func TestOldEngineSessionIDReads(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "old_engine_session_id.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s Session
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if s.ConversationID != "0199a213-81c0-7800-8aa1-bbab2a035a53" || s.Engine != "codex" || s.Mode != "direct" {
		t.Fatalf("old file read as %+v", s)
	}
	out, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"claudeSessionId":"0199a213-81c0-7800-8aa1-bbab2a035a53"`) || strings.Contains(string(out), "engineSessionId") {
		t.Fatalf("written back as %s", out)
	}
	// A file of the new shape wins over a stale old field.
	if err := json.Unmarshal([]byte(`{"schemaVersion":1,"claudeSessionId":"new","engineSessionId":"old"}`), &s); err != nil || s.ConversationID != "new" {
		t.Fatalf("%+v %v", s, err)
	}
}

func TestCreateGetSaveAcrossRestart(t *testing.T) {
	stateDir, root := t.TempDir(), t.TempDir()
	st, err := Open(Config{StateDir: stateDir, Now: fakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := st.Create(root, "REVIEWER", "workbench")
	if err != nil {
		t.Fatal(err)
	}
	if !ValidID(s.ID) || s.ProjectRoot != root || !s.CreatedAt.Equal(s.UpdatedAt) {
		t.Fatalf("created %+v", s)
	}
	s.ConversationID = "claude-1"
	if err := st.Save(s); err != nil {
		t.Fatal(err)
	}
	if !s.UpdatedAt.After(s.CreatedAt) {
		t.Error("Save did not advance UpdatedAt")
	}
	st.Close()

	// A new Store on the same state dir: lookup by ID alone.
	st2, err := Open(Config{StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	got, err := st2.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ConversationID != "claude-1" || got.Persona != "REVIEWER" || got.ProjectRoot != root || !got.UpdatedAt.Equal(s.UpdatedAt) {
		t.Errorf("Get after restart = %+v", got)
	}

	for path, want := range map[string]os.FileMode{
		FilePath(root, s.ID):                            0o600,
		filepath.Join(root, SessionsDir):                0o700,
		filepath.Join(stateDir, IndexDir):               0o700,
		filepath.Join(stateDir, IndexDir, s.ID+".json"): 0o600,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
}

func TestCreateValidation(t *testing.T) {
	st := newStore(t)
	root := t.TempDir()
	file := filepath.Join(root, "f")
	os.WriteFile(file, nil, 0o600)
	tests := []struct{ name, root, persona, mode string }{
		{"bad mode", root, "", "chat"},
		{"bad persona", root, "../x", "direct"},
		{"missing root", filepath.Join(root, "missing"), "", "direct"},
		{"root is a file", file, "", "direct"},
		{"empty root", "", "", "direct"},
	}
	for _, tt := range tests {
		if _, err := st.Create(tt.root, tt.persona, tt.mode); err == nil {
			t.Errorf("%s: Create succeeded", tt.name)
		}
	}
}

func TestInvalidIDs(t *testing.T) {
	st := newStore(t)
	root := t.TempDir()
	for _, id := range []string{
		"", "../../etc/passwd", "..", "a/b",
		"0B8F3A2E-1C4D-4E5F-8A9B-0C1D2E3F4A5B",      // not canonical
		"0b8f3a2e-1c4d-1e5f-8a9b-0c1d2e3f4a5b",      // version 1
		"{0b8f3a2e-1c4d-4e5f-8a9b-0c1d2e3f4a5b}",    // braces
		"0b8f3a2e1c4d4e5f8a9b0c1d2e3f4a5b",          // no dashes
		"0b8f3a2e-1c4d-4e5f-8a9b-0c1d2e3f4a5b/../x", // traversal suffix
	} {
		t.Run(id, func(t *testing.T) {
			checks := map[string]error{}
			_, checks["Get"] = st.Get(id)
			_, checks["GetIn"] = st.GetIn(root, id)
			checks["Delete"] = st.Delete(id)
			checks["DeleteIn"] = st.DeleteIn(root, id)
			_, checks["EventLog"] = st.EventLog(id)
			checks["Save"] = st.Save(&Session{ID: id, ProjectRoot: root, Mode: "direct"})
			for op, err := range checks {
				if !errors.Is(err, ErrInvalidID) {
					t.Errorf("%s: err = %v, want ErrInvalidID", op, err)
				}
			}
		})
	}
}

func TestListOrderAndCorruptFiles(t *testing.T) {
	st := newStore(t)
	root := t.TempDir()
	var ids []string
	for i := range 3 {
		s, err := st.Create(root, "", "direct")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
		_ = i
	}
	// Touch the first one: it becomes the newest.
	first, _ := st.Get(ids[0])
	if err := st.Save(first); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(root, SessionsDir)
	bad := map[string]string{
		"11111111-1111-4111-8111-111111111111.json": "{not json",
		"22222222-2222-4222-8222-222222222222.json": "",
		"33333333-3333-4333-8333-333333333333.json": `{"foo":1}`,
		"44444444-4444-4444-8444-444444444444.json": `{"schemaVersion":2,"id":"44444444-4444-4444-8444-444444444444"}`,
		"55555555-5555-4555-8555-555555555555.json": `{"schemaVersion":1,"id":"66666666-6666-4666-8666-666666666666","createdAt":"2025-01-01T00:00:00Z","updatedAt":"2025-01-01T00:00:00Z","mode":"direct"}`,
		"77777777-7777-4777-8777-777777777777.json": `{"schemaVersion":1,"id":"77777777-7777-4777-8777-777777777777","createdAt":"2025-01-01T00:00:00Z","updatedAt":"2025-01-01T00:00:00Z","mode":"yolo"}`,
		"88888888-8888-4888-8888-888888888888.json": `[1,2]`,
		"notes.json": `{}`,
	}
	for name, content := range bad {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Things List must ignore silently.
	os.WriteFile(filepath.Join(dir, "."+ids[1]+".json.123.tmp"), []byte("{partial"), 0o600)
	os.WriteFile(filepath.Join(dir, ids[1]+".events.jsonl"), []byte("{}\n"), 0o600)
	os.Mkdir(filepath.Join(dir, "99999999-9999-4999-8999-999999999999.json"), 0o700)

	sessions, problems, err := st.List(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sessions {
		got = append(got, s.ID)
	}
	if want := []string{ids[0], ids[2], ids[1]}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("List order = %v, want %v (newest updatedAt first)", got, want)
	}
	if len(problems) != len(bad) {
		t.Errorf("%d problems, want %d: %v", len(problems), len(bad), problems)
	}
	for _, p := range problems {
		var se *Error
		if !errors.As(p, &se) || !strings.HasPrefix(se.Path, dir) || !errors.Is(p, ErrCorrupt) {
			t.Errorf("problem %v: want an *Error with the path, matching ErrCorrupt", p)
		}
	}
	// Get and GetIn report a corrupt file as such.
	if _, err := st.GetIn(root, "33333333-3333-4333-8333-333333333333"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("GetIn foreign file: err = %v", err)
	}
	// A corrupt session can still be deleted.
	if err := st.DeleteIn(root, "11111111-1111-4111-8111-111111111111"); err != nil {
		t.Errorf("DeleteIn corrupt: %v", err)
	}
}

func TestListEmptyProject(t *testing.T) {
	sessions, problems, err := newStore(t).List(t.TempDir())
	if err != nil || len(sessions) != 0 || len(problems) != 0 {
		t.Errorf("got %v %v %v", sessions, problems, err)
	}
}

func TestIndexSelfHealing(t *testing.T) {
	st := newStore(t)
	root := t.TempDir()
	a, _ := st.Create(root, "", "direct")
	b, _ := st.Create(root, "", "direct")

	t.Run("session file removed behind the store's back", func(t *testing.T) {
		os.Remove(FilePath(root, a.ID))
		if _, err := st.Get(a.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
		if _, err := os.Stat(st.indexPath(a.ID)); !os.IsNotExist(err) {
			t.Error("stale index entry kept")
		}
	})
	t.Run("index entry lost: found through a known root", func(t *testing.T) {
		c, _ := st.Create(root, "", "direct")
		os.Remove(st.indexPath(b.ID))
		got, err := st.Get(b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != b.ID {
			t.Errorf("got %s", got.ID)
		}
		if r, err := st.readIndex(b.ID); err != nil || r != root {
			t.Errorf("index entry not rebuilt: %q %v", r, err)
		}
		_ = c
	})
	t.Run("corrupt index entry", func(t *testing.T) {
		os.WriteFile(st.indexPath(b.ID), []byte("garbage"), 0o600)
		got, err := st.Get(b.ID) // rebuilt from the other session's root
		if err != nil || got.ID != b.ID {
			t.Fatalf("Get = %v, %v", got, err)
		}
	})
	t.Run("unknown id", func(t *testing.T) {
		_, err := st.Get("0b8f3a2e-1c4d-4e5f-8a9b-0c1d2e3f4a5b")
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("err = %v", err)
		}
		if err.Error() != "session 0b8f3a2e-1c4d-4e5f-8a9b-0c1d2e3f4a5b: not found" {
			t.Errorf("message = %q", err)
		}
	})
	t.Run("GetIn indexes", func(t *testing.T) {
		os.Remove(st.indexPath(b.ID))
		if _, err := st.GetIn(root, b.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(st.indexPath(b.ID)); err != nil {
			t.Error("GetIn did not index the session")
		}
	})
	t.Run("project moved", func(t *testing.T) {
		moved := filepath.Join(t.TempDir(), "moved")
		if err := os.Rename(root, moved); err != nil {
			t.Fatal(err)
		}
		got, err := st.GetIn(moved, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ProjectRoot != moved {
			t.Errorf("ProjectRoot = %s, want the new location", got.ProjectRoot)
		}
		if again, err := st.Get(b.ID); err != nil || again.ProjectRoot != moved {
			t.Errorf("Get after GetIn re-indexed: %v %v", again, err)
		}
	})
}

func TestDelete(t *testing.T) {
	st := newStore(t)
	root := t.TempDir()
	s, _ := st.Create(root, "", "pipeline")
	other, _ := st.Create(root, "", "pipeline")
	log, err := st.EventLog(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	log.Append([]byte(`{"type":"x"}`))
	prompt := filepath.Join(root, ".chirality", "prompts", s.ID+"-system.txt")
	os.MkdirAll(filepath.Dir(prompt), 0o700)
	os.WriteFile(prompt, []byte("p"), 0o600)

	if err := st.Delete(s.ID); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{FilePath(root, s.ID), EventLogPath(root, s.ID), prompt, st.indexPath(s.ID)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still exists", p)
		}
	}
	if _, err := log.Append([]byte(`{}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("append to a deleted session's log: %v", err)
	}
	if err := st.Save(s); !errors.Is(err, ErrNotFound) {
		t.Errorf("Save after Delete: %v (must not resurrect)", err)
	}
	if err := st.Delete(s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete: %v", err)
	}
	if _, err := st.Get(other.ID); err != nil {
		t.Errorf("other session affected: %v", err)
	}
}

func TestConcurrentSaves(t *testing.T) {
	st := newStore(t)
	root := t.TempDir()
	s, _ := st.Create(root, "", "workbench")
	path := FilePath(root, s.ID)

	const writers, each = 8, 40
	var wg sync.WaitGroup
	done := make(chan struct{})
	readerErr := make(chan error, 1)
	go func() { // a reader that must always see one whole version
		defer close(readerErr)
		for {
			select {
			case <-done:
				return
			default:
			}
			data, err := os.ReadFile(path)
			if err != nil {
				readerErr <- err
				return
			}
			var got Session
			if err := json.Unmarshal(data, &got); err != nil {
				readerErr <- fmt.Errorf("torn file seen: %v: %q", err, data)
				return
			}
			// Get, which reads without the session's lock while saves
			// run, always finds the session whole.
			if g, err := st.Get(s.ID); err != nil || g.ID != s.ID {
				readerErr <- fmt.Errorf("Get during saves: %+v, %v", g, err)
				return
			}
		}
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				c := *s // each writer saves its own copy
				c.ConversationID = fmt.Sprintf("w%d-%d", w, i)
				if err := st.Save(&c); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	if err := <-readerErr; err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(got.ConversationID, fmt.Sprintf("-%d", each-1)) {
		t.Errorf("final ConversationID %q is not some writer's last save", got.ConversationID)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if isTemp(e.Name()) {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestCrashBetweenWriteAndRename(t *testing.T) {
	st := newStore(t)
	root := t.TempDir()
	s, _ := st.Create(root, "REVIEWER", "workbench")
	s.ConversationID = "before-crash"
	if err := st.Save(s); err != nil {
		t.Fatal(err)
	}

	crash := errors.New("simulated crash")
	var leftover string
	testHookBeforeRename = func(tmp string) error { leftover = tmp; return crash }
	c := *s
	c.ConversationID = "lost"
	err := st.Save(&c)
	testHookBeforeRename = nil
	if !errors.Is(err, crash) {
		t.Fatalf("Save err = %v, want the simulated crash", err)
	}
	if _, err := os.Stat(leftover); err != nil {
		t.Fatalf("the crash should leave the temporary file: %v", err)
	}

	// "Restart": a new Store on the same state.
	st2, _ := Open(Config{StateDir: st.StateDir()})
	got, err := st2.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ConversationID != "before-crash" {
		t.Errorf("after the crash ConversationID = %q, want the last saved value", got.ConversationID)
	}
	sessions, problems, err := st2.List(root)
	if err != nil || len(sessions) != 1 || len(problems) != 0 {
		t.Errorf("List after crash: %d sessions, problems %v, err %v", len(sessions), problems, err)
	}
	// A stale temporary file is cleaned up by List; a fresh one is kept
	// (it may belong to a write in progress).
	old := time.Now().Add(-2 * staleTempAge)
	os.Chtimes(leftover, old, old)
	fresh := filepath.Join(filepath.Dir(leftover), "."+s.ID+".json.999.tmp")
	os.WriteFile(fresh, []byte("{"), 0o600)
	st2.List(root)
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Error("stale temporary file not removed")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("fresh temporary file removed")
	}
	// The next save works and replaces the file.
	got.ConversationID = "after"
	if err := st2.Save(got); err != nil {
		t.Fatal(err)
	}
}

func TestSaveValidation(t *testing.T) {
	st := newStore(t)
	root := t.TempDir()
	s, _ := st.Create(root, "", "direct")
	for name, mutate := range map[string]func(*Session){
		"bad mode":      func(s *Session) { s.Mode = "x" },
		"bad persona":   func(s *Session) { s.Persona = "a/b" },
		"relative root": func(s *Session) { s.ProjectRoot = "rel" },
	} {
		c := *s
		mutate(&c)
		if err := st.Save(&c); err == nil {
			t.Errorf("%s: Save succeeded", name)
		}
	}
}

// BenchmarkList1000Cold lists with an empty cache (a fresh Store), as
// the first List after a restart does.
func BenchmarkList1000Cold(b *testing.B) {
	st := newStore(b)
	root := b.TempDir()
	for range 1000 {
		if _, err := st.Create(root, "REVIEWER", "workbench"); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		fresh, _ := Open(Config{StateDir: st.StateDir()})
		sessions, _, err := fresh.List(root)
		if err != nil || len(sessions) != 1000 {
			b.Fatal(len(sessions), err)
		}
	}
}

func BenchmarkList1000(b *testing.B) {
	st := newStore(b)
	root := b.TempDir()
	for range 1000 {
		if _, err := st.Create(root, "REVIEWER", "workbench"); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		sessions, _, err := st.List(root)
		if err != nil || len(sessions) != 1000 {
			b.Fatal(len(sessions), err)
		}
	}
}

func TestListLogsSkippedFiles(t *testing.T) {
	var buf strings.Builder
	logger := zerolog.New(&buf)
	st, err := Open(Config{StateDir: t.TempDir(), Logger: &logger})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, SessionsDir), 0o700)
	os.WriteFile(FilePath(root, "11111111-1111-4111-8111-111111111111"), []byte("nope"), 0o600)
	if _, problems, _ := st.List(root); len(problems) != 1 {
		t.Fatalf("problems = %v", problems)
	}
	if !strings.Contains(buf.String(), `"level":"warn"`) || !strings.Contains(buf.String(), "11111111-1111-4111-8111-111111111111.json") {
		t.Errorf("log = %q", buf.String())
	}
}

func TestDefaultStateDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	tests := []struct{ xdg, want string }{
		{"/var/state", "/var/state/harness"},
		{"relative/dir", filepath.Join(home, ".local", "state", "harness")}, // not absolute: ignored
		{"", filepath.Join(home, ".local", "state", "harness")},
	}
	for _, tt := range tests {
		t.Setenv("XDG_STATE_HOME", tt.xdg)
		if got, err := DefaultStateDir(); err != nil || got != tt.want {
			t.Errorf("XDG_STATE_HOME=%q: %q, %v; want %q", tt.xdg, got, err, tt.want)
		}
	}
}

func TestAddKeepsGivenIDAndWorktreeFields(t *testing.T) {
	st, err := Open(Config{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	id := "0b8f3a2e-1c4d-4e5f-8a9b-0c1d2e3f4a5b"
	s, err := st.Add(Session{ID: id, ProjectRoot: root, Mode: "workbench", Isolation: IsolationWorktree,
		Workdir: "/wt/x", Branch: "harness/0b8f3a2e", Base: "main", BaseCommit: "abc"})
	if err != nil || s.ID != id {
		t.Fatalf("add: %v %v", s, err)
	}
	got, err := st.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Isolation != IsolationWorktree || got.Workdir != "/wt/x" || got.Branch != "harness/0b8f3a2e" ||
		got.Base != "main" || got.BaseCommit != "abc" || got.Dir() != "/wt/x" {
		t.Fatalf("got %+v", got)
	}
	if _, err := st.Add(Session{ID: id, ProjectRoot: root, Mode: "workbench"}); err == nil {
		t.Fatal("a second session of the same ID was written")
	}
	if _, err := st.Add(Session{ID: "not-a-uuid", ProjectRoot: root, Mode: "workbench"}); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("bad id: %v", err)
	}
}

// A session another process made with another state directory (another
// index) is listed by its project; opening it by ID after listing finds it
// too (004: GET /session/list then GET /session/:id is 200, not 404).
func TestListedSessionIsFoundByID(t *testing.T) {
	root := t.TempDir()
	other := newStore(t) // another process, another state directory
	s, err := other.Create(root, "", "direct")
	if err != nil {
		t.Fatal(err)
	}
	st := newStore(t)
	if _, err := st.Get(s.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before listing: %v, want ErrNotFound (no index entry, no known root)", err)
	}
	listed, _, err := st.List(root)
	if err != nil || len(listed) != 1 || listed[0].ID != s.ID {
		t.Fatalf("List: %v %v", listed, err)
	}
	got, err := st.Get(s.ID)
	if err != nil || got.ID != s.ID || got.ProjectRoot != listed[0].ProjectRoot {
		t.Fatalf("Get after List: %v %v, want the listed session", got, err)
	}
}

// A session's open event log is handed out while a save of the session
// is under way (it holds the session's lock across two fsyncs): an SSE
// reader joining a turn as the turn's session:init is saved does not
// wait for the save. (Were EventLog to wait for the lock, this test
// would hang until its deadline.)
func TestEventLogDuringSave(t *testing.T) {
	st := newStore(t)
	s, err := st.Create(t.TempDir(), "REVIEWER", "workbench")
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.EventLog(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	inSave, release := make(chan struct{}), make(chan struct{})
	testHookBeforeRename = func(string) error { close(inSave); <-release; return nil }
	defer func() { testHookBeforeRename = nil }()
	saved := make(chan error, 1)
	go func() { saved <- st.Save(s) }()
	<-inSave
	l, err := st.EventLog(s.ID)
	if err != nil || l != first {
		t.Fatalf("EventLog during a save: %p, %v; want the open log %p", l, err, first)
	}
	select {
	case err := <-saved:
		t.Fatalf("the save ended (%v) before it was let go", err)
	default:
	}
	close(release)
	if err := <-saved; err != nil {
		t.Fatal(err)
	}
	// A closed log is opened again, under the lock.
	first.Close()
	if l, err := st.EventLog(s.ID); err != nil || l == first {
		t.Fatalf("after Close: %p, %v; want a new log", l, err)
	}
}
