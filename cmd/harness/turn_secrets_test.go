package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
)

// The secrets of the turn tests: the agent's own key in no known format
// (only its registration can scrub it) and a variable withheld from it.
const (
	leakKey   = "plain-cli-key-for-turn-secret-tests"
	leakToken = "withheld-token-for-turn-secret-tests"
)

// leakyTurn is one `harness turn` run as a process, with the secrets in
// its environment, against a fake model that makes the agent print them.
type leakyTurn struct {
	root, state string
	env         []string
}

func newLeakyTurn(t *testing.T, api *claudetest.FakeAPI) *leakyTurn {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	env := append(claudetest.ScratchEnv(t), "HARNESS_TEST_MAIN=1", "XDG_STATE_HOME="+state)
	env = append(env, api.Env()...)
	env = append(env, "ANTHROPIC_API_KEY="+leakKey, "MY_SERVICE_TOKEN="+leakToken) // the key after api.Env's wins
	return &leakyTurn{root: root, state: state, env: env}
}

// run runs `harness turn ARGS…` in the project.
func (l *leakyTurn) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return l.harness(t, append([]string{"turn"}, args...)...)
}

// harness runs `harness ARGS…` in the project.
func (l *leakyTurn) harness(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a guard against a hang, not an assertion (OpenCode alone took a minute on a loaded machine)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env, cmd.Dir = l.env, l.root
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// check fails the test where a secret shows: stdout, stderr, or a file
// under the project (but the user's own, skip) or the state directory.
func (l *leakyTurn) check(t *testing.T, stdout, stderr string, skip ...string) {
	t.Helper()
	where := map[string]string{"stdout": stdout, "stderr": stderr}
	for _, dir := range []string{l.root, l.state} {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !contains(skip, p) {
				b, _ := os.ReadFile(p)
				where[p] = string(b)
			}
			return nil
		})
	}
	for name, text := range where {
		for _, s := range []string{leakKey, leakToken} {
			if i := strings.Index(text, s); i >= 0 {
				t.Errorf("%s holds the secret %q: …%s", name, s, text[max(0, i-200):i+len(s)])
			}
		}
	}
}

// toolOutput is what the agent's tools gave it, as it sent that to the
// model: the spy that proves the secret was there to leak.
func toolOutput(api *claudetest.FakeAPI) string {
	var sent string
	for _, req := range api.Requests() {
		for _, tr := range req.ToolResults() {
			sent += tr.Content
		}
	}
	return sent
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Issue 29.5: `harness turn` never prints a secret, with or without a
// session, --json or not: the real Claude Code CLI runs
// `echo $ANTHROPIC_API_KEY; env` through Bash, then the model repeats the
// key and the withheld token three characters a delta. Without a session
// nothing is left in the project either.
func TestTurnPrintsNoSecretClaudeCode(t *testing.T) {
	bin := claudetest.FindCLI(t)
	cases := []struct {
		name    string
		session bool
		args    []string
	}{
		{"text", false, nil},
		{"json", false, []string{"--json"}},
		{"session text", true, nil},
		{"session json", true, []string{"--json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			api, err := claudetest.NewFakeAPI()
			if err != nil {
				t.Fatal(err)
			}
			defer api.Close()
			api.Script(
				claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash",
					map[string]any{"command": "echo $ANTHROPIC_API_KEY; env", "description": "show the key"})}},
				claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("your key is " + leakKey + " and your token " + leakToken + ".")}, ChunkSize: 3},
			)
			l := newLeakyTurn(t, api)
			args := append([]string{"--claude-bin", bin}, c.args...)
			if c.session {
				os.MkdirAll(filepath.Join(l.root, "agents"), 0o755)
				os.WriteFile(filepath.Join(l.root, "agents", "AGENT_LEAKY.md"), []byte("---\ntools: Bash\nauto_approve_tools: Bash\n---\nRun what you are asked.\n"), 0o644)
				args = append(args, "--persona", "LEAKY", "--mode", "direct", "--project-root", l.root)
			} else {
				args = append(args, "--cwd", l.root, "--allowed-tools", "Bash")
			}
			code, stdout, stderr := l.run(t, append(args, "what is my key?")...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
			}
			sent := toolOutput(api)
			if !strings.Contains(sent, leakKey) {
				t.Fatalf("the agent's Bash did not print the key (the test proves nothing): %q", sent)
			}
			l.check(t, stdout, stderr)
			both := stdout + stderr
			if !strings.Contains(both, "[REDACTED]") || !strings.Contains(both, "your key is [REDACTED] and your token [REDACTED].") {
				t.Errorf("the answer is not there, scrubbed:\nstdout %s\nstderr %s", stdout, stderr)
			}
			if _, err := os.Stat(filepath.Join(l.root, ".chirality")); c.session == errors.Is(err, os.ErrNotExist) {
				t.Errorf("session %v: .chirality in the project: %v (only a session asked for leaves files)", c.session, err)
			}
		})
	}
}

// The native loop without a session: its read tool reads a file that
// holds the key, and the model repeats it. Neither reaches the output.
func TestTurnPrintsNoSecretNative(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		api, err := claudetest.NewFakeAPI()
		if err != nil {
			t.Fatal(err)
		}
		defer api.Close()
		api.Script(
			claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "read", map[string]any{"path": "key.txt"})}},
			claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("the file says " + leakKey + ".")}, ChunkSize: 3},
		)
		l := newLeakyTurn(t, api)
		keyFile := filepath.Join(l.root, "key.txt")
		if err := os.WriteFile(keyFile, []byte("ANTHROPIC_API_KEY="+leakKey+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"--engine", "anthropic", "--cwd", l.root}
		if asJSON {
			args = append(args, "--json")
		}
		code, stdout, stderr := l.run(t, append(args, "read key.txt")...)
		if code != 0 {
			t.Fatalf("json %v: exit %d\nstdout %s\nstderr %s", asJSON, code, stdout, stderr)
		}
		sent := toolOutput(api)
		if !strings.Contains(sent, leakKey) {
			t.Fatalf("the read tool did not return the key (the test proves nothing): %q", sent)
		}
		l.check(t, stdout, stderr, keyFile)
		if !strings.Contains(stdout+stderr, "the file says [REDACTED].") {
			t.Errorf("json %v: the answer is not there, scrubbed:\nstdout %s\nstderr %s", asJSON, stdout, stderr)
		}
		if _, err := os.Stat(filepath.Join(l.root, ".chirality")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("json %v: the project has .chirality (%v): a turn without a session leaves nothing", asJSON, err)
		}
	}
}

// `harness replay` re-runs a session's turn straight on Claude Code: its
// events are scrubbed as a session's are, --json or not.
func TestReplayPrintsNoSecret(t *testing.T) {
	bin := claudetest.FindCLI(t)
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	l := newLeakyTurn(t, api)
	os.MkdirAll(filepath.Join(l.root, "agents"), 0o755)
	os.WriteFile(filepath.Join(l.root, "agents", "AGENT_LEAKY.md"), []byte("---\ntools: Bash\nauto_approve_tools: Bash\n---\nRun what you are asked.\n"), 0o644)
	api.Script(claudetest.TextReply("hello"))
	code, _, stderr := l.run(t, "--claude-bin", bin, "--persona", "LEAKY", "--mode", "direct", "--project-root", l.root, "hi")
	m := createdRE.FindStringSubmatch(stderr)
	if code != 0 || m == nil {
		t.Fatalf("turn: exit %d\n%s", code, stderr)
	}
	for _, args := range [][]string{nil, {"--json"}} {
		api.Script(
			claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash",
				map[string]any{"command": "echo $ANTHROPIC_API_KEY; env", "description": "show the key"})}},
			claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("your key is " + leakKey + ".")}, ChunkSize: 3},
		)
		code, stdout, stderr := l.harness(t, append([]string{"replay", m[1], "what is my key?", "--claude-bin", bin}, args...)...)
		if code != 0 {
			t.Fatalf("replay %v: exit %d\n%s", args, code, stderr)
		}
		l.check(t, stdout, stderr)
		if !strings.Contains(stdout+stderr, "your key is [REDACTED].") {
			t.Errorf("replay %v: the answer is not there, scrubbed:\nstdout %s\nstderr %s", args, stdout, stderr)
		}
	}
	sent := toolOutput(api)
	if !strings.Contains(sent, leakKey) {
		t.Fatalf("the agent's Bash did not print the key (the test proves nothing): %q", sent)
	}
}

// A turn that fails prints its error on stderr: the engine's own words,
// scrubbed, with a session or without (the model API's error quotes the
// key here).
func TestTurnErrorPrintsNoSecret(t *testing.T) {
	bin := claudetest.FindCLI(t)
	for _, session := range []bool{false, true} {
		api, err := claudetest.NewFakeAPI()
		if err != nil {
			t.Fatal(err)
		}
		defer api.Close()
		api.SetResponder(func(*claudetest.Request) claudetest.Reply {
			return claudetest.ErrorReply(400, "upstream rejected the request of "+leakKey+" today")
		})
		l := newLeakyTurn(t, api)
		args := []string{"--claude-bin", bin}
		if session {
			args = append(args, "--persona", "REVIEWER", "--mode", "direct", "--project-root", l.root)
		} else {
			args = append(args, "--cwd", l.root)
		}
		code, stdout, stderr := l.run(t, append(args, "hi")...)
		if code != 1 || !strings.Contains(stderr, "upstream rejected the request of [REDACTED] today") {
			t.Errorf("session %v: exit %d, want 1 and the error scrubbed\nstdout %s\nstderr %s", session, code, stdout, stderr)
		}
		l.check(t, stdout, stderr)
	}
}

// An ACP agent (OpenCode on the demo model) without a session: its shell
// lists the project, where a file is named after the key. The listing is
// printed scrubbed, and the turn leaves nothing in the project (it ran in
// a session of its own, kept there, before).
func TestTurnPrintsNoSecretACP(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bin, err := filepath.Abs("../../node_modules/.bin/opencode") // the pinned agent
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	l := &leakyTurn{root: root, state: state, env: append(claudetest.ScratchEnv(t), "HARNESS_TEST_MAIN=1", "XDG_STATE_HOME="+state,
		"HARNESS_OPENCODE_BIN="+bin, "ANTHROPIC_API_KEY="+leakKey)}
	if err := os.WriteFile(filepath.Join(root, leakKey), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := l.run(t, "--demo", "--engine", "opencode", "--json", "hello demo") // in root
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	l.check(t, stdout, stderr)
	if !strings.Contains(stdout, `"type":"tool:result"`) || !strings.Contains(stdout, "[REDACTED]") {
		t.Errorf("no scrubbed listing:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(root, ".chirality")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the project has .chirality (%v): a turn without a session leaves nothing", err)
	}
}
