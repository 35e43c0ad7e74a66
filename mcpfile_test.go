package harness

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/mcpconfig/mcptest"
)

// Issue 29: the MCP servers' secrets never land in a file inside the
// project (the agent reads it; a warm CLI keeps its --mcp-config file for
// as long as it waits): the file is in the private runtime directory,
// 0600, and gone once the harness has shut down.
func TestMCPSecretFileOutsideTheProject(t *testing.T) {
	run := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", run)
	const secret = "mcp-file-secret-27182818"
	e := newTestEnv(t, func(c *Config) {
		c.MCP = mcptest.Config(mcptest.Everything(t, "everything", map[string]string{"HARNESS_MCP_TEST_TOKEN": secret}))
		c.WarmTurns = 1
	})
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	e.api.Script(claudetest.TextReply("done"))
	e.turn(s.ID, "hello")
	e.h.Prewarm(s.ID)
	var files []string
	waitFor(t, "the warm CLI's MCP file", func() bool {
		files, _ = filepath.Glob(filepath.Join(run, "harness", "mcp-*.json"))
		return len(files) == 1 && len(e.h.WarmPids()) == 1
	})
	b, err := os.ReadFile(files[0])
	if err != nil || !strings.Contains(string(b), secret) {
		t.Fatalf("the runtime file %s holds %q (%v), want the server's configuration", files[0], b, err)
	}
	if st, _ := os.Stat(files[0]); st.Mode().Perm() != 0o600 {
		t.Fatalf("the runtime file's mode is %v, want 0600", st.Mode())
	}
	err = filepath.WalkDir(e.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), secret) {
			t.Errorf("%s, inside the project, holds the MCP secret", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(run, "harness", "*")); len(left) != 0 {
		t.Fatalf("the runtime directory still holds %v after shutdown", left)
	}
}
