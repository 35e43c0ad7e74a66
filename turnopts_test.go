package harness

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/persona"
)

// reviewer is a persona that lists its tools, denies Write and
// auto-approves Read and git.
const reviewer = "---\ntools: \"Read,Grep,Bash\"\ndisallowed_tools: [\"Write\"]\nauto_approve_tools: [\"Read\", \"Bash(git *)\"]\n---\nYou review. Codeword: PERSONA-BODY.\n"

// startWith runs a turn with o that must start, and waits for it.
func (e *testEnv) startWith(id, message string, o TurnOptions) {
	e.t.Helper()
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: id, Message: message, Options: o})
	if err != nil {
		e.t.Fatalf("StartTurn %+v: %v", o, err)
	}
	evs := e.follow(e.h, id, tr.StartSeq)
	<-tr.Done()
	checkTurn(e.t, id, tr.StartSeq, evs)
}

// The per-turn options reach the engine's request for that turn only,
// narrowed: toolsOverride picks among the persona's tools, the
// disallowed override adds to its denies, the auto-approve override
// takes a subset, and an auto-approval of a tool taken away goes too.
func TestTurnOptionsNarrowTheRequest(t *testing.T) {
	se := &scriptEngine{}
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{se}; c.AllowedTools = []string{"Bash(ls:*)"} })
	writeFile(t, filepath.Join(e.root, "agents", "AGENT_REVIEWER.md"), reviewer)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Persona: "REVIEWER", Mode: "direct", Engine: "script"})
	if err != nil {
		t.Fatal(err)
	}
	last := func() engine.Request {
		se.mu.Lock()
		defer se.mu.Unlock()
		return se.reqs[len(se.reqs)-1]
	}
	count := func() int {
		se.mu.Lock()
		defer se.mu.Unlock()
		return len(se.reqs)
	}

	e.startWith(s.ID, "plain", TurnOptions{})
	base := last()
	if !slices.Equal(base.Tools, []string{"Read", "Grep", "Bash"}) || !slices.Equal(base.DisallowedTools, []string{"Write"}) ||
		!slices.Equal(base.AllowedTools, []string{"Read", "Bash(git *)", "Bash(ls:*)"}) {
		t.Fatalf("the persona's request: tools %q, disallowed %q, allowed %q", base.Tools, base.DisallowedTools, base.AllowedTools)
	}

	e.startWith(s.ID, "narrowed", TurnOptions{ToolsOverride: "Read, Grep", DisallowedToolsOverride: []string{"Grep"},
		SystemPromptAppend: "This turn only: TURN-EXTRA."})
	r := last()
	if !slices.Equal(r.Tools, []string{"Read", "Grep"}) || !slices.Equal(r.DisallowedTools, []string{"Write", "Grep"}) ||
		!slices.Equal(r.AllowedTools, []string{"Read"}) {
		t.Errorf("narrowed: tools %q, disallowed %q, allowed %q (Bash's auto-approvals must go with Bash)", r.Tools, r.DisallowedTools, r.AllowedTools)
	}
	if !strings.Contains(r.SystemPrompt, "PERSONA-BODY") || !strings.HasSuffix(strings.TrimSpace(r.SystemPrompt), "This turn only: TURN-EXTRA.") ||
		strings.Index(r.SystemPrompt, "PERSONA-BODY") > strings.Index(r.SystemPrompt, "TURN-EXTRA") {
		t.Errorf("the appended prompt is not after the persona's: %q", r.SystemPrompt)
	}
	if b, err := os.ReadFile(r.SystemPromptFile); err != nil || string(b) != r.SystemPrompt {
		t.Errorf("the turn's prompt file %s holds %q (%v), want the turn's prompt", r.SystemPromptFile, b, err)
	}
	if !r.PromptChanged {
		t.Error("a resumed conversation was not told its prompt changed for this turn")
	}

	e.startWith(s.ID, "approve less", TurnOptions{AutoApproveToolsOverride: []string{"Bash(git *)"}})
	if r := last(); !slices.Equal(r.AllowedTools, []string{"Bash(git *)"}) || !slices.Equal(r.Tools, base.Tools) {
		t.Errorf("auto-approve override: allowed %q, tools %q", r.AllowedTools, r.Tools)
	}
	e.startWith(s.ID, "approve nothing", TurnOptions{AutoApproveToolsOverride: []string{}})
	if r := last(); len(r.AllowedTools) != 0 {
		t.Errorf("an empty auto-approve override still approves %q", r.AllowedTools)
	}

	// For that turn only: the next is the persona's again.
	e.startWith(s.ID, "plain again", TurnOptions{})
	r = last()
	if !slices.Equal(r.Tools, base.Tools) || !slices.Equal(r.DisallowedTools, base.DisallowedTools) || !slices.Equal(r.AllowedTools, base.AllowedTools) ||
		strings.Contains(r.SystemPrompt, "TURN-EXTRA") {
		t.Errorf("the options outlived their turn: tools %q, disallowed %q, allowed %q, prompt %q", r.Tools, r.DisallowedTools, r.AllowedTools, r.SystemPrompt)
	}
	if b, _ := os.ReadFile(persona.PromptPath(e.root, s.ID)); strings.Contains(string(b), "TURN-EXTRA") {
		t.Error("the saved prompt still holds the last turn's appended text")
	}

	// Widening is refused, and nothing runs or changes.
	before := count()
	model := "other-model"
	for _, o := range []TurnOptions{
		{ToolsOverride: "Read,Write"},
		{ToolsOverride: "Edit", Model: model},
		{AutoApproveToolsOverride: []string{"Bash"}},
		{AutoApproveToolsOverride: []string{"Read", "Write"}},
	} {
		if _, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "widen", Options: o}); !errors.Is(err, ErrWidens) {
			t.Errorf("%+v: err %v, want ErrWidens", o, err)
		}
	}
	for _, o := range []TurnOptions{
		{ToolsOverride: " , "},
		{ToolsOverride: "default,Read"},
		{DisallowedToolsOverride: []string{""}},
		{AutoApproveToolsOverride: []string{"Read\nWrite"}},
		{SystemPromptAppend: strings.Repeat("x", MaxSystemPromptAppend+1)},
	} {
		if _, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "bad", Options: o}); !errors.Is(err, ErrInvalidTurnOptions) {
			t.Errorf("%.80v: err %v, want ErrInvalidTurnOptions", o, err)
		}
	}
	if n := count(); n != before {
		t.Errorf("%d refused turns reached the engine", n-before)
	}
	if got, _ := e.h.Session(s.ID); got.Model == model {
		t.Error("a refused turn changed the session's model")
	}
	// "default" keeps the persona's tools; without a tools list in the
	// persona any name narrows.
	e.startWith(s.ID, "default", TurnOptions{ToolsOverride: "default"})
	if r := last(); !slices.Equal(r.Tools, base.Tools) {
		t.Errorf("toolsOverride default: tools %q", r.Tools)
	}
	free, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "script"})
	if err != nil {
		t.Fatal(err)
	}
	e.startWith(free.ID, "any", TurnOptions{ToolsOverride: "Read,Edit"})
	if r := last(); !slices.Equal(r.Tools, []string{"Read", "Edit"}) || len(r.AllowedTools) != 0 {
		t.Errorf("no persona: tools %q, allowed %q (the server's Bash(ls:*) goes with Bash)", r.Tools, r.AllowedTools)
	}
}

// askRecorder is an Approver that allows everything and records what it
// was asked.
type askRecorder struct{ asked []string }

func (a *askRecorder) Ask(_ context.Context, q engine.ApprovalRequest) engine.ApprovalDecision {
	a.asked = append(a.asked, q.ToolName)
	return engine.ApprovalDecision{Allow: true}
}

// The approval path denies a tool the turn's overrides took away before
// anyone is asked (engines that cannot take a tool from their agent ask
// about it); the rest is asked as before.
func TestNarrowedApprover(t *testing.T) {
	rec := &askRecorder{}
	n := narrowedApprover{inner: rec, tools: []string{"Read", "Bash"}, deny: []string{"Bash(rm *)"}}
	for _, c := range []struct {
		tool, input string
		allow       bool
	}{
		{"Read", `{"file_path":"a"}`, true},
		{"Bash", `{"command":"ls"}`, true},
		{"Bash", `{"command":"rm -rf x"}`, false},
		{"Write", `{"file_path":"a"}`, false},
		{"mcp__srv__echo", `{}`, false},
	} {
		d := n.Ask(context.Background(), engine.ApprovalRequest{ToolName: c.tool, Input: json.RawMessage(c.input)})
		if d.Allow != c.allow || (!d.Allow && !strings.Contains(d.Message, "not available in this turn")) {
			t.Errorf("%s %s: %+v, want allow %v", c.tool, c.input, d, c.allow)
		}
	}
	if !slices.Equal(rec.asked, []string{"Read", "Bash"}) {
		t.Errorf("asked about %q", rec.asked)
	}
	all := narrowedApprover{inner: rec, deny: []string{"Write"}}
	if d := all.Ask(context.Background(), engine.ApprovalRequest{ToolName: "Edit", Input: json.RawMessage(`{}`)}); !d.Allow {
		t.Errorf("no tools list: Edit denied: %+v", d)
	}
}

// On the real engines against the fake Messages API: a tool the turn's
// toolsOverride took away is not run when the model calls it (its
// tool_result is an error) while the same call runs in the turns before
// and after; the appended prompt reaches the model for that turn only.
// Claude Code (2.1.329) keeps a resumed conversation's tool definitions
// whatever --tools says (verified here: the request still lists Grep),
// so there the narrowing holds where the tool would run: the CLI refuses
// the call (--tools; verified also with the auto-approval of Grep left in).
// The native loop no longer offers the tool at all.
func TestTurnOptionsReachTheModel(t *testing.T) {
	for _, name := range convEngines {
		t.Run(name, func(t *testing.T) {
			e := newTestEnv(t, nil)
			writeFile(t, filepath.Join(e.root, "agents", "AGENT_REVIEWER.md"),
				"---\ntools: \"Read,Grep,Glob\"\nauto_approve_tools: [\"Read\", \"Grep\", \"Glob\"]\n---\nYou review. Codeword: PERSONA-BODY.\n")
			writeFile(t, filepath.Join(e.root, "notes.txt"), "needle here\n")
			s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Persona: "REVIEWER", Mode: "direct", Engine: name})
			if err != nil {
				t.Fatal(err)
			}
			grep := claudetest.ToolUse("", "Grep", map[string]any{"pattern": "needle", "path": e.root})
			if name == engine.Anthropic {
				grep = claudetest.ToolUse("", "grep", map[string]any{"pattern": "needle", "path": "notes.txt"})
			}
			// grepTurn runs a turn whose model calls grep, then answers; it
			// returns the call's tool_result.
			grepTurn := func(msg string, o TurnOptions) (claudetest.ContentBlock, *claudetest.Request) {
				t.Helper()
				e.api.Script(claudetest.Reply{Blocks: []claudetest.Block{grep}}, claudetest.TextReply("done "+msg))
				e.startWith(s.ID, msg, o)
				r := lastRequest(t, e)
				res := r.ToolResults()
				if len(res) == 0 {
					t.Fatalf("%s: no tool_result in the model's last request", msg)
				}
				return res[len(res)-1], r
			}
			ran := func(res claudetest.ContentBlock) bool {
				return !res.IsError && (strings.Contains(res.Content, "notes.txt") || strings.Contains(res.Content, "needle here"))
			}
			if res, _ := grepTurn("first", TurnOptions{}); !ran(res) {
				t.Fatalf("the persona's grep did not run: %+v", res)
			}
			res, r := grepTurn("second", TurnOptions{ToolsOverride: "Read", SystemPromptAppend: "Codeword: TURN-EXTRA."})
			if ran(res) || !res.IsError {
				t.Errorf("toolsOverride Read: grep ran anyway: %+v", res)
			}
			if name == engine.Anthropic && slices.Contains(r.Tools, "grep") {
				t.Errorf("native: toolsOverride Read still offers %q", r.Tools)
			}
			if !strings.Contains(r.SystemText()+requestHistory(r), "TURN-EXTRA") {
				t.Errorf("the appended prompt did not reach the model: system %q, history %q", tail(r.SystemText()), tail(requestHistory(r)))
			}
			res, r = grepTurn("third", TurnOptions{})
			if !ran(res) {
				t.Errorf("the next turn's grep (the persona's again) did not run: %+v", res)
			}
			if strings.Contains(r.SystemText(), "TURN-EXTRA") {
				t.Error("the appended prompt outlived its turn in the system prompt")
			}
		})
	}
}
