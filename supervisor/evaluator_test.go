package supervisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/runner"
	"github.com/chirality/harness/supervisor"
)

func newHarness(t *testing.T, bin string) (*harness.Harness, *claudetest.FakeAPI, string) {
	t.Helper()
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h, err := harness.New(harness.Config{Roots: []string{root}, StateDir: t.TempDir(), ChildEnv: api.Env(),
		Engines: engines.Builtin(engines.Config{ClaudeBinary: bin, Env: claudetest.BaseEnv(t.TempDir()), ChildEnv: api.Env()})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		h.Shutdown(ctx)
	})
	return h, api, root
}

func window() []runner.Message {
	return []runner.Message{
		{Type: "assistant", Model: "m", Content: []runner.Content{{Type: "thinking", Thinking: "maybe the flaky test"}, {Type: "text", Text: "Running the tests again."},
			{Type: "tool_use", ID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"go test ./pkg/flaky"}`)}}},
		{Type: "assistant", Content: []runner.Content{{Type: "text", Text: "Still failing; running them again."}}},
	}
}

// testCoreEvaluator runs one evaluation on engineName: the request offers
// the model no tool and shows the window; the answer parses.
func testCoreEvaluator(t *testing.T, h *harness.Harness, api *claudetest.FakeAPI, root, engineName string) {
	api.Script(claudetest.TextReply("CORRECTION stop re-running the flaky test; read its failure"))
	eval := supervisor.CoreEvaluator(h, root, engineName, "", "medium")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	answer, err := eval(ctx, supervisor.Prompt(window()))
	if err != nil {
		t.Fatal(err)
	}
	v, err := supervisor.ParseVerdict(answer)
	if err != nil || v.Action != supervisor.ActionCorrection || !strings.Contains(v.Message, "read its failure") {
		t.Fatalf("answer %q → %+v, %v", answer, v, err)
	}
	var conv *claudetest.Request
	for _, r := range api.Requests() {
		if strings.Contains(r.LastUserText(), "<turns") {
			conv = r
		}
	}
	if conv == nil {
		t.Fatal("no evaluation request reached the model")
	}
	if len(conv.Tools) != 0 {
		t.Errorf("the evaluation offered tools %v, want none", conv.Tools)
	}
	for _, want := range []string{"maybe the flaky test", `tool_use Bash: {"command":"go test ./pkg/flaky"}`, "Still failing; running them again.", "exactly one line"} {
		if !strings.Contains(conv.LastUserText(), want) {
			t.Errorf("the request lacks %q", want)
		}
	}
	if !strings.Contains(conv.SystemText(), "Role: Supervisor") {
		t.Error("the supervisor persona did not reach the model")
	}
	// The one-shot session is gone; none in the agent's own project.
	for _, dir := range []string{root, supervisor.EvalDir(root)} {
		list, err := h.ListSessions(dir)
		if err != nil || len(list) != 0 {
			t.Errorf("sessions left in %s: %v %v", dir, list, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(supervisor.EvalDir(root), "agents", "AGENT_SUPERVISOR.md")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("persona file: %v %v", fi, err)
	}
}

func TestCoreEvaluatorAnthropic(t *testing.T) {
	h, api, root := newHarness(t, "")
	testCoreEvaluator(t, h, api, root, engine.Anthropic)
	// A second evaluation reuses the persona file; an API error is an error.
	api.Script(claudetest.ErrorReply(400, "no"))
	if _, err := supervisor.CoreEvaluator(h, root, engine.Anthropic, "", "")(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "api_error") {
		t.Errorf("evaluation on an API error = %v", err)
	}
	if _, err := supervisor.CoreEvaluator(h, root, engine.Anthropic, "", "extreme")(context.Background(), "x"); !errors.Is(err, supervisor.ErrInvalidThinking) {
		t.Errorf("bad thinking level = %v", err)
	}
	// Cancelling ctx ends a slow evaluation.
	api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("OK")}, Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := supervisor.CoreEvaluator(h, root, engine.Anthropic, "", "")(ctx, "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled evaluation = %v", err)
	}
}

func TestCoreEvaluatorClaudeCode(t *testing.T) {
	h, api, root := newHarness(t, claudetest.FindCLI(t))
	testCoreEvaluator(t, h, api, root, engine.ClaudeCode)
}
