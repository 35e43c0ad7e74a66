package codex_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/codex"
	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
)

// ThreadConfig reaches the thread: with allow_login_shell false (what
// the IRC daemon sets) Codex's shell keeps the PATH it was given, which a
// login shell's /etc/profile would reset; developer_instructions shows in
// the model's request.
func TestThreadConfig(t *testing.T) {
	fake, err := codextest.NewFakeAPI(codextest.Reply{Text: "done"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	home := t.TempDir()
	if _, err := fake.WriteConfig(filepath.Join(home, "codex")); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(home, "marker-bin")
	env := []string{"PATH=" + marker + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + filepath.Join(home, "codex")}
	log := zerolog.Nop()
	eng := codex.NewEngine(codex.Config{Binary: codexBin(t), Env: env, Logger: &log,
		ThreadConfig: map[string]any{"allow_login_shell": false, "developer_instructions": "THREAD-CONFIG-MARKER"}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	g := &rig{fake: fake, eng: eng, home: home, logs: &syncBuf{}}
	fake.Script(codextest.Reply{Call: &codextest.Call{Command: `echo "path=$PATH"`}}, codextest.Reply{Text: "done"})
	r := g.turn(t, engine.Request{SessionKey: "tc", Message: "show the path", Cwd: home, PermissionMode: "dontAsk"}, nil)
	if r.err != nil {
		t.Fatalf("err %v, events %v", r.err, r.types())
	}
	reqs := fake.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if !strings.Contains(string(reqs[0].Body), "THREAD-CONFIG-MARKER") {
		t.Error("developer_instructions of ThreadConfig not in the model's request")
	}
	if out := strings.Join(reqs[1].FunctionOutputs(), "\n"); !strings.Contains(out, marker+string(os.PathListSeparator)) {
		t.Errorf("the command's PATH lost the engine's: %q", out)
	}
}
