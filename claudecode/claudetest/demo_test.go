package claudetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// TestDemoResponderRealCLI runs the demo model under the real CLI, the way
// `harness serve --demo` does: dontAsk with the demo's allowed tools.
func TestDemoResponderRealCLI(t *testing.T) {
	bin := claudetest.FindCLI(t)
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	api.SetResponder(claudetest.DemoResponder(claudetest.DemoOptions{LongChunks: 30, LongChunkDelay: time.Millisecond, ChunkDelay: time.Millisecond}))
	home, project := t.TempDir(), t.TempDir()
	for _, name := range []string{"README.md", "main.go", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(project, name), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(claudetest.BaseEnv(home), api.Env()...)
	mgr := claudecode.NewManager(claudecode.Config{Binary: bin, Env: env, KillGrace: 2 * time.Second})
	opts := claudecode.TurnOpts{Cwd: project, PermissionMode: "dontAsk", AllowedTools: claudetest.DemoAllowedTools}
	run := func(key, msg string) ([]event.Event, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		tr, err := mgr.StartTurn(ctx, key, msg, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		var evs []event.Event
		for tr.Next() {
			evs = append(evs, tr.Event())
		}
		return evs, tr.Err()
	}
	count := func(evs []event.Event, typ event.Type) (n int) {
		for _, e := range evs {
			if e.Type == typ {
				n++
			}
		}
		return n
	}

	evs, err := run("demo", "show me what you can do")
	if err != nil {
		t.Fatalf("demo turn failed: %v", err)
	}
	for _, typ := range []event.Type{event.TypeSessionInit, event.TypeThinkingDelta, event.TypeChatDelta,
		event.TypeChatComplete, event.TypeToolStart, event.TypeToolResult, event.TypeSessionComplete, event.TypeProcessExit} {
		if count(evs, typ) == 0 {
			t.Errorf("no %s event", typ)
		}
	}
	var text strings.Builder
	for _, e := range evs {
		switch e.Type {
		case event.TypeChatDelta:
			text.WriteString(e.Text)
		case event.TypeToolStart:
			var in struct{ Command string }
			if json.Unmarshal(e.ToolStart.Input, &in); e.ToolStart.Name != "Bash" || in.Command != "ls -la" {
				t.Errorf("tool:start = %s %s", e.ToolStart.Name, e.ToolStart.Input)
			}
		case event.TypeToolResult:
			if e.ToolResult.IsError || !strings.Contains(e.ToolResult.Content, "notes.txt") {
				t.Errorf("tool:result = %+v (dontAsk must allow the demo's ls)", e.ToolResult)
			}
		}
	}
	for _, want := range []string{"## Demo answer", "- it streams", "```go", "I saw **3 entries**"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("answer lacks %q:\n%s", want, text.String())
		}
	}

	evs, err = run("demo-error", claudetest.DemoCommandError)
	if !errors.Is(err, claudecode.ErrAPI) || count(evs, event.TypeSessionError) != 1 {
		t.Errorf("error turn: %v", err)
	}
	// Issue 34.4: only the turn that says /demo error fails; the session
	// goes on (the CLI resends the failed message with the next one).
	evs, err = run("demo-error", "hello again")
	if err != nil || count(evs, event.TypeSessionError) != 0 || count(evs, event.TypeSessionComplete) != 1 {
		t.Errorf("the turn after /demo error: %v", err)
	}
	// Issue 20.6: an ordinary word is no trigger.
	evs, err = run("demo-word", "Are there any error handling issues in main.go?")
	if err != nil || count(evs, event.TypeSessionError) != 0 || count(evs, event.TypeSessionComplete) != 1 {
		t.Errorf("a message with the word error: %v", err)
	}

	evs, err = run("demo-long", "a long story please")
	if err != nil || count(evs, event.TypeChatDelta) < 20 {
		t.Errorf("long turn: %v, %d deltas", err, count(evs, event.TypeChatDelta))
	}
}

// The demo's commands, and the ordinary messages that are none.
func TestDemoCommands(t *testing.T) {
	respond := claudetest.DemoResponder(claudetest.DemoOptions{})
	for _, tc := range []struct {
		msg     string
		failure bool
	}{
		{"/demo error", true},
		{"  /DEMO Error please\nnow", true},
		{"error", false},
		{"Are there any error handling issues in main.go?", false},
		{"show me an error", false},
		{"/demo", false},
		{"/demo errors", false},
		{"please /demo error", false},
		{"/demoerror", false},
	} {
		req := &claudetest.Request{Stream: true, Tools: []string{"Bash"},
			Messages: []claudetest.Message{{Role: "user", Content: []claudetest.ContentBlock{{Type: "text", Text: tc.msg}}}}}
		r := respond(req)
		if failed := r.Status >= 400; failed != tc.failure {
			t.Errorf("%q: status %d, want failure %v", tc.msg, r.Status, tc.failure)
		}
	}
}

// Issue 34.4: a failed "/demo error" is sent again, in one user message
// with the next one; only the newest text counts.
func TestDemoErrorIsNotReread(t *testing.T) {
	respond := claudetest.DemoResponder(claudetest.DemoOptions{})
	req := &claudetest.Request{Stream: true, Tools: []string{"Bash"},
		Messages: []claudetest.Message{{Role: "user", Content: []claudetest.ContentBlock{
			{Type: "text", Text: "/demo error\n"}, {Type: "text", Text: "hello"}, {Type: "text", Text: "<system-reminder>x</system-reminder>"}}}}}
	if r := respond(req); r.Status >= 400 {
		t.Errorf("the message after /demo error failed: %d %s", r.Status, r.ErrorMessage)
	}
}

func TestCountListingEntries(t *testing.T) {
	out := "total 12\ndrwxr-xr-x 2 u g 4096 Jan 1 00:00 .\ndrwxr-xr-x 9 u g 4096 Jan 1 00:00 ..\n-rw-r--r-- 1 u g 2 Jan 1 00:00 a b.txt\n-rw-r--r-- 1 u g 2 Jan 1 00:00 c\n"
	if n := claudetest.CountListingEntries(out); n != 2 {
		t.Errorf("CountListingEntries = %d, want 2", n)
	}
}

// "/demo plan" ends a plan with ExitPlanMode when the request offers it,
// and says why not otherwise.
func TestDemoPlan(t *testing.T) {
	respond := claudetest.DemoResponder(claudetest.DemoOptions{})
	ask := func(tools ...string) claudetest.Reply {
		return respond(&claudetest.Request{Stream: true, Tools: tools,
			Messages: []claudetest.Message{{Role: "user", Content: []claudetest.ContentBlock{{Type: "text", Text: "/demo plan"}}}}})
	}
	r := ask("Bash")
	if n := len(r.Blocks); n != 2 || r.Blocks[1].Name != "ExitPlanMode" || r.Blocks[1].Input.(map[string]any)["plan"] != claudetest.DemoPlan {
		t.Fatalf("blocks %+v", r.Blocks)
	}
	if r := ask("bash"); len(r.Blocks) != 1 || r.Blocks[0].Kind != "text" {
		t.Fatalf("without the tool: %+v", r.Blocks)
	}
}
