package ops_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/gateway/ops"
	"github.com/chirality/harness/internal/httpapi"
)

// What an operation checks before the core, for both doors: each answer
// is 400 (httpapi.Status) and changes nothing; lists are never null.
func TestChecks(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h, err := harness.New(harness.Config{Roots: []string{root}, StateDir: t.TempDir(), Engines: engines.Builtin(engines.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Shutdown(context.Background()) })
	s, err := h.NewSession(harness.SessionSpec{ProjectRoot: root, Mode: "workbench"})
	if err != nil {
		t.Fatal(err)
	}
	o := ops.Ops{H: h}
	ctx := context.Background()
	files := harness.RewindOptions{Files: true}
	_, forkErr := o.Fork(ctx, s.ID, -1)
	_, trustErr := o.AcceptTrust(root, "mcp", "srv", "", "")
	// A door runs a session's turns only: no session named is never an
	// ephemeral turn in the server's process.
	tr, startErr := o.StartTurn(ctx, harness.TurnRequest{Message: "hi", Request: engine.Request{Cwd: root}})
	if tr != nil {
		t.Errorf("StartTurn without a session started a turn")
	}
	for _, c := range []struct {
		name      string
		err, want error
	}{
		{"an approval without requestId", o.Approve(s.ID, "", harness.ApprovalAnswer{Decision: "allow"}), ops.ErrNoRequestID},
		{"a fork at a negative seq", forkErr, ops.ErrBadSeq},
		{"a rewind of nothing", rewindErr(o, s.ID, 1, 0, harness.RewindOptions{}), ops.ErrNothingToRewind},
		{"a rewind to a turn and n turns back", rewindErr(o, s.ID, 1, 1, files), ops.ErrBadSeq},
		{"a rewind too far back", rewindErr(o, s.ID, 0, ops.MaxRewindTurns+1, files), ops.ErrBadSeq},
		{"a rewind to a negative seq", rewindErr(o, s.ID, -1, 0, files), ops.ErrBadSeq},
		{"a trust answer without hash", trustErr, ops.ErrBadTrust},
		{"a turn without a session", startErr, harness.ErrInvalidID},
	} {
		if !errors.Is(c.err, c.want) || httpapi.Status(c.err) != 400 {
			t.Errorf("%s: %v (%d), want %v (400)", c.name, c.err, httpapi.Status(c.err), c.want)
		}
	}
	// A session without turns has none to go back to.
	for _, c := range []struct {
		toTurn int64
		n      int
	}{{0, 0}, {0, 2}, {7, 0}} {
		if _, err := o.Target(s.ID, c.toTurn, c.n); !errors.Is(err, harness.ErrSeqNotFound) {
			t.Errorf("Target(%d, %d) of a session without turns: %v", c.toTurn, c.n, err)
		}
	}
	if _, err := o.PreviewRewind(ctx, s.ID, 0, 0); !errors.Is(err, harness.ErrSeqNotFound) {
		t.Errorf("PreviewRewind of a session without turns: %v", err)
	}
	if q, err := o.Queue(s.ID); err != nil || q == nil {
		t.Errorf("Queue: %v %v, want an empty list", q, err)
	}
	if turns, err := o.Turns(s.ID); err != nil || turns == nil {
		t.Errorf("Turns: %v %v, want an empty list", turns, err)
	}
	if root2, err := o.ProjectRoot(s.ID); err != nil || root2 != root {
		t.Errorf("ProjectRoot: %q %v, want %q", root2, err, root)
	}
	if err := o.Interrupt(s.ID); !errors.Is(err, harness.ErrNotRunning) {
		t.Errorf("Interrupt of an idle session: %v", err)
	}
}

func rewindErr(o ops.Ops, id string, toTurn int64, n int, ro harness.RewindOptions) error {
	_, err := o.Rewind(context.Background(), id, toTurn, n, ro)
	return err
}
