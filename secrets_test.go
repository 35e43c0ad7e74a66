package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/logging"
)

// Issue 24.7: the secret variables of the harness's environment never
// reach an agent, and the values it withholds or hands an agent as its
// own key never reach a log line, a stored event or a published one,
// even when the agent prints them. The real CLI runs `env` through Bash
// against the fake Messages API, which records what the CLI sent it:
// that is the spy on the child's environment.
func TestSecretsNeverReachAnAgentOrALog(t *testing.T) {
	withheld := map[string]string{
		"PGPASSWORD": "pg-secret-value-1", "MY_PASSWD": "passwd-secret-value-2", "GH_PAT": "gh-pat-secret-value-3",
		"SECRET": "plain-secret-value-4", "API_KEYS": "api-keys-secret-value-5", "NPM_AUTH": "npm-auth-secret-value-6",
		"SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T0/B0/webhooksecret7", "APP_SESSION": "session-secret-value-8",
		"LOOKS_HARMLESS": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
	}
	e := &testEnv{t: t, root: realDir(t), home: t.TempDir(), state: t.TempDir(), bin: claudetest.FindCLI(t)}
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	e.api = api
	const key = "sk-ant-fake-for-tests" // the agent's own key (api.Env)
	env := claudetest.BaseEnv(e.home)
	for k, v := range withheld {
		env = append(env, k+"="+v)
	}
	serverLog := &lockedBuf{}
	logger := zerolog.New(logging.Scrubbed(serverLog))
	cfg := Config{Roots: []string{e.root}, StateDir: e.state, ChildEnv: api.Env(), Aliases: engines.Aliases,
		Logger: &logger, AllowedTools: []string{"Bash(env)"}}
	cfg.Engines = engines.Builtin(engines.Config{ClaudeBinary: e.bin, Env: env, ChildEnv: cfg.ChildEnv, Logger: cfg.Logger,
		InterruptGrace: time.Second, KillGrace: 2 * time.Second})
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h.Shutdown(ctx)
	})
	e.h = h
	s, err := h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	// The model runs env, then repeats the key in its answer (one delta).
	api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash", map[string]any{"command": "env", "description": "show the environment"})}},
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("your key is " + key)}, ChunkSize: 1000})
	evs, _ := e.turn(s.ID, "what is in the environment? the key is "+key)

	// The spy: what the CLI's Bash saw, as the CLI sent it to the model.
	var envOut string
	for _, r := range api.Requests() {
		for _, tr := range r.ToolResults() {
			envOut += tr.Content
		}
	}
	if !strings.Contains(envOut, "HOME=") {
		t.Fatalf("env did not run: %q", envOut)
	}
	for name := range withheld {
		if strings.Contains(envOut, name+"=") {
			t.Errorf("%s reached the agent", name)
		}
	}
	if !strings.Contains(envOut, key) {
		t.Fatal("the agent's own key did not reach it (the test then proves nothing about scrubbing)")
	}

	var sawResult, sawText bool
	for _, ev := range evs {
		if strings.Contains(ev.Raw, key) {
			t.Errorf("the key in a published event: %.300s", ev.Raw)
		}
		sawResult = sawResult || (ev.Type == event.TypeToolResult && strings.Contains(ev.Raw, "ANTHROPIC_API_KEY=[REDACTED]"))
		sawText = sawText || (ev.Type == event.TypeChatComplete && strings.Contains(ev.Text, "your key is [REDACTED]"))
	}
	if !sawResult || !sawText {
		t.Errorf("no scrubbed tool:result (%v) or answer (%v)", sawResult, sawText)
	}
	// The stored events (what SSE and replays read), the project's
	// harness.log and the server log.
	h.Shutdown(context.Background())
	check := func(what string, b []byte) {
		t.Helper()
		if len(b) == 0 {
			t.Errorf("%s is empty", what)
		}
		for _, v := range append([]string{key}, values(withheld)...) {
			if i := strings.Index(string(b), v); i >= 0 {
				t.Errorf("%s holds the secret %q: …%s…", what, v, string(b[max(0, i-300):i]))
			}
		}
	}
	var stored []byte
	for _, dir := range []string{e.state, filepath.Join(e.root, ".chirality", "sessions")} {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				stored = append(stored, b...)
			}
			return nil
		})
	}
	check("the session files and event log", stored)
	if !strings.Contains(string(stored), "ANTHROPIC_API_KEY=[REDACTED]") {
		t.Error("the stored tool:result is not the scrubbed one")
	}
	hl, _ := os.ReadFile(logging.Path(e.root))
	check("harness.log", hl)
	check("the server log", []byte(serverLog.String()))
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
