package native

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/mcpconfig/mcptest"
)

// A stdio MCP server runs on the one child runner: a tool it started (a
// grandchild in its process group) dies with it when the turn ends (the
// SDK's command transport left it orphaned), and what it writes to
// stderr reaches the log scrubbed of its environment's secret values.
func TestEngineMCPServerChild(t *testing.T) {
	mark := "native-mcp-child-" + t.Name()
	const secret = "native-mcp-secret-27182818"
	srv := mcptest.Everything(t, "everything", map[string]string{"HARNESS_MCP_MARK": mark, "HARNESS_MCP_TOKEN": secret})
	// sh starts a lingering tool, says its token on stderr, then becomes
	// the server
	srv.Args = append([]string{"-c", `sleep 300 & echo "token $HARNESS_MCP_TOKEN" >&2; exec "$@"`, "sh", srv.Command}, srv.Args...)
	srv.Command = "sh"

	f := newFixture(t)
	f.api.Script(claudetest.TextReply("done"))
	e := newEngine(f)
	defer e.Shutdown(context.Background())
	logs, err := os.Create(filepath.Join(t.TempDir(), "log")) // (a file takes concurrent writes)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	log := zerolog.New(logs).Level(zerolog.DebugLevel)
	tr, err := e.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "hi", Cwd: t.TempDir(), StateDir: t.TempDir(),
		MCP: mcptest.Config(srv), PermissionMode: "dontAsk", Logger: &log})
	if err != nil {
		t.Fatal(err)
	}
	evs := drain(t, tr)
	if st := evs[0].Init.MCPServers; len(st) != 1 || st[0].Status != "connected" {
		t.Fatalf("mcpServers %+v", st)
	}
	if tr.Err() != nil {
		t.Fatalf("turn: %v", tr.Err())
	}
	// The server and its tool are gone once the turn has ended (the test's
	// deadline bounds the wait for the kernel to finish with them).
	for procWithEnv(mark) {
		time.Sleep(20 * time.Millisecond)
	}
	b, err := os.ReadFile(logs.Name())
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	if strings.Contains(out, secret) {
		t.Errorf("the server's secret reached the log: %s", out)
	}
	if !strings.Contains(out, "token [REDACTED]") {
		t.Errorf("the server's stderr line is not in the log: %s", out)
	}
}
