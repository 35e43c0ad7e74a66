package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/checkpoint"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// fileEngine is an in-process engine whose turns change the project's
// files the way an agent would (edit, create, delete), then answer. A
// turn whose message is "hold" waits for release.
type fileEngine struct {
	scriptEngine
	edits   map[string]func(root string) // by message
	release chan struct{}
}

func (f *fileEngine) Name() string { return "files" }

func (f *fileEngine) StartTurn(ctx context.Context, req engine.Request) (engine.Turn, error) {
	if req.Message == "hold" {
		<-f.release
	}
	if edit := f.edits[req.Message]; edit != nil {
		edit(req.Cwd)
	}
	return f.scriptEngine.StartTurn(ctx, req)
}

// userGitRoot runs git as the user in root (no config of the machine).
func userGitRoot(t *testing.T, root string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgSign=false"}, args...)...)
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_OPTIONAL_LOCKS=0"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// projectFiles lists root's files (not .git, not .chirality) with their
// content.
func projectFiles(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (rel == ".git" || rel == ".chirality") {
			return filepath.SkipDir
		}
		if d.IsDir() {
			fmt.Fprintf(&b, "%s/\n", rel)
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %q\n", rel, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func changeOps(cs []checkpoint.Change) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.Op+" "+c.Path)
	}
	return strings.Join(parts, ", ")
}

func newFileEnv(t *testing.T, mutate func(*Config)) (*testEnv, *fileEngine) {
	fe := &fileEngine{release: make(chan struct{}), edits: map[string]func(string){
		"one": func(root string) {
			writeFile(t, filepath.Join(root, "a.txt"), "a after one\n")
			writeFile(t, filepath.Join(root, "c", "new.txt"), "created by one\n")
			os.Remove(filepath.Join(root, "b.txt"))
		},
		"two": func(root string) {
			writeFile(t, filepath.Join(root, "a.txt"), "a after two\n")
			writeFile(t, filepath.Join(root, "d.txt"), "created by two\n")
		},
	}}
	e := newTestEnv(t, func(c *Config) {
		c.Engines = []engine.Engine{fe}
		if mutate != nil {
			mutate(c)
		}
	})
	writeFile(t, filepath.Join(e.root, "a.txt"), "a at first\n")
	writeFile(t, filepath.Join(e.root, "b.txt"), "b at first\n")
	return e, fe
}

func userMessageSeq(t *testing.T, evs []stored) int64 {
	t.Helper()
	if len(evs) == 0 || evs[0].Type != event.TypeUserMessage {
		t.Fatalf("turn does not open with user:message: %v", evs)
	}
	return evs[0].Seq
}

// Each turn is preceded by a snapshot recorded under its user:message
// seq; FilesDiff previews and RestoreFiles undoes the turns from one on,
// byte for byte; the user's repository (HEAD, status, index, branches) is
// the same before and after; a wrong turn or session is ErrSeqNotFound or
// ErrNotFound; a running turn makes RestoreFiles ErrBusy (FilesDiff
// still works).
func TestRestoreFilesUndoesTurns(t *testing.T) {
	e, fe := newFileEnv(t, nil)
	userGitRoot(t, e.root, "init", "-q")
	userGitRoot(t, e.root, "add", "a.txt")
	userGitRoot(t, e.root, "commit", "-q", "-m", "first")
	userState := func() string {
		idx, _ := os.ReadFile(filepath.Join(e.root, ".git", "index"))
		return userGitRoot(t, e.root, "rev-parse", "HEAD") + userGitRoot(t, e.root, "status", "--porcelain") +
			userGitRoot(t, e.root, "branch", "-a") + userGitRoot(t, e.root, "stash", "list") + fmt.Sprintf("%x", idx)
	}
	files0 := projectFiles(t, e.root)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "files"})
	if err != nil {
		t.Fatal(err)
	}
	state0 := userState() // with .chirality/ (the session) untracked
	evs1, _ := e.turn(s.ID, "one")
	files1 := projectFiles(t, e.root)
	evs2, _ := e.turn(s.ID, "two")
	seq1, seq2 := userMessageSeq(t, evs1), userMessageSeq(t, evs2)

	cps, err := e.h.FileCheckpoints(s.ID)
	if err != nil || len(cps) != 2 || cps[0].Seq != seq1 || cps[1].Seq != seq2 || cps[0].Snapshot == "" || cps[1].Snapshot == "" {
		t.Fatalf("FileCheckpoints = %+v, %v; want snapshots at %d and %d", cps, err, seq1, seq2)
	}
	// The first walks the tree; on Linux a watcher lists what turn one
	// changed, and the second reads that only.
	if !cps[0].Full || cps[0].Why != "first snapshot" || (runtime.GOOS == "linux" && cps[1].Full) {
		t.Fatalf("FileCheckpoints = %+v: want the first one full, the second from the watcher", cps)
	}
	d, err := e.h.FilesDiff(context.Background(), s.ID, seq2)
	if err != nil || changeOps(d) != "modified a.txt, added d.txt" {
		t.Fatalf("FilesDiff(turn two) = %s, %v", changeOps(d), err)
	}
	if !strings.Contains(d[0].Patch, "-a after one\n+a after two\n") {
		t.Fatalf("a.txt patch:\n%s", d[0].Patch)
	}

	// A running turn: no restore, the preview still works.
	held := make(chan error, 1)
	go func() {
		_, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "hold"})
		held <- err
	}()
	waitFor(t, "the held turn", func() bool { return e.h.IsRunning(s.ID) })
	if _, err := e.h.RestoreFiles(context.Background(), s.ID, seq1); !errors.Is(err, ErrBusy) {
		t.Fatalf("RestoreFiles during a turn: %v, want ErrBusy", err)
	}
	if _, err := e.h.FilesDiff(context.Background(), s.ID, seq1); err != nil {
		t.Fatalf("FilesDiff during a turn: %v", err)
	}
	close(fe.release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the held turn's end", func() bool { return !e.h.IsRunning(s.ID) })

	got, err := e.h.RestoreFiles(context.Background(), s.ID, seq2)
	if err != nil || changeOps(got) != "modified a.txt, added d.txt" {
		t.Fatalf("RestoreFiles(turn two) = %s, %v", changeOps(got), err)
	}
	if f := projectFiles(t, e.root); f != files1 {
		t.Fatalf("after undoing turn two:\n%s\nwant\n%s", f, files1)
	}
	got, err = e.h.RestoreFiles(context.Background(), s.ID, seq1)
	if err != nil || changeOps(got) != "modified a.txt, deleted b.txt, added c/new.txt" {
		t.Fatalf("RestoreFiles(turn one) = %s, %v", changeOps(got), err)
	}
	if f := projectFiles(t, e.root); f != files0 {
		t.Fatalf("after undoing both turns:\n%s\nwant\n%s", f, files0)
	}
	if st := userState(); st != state0 {
		t.Fatalf("the user's repository changed:\n%s\nwas\n%s", st, state0)
	}

	for _, seq := range []int64{0, seq1 + 1, 9999} {
		if _, err := e.h.RestoreFiles(context.Background(), s.ID, seq); !errors.Is(err, ErrSeqNotFound) {
			t.Errorf("RestoreFiles(seq %d) = %v, want ErrSeqNotFound", seq, err)
		}
		if _, err := e.h.FilesDiff(context.Background(), s.ID, seq); !errors.Is(err, ErrSeqNotFound) {
			t.Errorf("FilesDiff(seq %d) = %v, want ErrSeqNotFound", seq, err)
		}
	}
	missing := "00000000-0000-4000-8000-000000000000"
	if _, err := e.h.RestoreFiles(context.Background(), missing, seq1); !errors.Is(err, ErrNotFound) {
		t.Errorf("RestoreFiles of an unknown session: %v", err)
	}
	if _, err := e.h.FileCheckpoints(missing); !errors.Is(err, ErrNotFound) {
		t.Errorf("FileCheckpoints of an unknown session: %v", err)
	}
	// The record goes with the session.
	if err := e.h.DeleteSession(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.root, ".chirality", "sessions", s.ID+".d")); !os.IsNotExist(err) {
		t.Fatalf("the session's checkpoint record outlived it: %v", err)
	}
}

// A project over the limits (no git repository here) still runs its
// turns; each turn's record says why it has no snapshot, naming the
// option, and RestoreFiles says ErrTooLarge. Checkpoints off: no record,
// no store.
func TestCheckpointsTooLargeAndOff(t *testing.T) {
	e, _ := newFileEnv(t, func(c *Config) { c.Checkpoints.MaxFiles = 1 })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "files"})
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := e.turn(s.ID, "one")
	if text(evs) != "echo: one" || projectFiles(t, e.root) == "" {
		t.Fatalf("the turn did not run: %q", text(evs))
	}
	cps, err := e.h.FileCheckpoints(s.ID)
	if err != nil || len(cps) != 1 || !cps[0].TooLarge || cps[0].Snapshot != "" ||
		!strings.Contains(cps[0].Error, "MaxFiles") || !strings.Contains(cps[0].Error, "Config.Checkpoints") {
		t.Fatalf("FileCheckpoints = %+v, %v", cps, err)
	}
	if _, err := e.h.RestoreFiles(context.Background(), s.ID, userMessageSeq(t, evs)); !errors.Is(err, checkpoint.ErrTooLarge) {
		t.Fatalf("RestoreFiles = %v, want ErrTooLarge", err)
	}

	off, _ := newFileEnv(t, func(c *Config) { c.Checkpoints.Off = true })
	s, err = off.h.NewSession(SessionSpec{ProjectRoot: off.root, Mode: "direct", Engine: "files"})
	if err != nil {
		t.Fatal(err)
	}
	evs, _ = off.turn(s.ID, "one")
	if cps, err := off.h.FileCheckpoints(s.ID); err != nil || len(cps) != 0 {
		t.Fatalf("FileCheckpoints with checkpoints off = %+v, %v", cps, err)
	}
	if _, err := os.Stat(filepath.Join(off.root, filepath.FromSlash(checkpoint.Dir))); !os.IsNotExist(err) {
		t.Fatalf("a store with checkpoints off: %v", err)
	}
	if _, err := off.h.RestoreFiles(context.Background(), s.ID, userMessageSeq(t, evs)); !errors.Is(err, ErrSeqNotFound) {
		t.Fatalf("RestoreFiles with checkpoints off = %v", err)
	}
}

// The real Claude Code CLI, told by the fake model to run a Bash command
// that edits, creates and deletes files: RestoreFiles puts them back.
func TestRestoreFilesAfterClaudeTurn(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.AllowedTools = []string{"Bash"} })
	writeFile(t, filepath.Join(e.root, "a.txt"), "a at first\n")
	writeFile(t, filepath.Join(e.root, "gone.txt"), "to be deleted\n")
	before := projectFiles(t, e.root)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := "echo changed >> a.txt && rm gone.txt && mkdir -p made && printf 'new\\n' > made/new.txt"
	e.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash", map[string]any{"command": cmd, "description": "edit files"})}},
		claudetest.TextReply("done"))
	evs, _ := e.turn(s.ID, "change the files")
	if b, _ := os.ReadFile(filepath.Join(e.root, "made", "new.txt")); string(b) != "new\n" {
		t.Fatalf("the agent's command did not run (made/new.txt = %q); events: %v", b, ofType(evs, event.TypeToolResult))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := e.h.RestoreFiles(ctx, s.ID, userMessageSeq(t, evs))
	if err != nil || changeOps(got) != "modified a.txt, deleted gone.txt, added made/new.txt" {
		t.Fatalf("RestoreFiles = %s, %v", changeOps(got), err)
	}
	if f := projectFiles(t, e.root); f != before {
		t.Fatalf("after the restore:\n%s\nwant\n%s", f, before)
	}
}
