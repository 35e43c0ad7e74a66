package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/internal/gittest"
	"github.com/chirality/harness/mcpserver"
)

// create_session with isolation "worktree": refused, naming why, outside
// a git repository; inside one, the session's worktree and branch come
// back and the worktree holds the project's committed files.
func TestCreateWorktreeSession(t *testing.T) {
	e := newEnv(t, mcpserver.Options{})
	cs := e.connect(t, nil)
	args := map[string]any{"projectRoot": e.root, "engine": "native", "isolation": "worktree"}
	if msg := call(t, cs, "create_session", args, nil); !strings.Contains(msg, "not in a git repository") {
		t.Fatalf("outside git: %q", msg)
	}
	gittest.Init(t, e.root)
	if msg := call(t, cs, "create_session", map[string]any{"projectRoot": e.root, "isolation": "worktree", "base": "nope"}, nil); !strings.Contains(msg, "base not found") {
		t.Fatalf("missing base: %q", msg)
	}
	var s mcpserver.SessionOut
	if msg := call(t, cs, "create_session", args, &s); msg != "" {
		t.Fatal(msg)
	}
	if s.Workdir == "" || s.Workdir == e.root || s.Branch != "harness/"+s.SessionID[:8] {
		t.Fatalf("session %+v", s)
	}
	if b, err := os.ReadFile(filepath.Join(s.Workdir, "README.md")); err != nil || string(b) != "# p\n" {
		t.Fatalf("worktree README.md: %q, %v", b, err)
	}
}
