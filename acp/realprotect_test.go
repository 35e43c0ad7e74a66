package acp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/protect"
)

// Issue 29 on the real agents, one session each: the project holds the
// agent's own configuration allowing the shell, and the model asks for
// `touch marker1`: the harness is asked (and denies), whatever the file
// says. Then the model writes into .chirality/ with the agent's write
// tool: in acceptEdits the harness is asked (and denies); in dontAsk,
// with a rule allowing every write, it is denied. Nothing is written.
func TestRealAgentsProtect(t *testing.T) {
	cases := []struct {
		spec   string
		config map[string]string // the project's own agent configuration
		write  func(path string) (string, any)
	}{
		{acp.OpenCode, map[string]string{
			"opencode.json": `{"permission":{"bash":"allow","edit":"allow"},"agent":{"build":{"permission":{"bash":"allow","edit":"allow"}}}}`,
		}, func(p string) (string, any) { return "write", map[string]any{"filePath": p, "content": "{}"} }},
		{acp.ClaudeACP, map[string]string{
			".claude/settings.local.json": `{"permissions":{"allow":["Bash","Write","Edit"]}}`,
		}, func(p string) (string, any) { return "Write", map[string]any{"file_path": p, "content": "{}"} }},
		// Copilot's repository settings (.github/copilot/, documented by
		// GitHub; which keys 1.0.102 reads is not verified): the shell
		// is still asked. It asks before its create tool writes too.
		{acp.Copilot, map[string]string{
			".github/copilot/settings.json":       `{"allowedTools":["shell"],"allowed_tools":["shell"],"permissions":{"allow":["shell"]}}`,
			".github/copilot/settings.local.json": `{"allowedTools":["shell"],"allowed_tools":["shell"],"permissions":{"allow":["shell"]}}`,
		}, func(p string) (string, any) { return "create", map[string]any{"path": p, "file_text": "{}"} }},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			spec, cfg, fake := realAgent(t, c.spec)
			home := t.TempDir()
			cwd, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for f, content := range c.config {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(cwd, f)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(cwd, f), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(filepath.Join(cwd, ".chirality"), 0o755); err != nil {
				t.Fatal(err)
			}
			base := responder(spec)
			fake.SetResponder(func(r *claudetest.Request) claudetest.Reply {
				if len(r.Tools) > 0 && c.write != nil {
					if _, f, ok := strings.Cut(r.LastUserText(), "write the file "); ok {
						name, in := c.write(filepath.Join(cwd, strings.Fields(f)[0]))
						return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", name, in)}}
					}
				}
				return base(r)
			})
			e := realEngine(t, spec, cfg, fake, home)
			defer shutdownReal(t, e)
			appr := &queueApprover{next: []bool{false, false}}
			conv := ""
			turn := func(msg, mode string, allowed []string) {
				t.Helper()
				tr, err := e.StartTurn(context.Background(), engine.Request{
					SessionKey: "s1", Message: msg, Cwd: cwd, Resume: conv, PermissionMode: mode, Approver: appr,
					AllowedTools: allowed, Protected: protect.Paths(cwd),
				})
				if err != nil {
					t.Fatal(err)
				}
				defer tr.Close()
				for tr.Next() {
					if ev := tr.Event(); ev.Init != nil && ev.Init.ConversationID != "" {
						conv = ev.Init.ConversationID
					}
				}
			}

			turn("make marker one", "default", nil)
			if _, err := os.Stat(filepath.Join(cwd, "marker1")); err == nil {
				t.Fatal("the shell ran unasked: the project's own configuration widened the session")
			}
			if asked := appr.take(); len(asked) != 1 {
				t.Fatalf("asked %d times about the shell, want once", len(asked))
			}
			if c.write == nil {
				return
			}
			turn("write the file .chirality/a.json", "acceptEdits", nil)
			if _, err := os.Stat(filepath.Join(cwd, ".chirality", "a.json")); err == nil {
				t.Fatal("a protected path was written unasked in acceptEdits")
			}
			if asked := appr.take(); len(asked) != 1 {
				t.Fatalf("asked %d times about the protected write, want once", len(asked))
			}
			turn("write the file .chirality/b.json", "dontAsk", []string{"Write", "Edit", "edit", "write"})
			if _, err := os.Stat(filepath.Join(cwd, ".chirality", "b.json")); err == nil {
				t.Fatal("a protected path was written in dontAsk by a rule")
			}
		})
	}
}

// realAgent is the spec, built-in configuration and a fake Messages API
// (closed with the test) of the real agent named name.
func realAgent(t *testing.T, name string) (agentSpec, acp.Config, *claudetest.FakeAPI) {
	t.Helper()
	var spec agentSpec
	for _, s := range realAgents {
		if s.name == name {
			spec = s
		}
	}
	cfg, _ := acp.BuiltinConfig(spec.name)
	fake, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	return spec, cfg, fake
}
