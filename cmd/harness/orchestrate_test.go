package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
)

// cliEnv points the process environment (which `harness turn` and
// `harness replay` hand their children) at the fake API, a scratch HOME
// and a scratch state directory, and returns the fake and a project root.
func cliEnv(t *testing.T) (*claudetest.FakeAPI, string) {
	t.Helper()
	bin := claudetest.FindCLI(t)
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	for _, kv := range api.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("HARNESS_CLAUDE_BIN", bin)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "agents"), 0o755)
	os.WriteFile(filepath.Join(root, "agents", "AGENT_CLITEST.md"), []byte("---\ntools: Read\n---\nYou are CLITEST. Codeword: NECTARINE.\n"), 0o644)
	return api, root
}

func runHarness(fn func([]string, *strings.Builder, *strings.Builder) int, args ...string) (int, string, string) {
	var out, errOut strings.Builder
	code := fn(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func turnCmd(args []string, out, errOut *strings.Builder) int   { return runTurn(args, out, errOut) }
func replayCmd(args []string, out, errOut *strings.Builder) int { return runReplay(args, out, errOut) }

var createdRE = regexp.MustCompile(`created session ([0-9a-f-]{36})`)

func TestTurnOrchestratedAndReplay(t *testing.T) {
	api, root := cliEnv(t)
	api.Script(claudetest.TextReply("first answer"), claudetest.TextReply("second answer"), claudetest.TextReply("replayed answer"))

	code, out, errOut := runHarness(turnCmd, "--persona", "CLITEST", "--mode", "direct", "--project-root", root, "remember MANGO")
	if code != 0 {
		t.Fatalf("turn --persona: exit %d\n%s", code, errOut)
	}
	m := createdRE.FindStringSubmatch(errOut)
	if m == nil || !strings.Contains(out, "first answer") {
		t.Fatalf("stdout %q stderr %q", out, errOut)
	}
	id := m[1]
	reqs := api.Requests()
	if !strings.Contains(reqs[len(reqs)-1].SystemText(), "Codeword: NECTARINE") {
		t.Error("the persona prompt did not reach the model")
	}

	// --session continues it (the index finds it), with --json events.
	code, out, errOut = runHarness(turnCmd, "--session", id, "--json", "what did I say?")
	if code != 0 {
		t.Fatalf("turn --session: exit %d\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var first, last struct {
		Seq       int64  `json:"seq"`
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if first.Type != "user:message" || first.SessionID != id || first.Seq < 2 || last.Type != "process:exit" {
		t.Errorf("json events: first %+v last %+v", first, last)
	}
	reqs = api.Requests()
	if h := requestText(reqs[len(reqs)-1]); !strings.Contains(h, "MANGO") || !strings.Contains(h, "first answer") {
		t.Errorf("the second turn did not resume the conversation: %q", h)
	}

	// Conflicting flags are refused.
	if code, _, errOut := runHarness(turnCmd, "--session", id, "--tools", "Bash", "hi"); code != 2 || !strings.Contains(errOut, "come from the session") {
		t.Errorf("--session with --tools: exit %d %q", code, errOut)
	}

	// replay --print shows the exact command, secrets redacted.
	code, out, errOut = runHarness(replayCmd, id, "again", "--print", "--project-root", root)
	if code != 0 {
		t.Fatalf("replay --print: exit %d %s", code, errOut)
	}
	for _, want := range []string{"--resume=", "--append-system-prompt-file=" + filepath.Join(root, ".chirality", "prompts", id+"-system.txt"), "--tools=Read", "--permission-mode=dontAsk", "cd " + root} {
		if !strings.Contains(out, want) {
			t.Errorf("replay --print lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-ant-fake-for-tests") {
		t.Error("replay --print shows the API key")
	}
	// replay runs it, resuming the stored Claude session.
	code, out, errOut = runHarness(replayCmd, id, "replay this")
	if code != 0 || !strings.Contains(out, "replayed answer") {
		t.Fatalf("replay: exit %d stdout %q stderr %q", code, out, errOut)
	}
	reqs = api.Requests()
	if h := requestText(reqs[len(reqs)-1]); !strings.Contains(h, "MANGO") || !strings.Contains(reqs[len(reqs)-1].SystemText(), "NECTARINE") {
		t.Errorf("replay did not resume with the saved prompt: %q", h)
	}
}

func requestText(r *claudetest.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, c := range m.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}
