package tui

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/chirality/harness/event"
)

func TestParseCommand(t *testing.T) {
	for _, c := range []struct {
		line  string
		isCmd bool
		want  Command
		msg   string
		bad   bool
	}{
		{line: "/model opus", isCmd: true, want: Command{Name: "model", Arg: "opus"}},
		{line: "  /agent   PLANNER ", isCmd: true, want: Command{Name: "agent", Arg: "PLANNER"}},
		{line: "/mode plan", isCmd: true, want: Command{Name: "mode", Arg: "plan"}},
		{line: "/fork", isCmd: true, want: Command{Name: "fork"}},
		{line: "/help", isCmd: true, want: Command{Name: "help"}},
		{line: "/sessions", isCmd: true, want: Command{Name: "sessions"}},
		{line: "/rewind", isCmd: true, want: Command{Name: "rewind", Turns: 1}},
		{line: "/rewind 3", isCmd: true, want: Command{Name: "rewind", Turns: 3}},
		{line: "/rewind --files", isCmd: true, want: Command{Name: "rewind", Turns: 1, Files: true}},
		{line: "/rewind 2 --conversation", isCmd: true, want: Command{Name: "rewind", Turns: 2, Conversation: true}},
		{line: "/rewind -f -c", isCmd: true, want: Command{Name: "rewind", Turns: 1, Files: true, Conversation: true}},
		{line: "/rewind --both 4", isCmd: true, want: Command{Name: "rewind", Turns: 4, Files: true, Conversation: true}},
		// messages
		{line: "hello /model x", msg: "hello /model x"},
		{line: "//model x", msg: "/model x"},
		{line: "/demo error", msg: "/demo error"},
		{line: "/modelx y", msg: "/modelx y"},
		{line: "/", msg: "/"},
		// malformed commands
		{line: "/model", isCmd: true, bad: true},
		{line: "/model a b", isCmd: true, bad: true},
		{line: "/fork now", isCmd: true, bad: true},
		{line: "/rewind 0", isCmd: true, bad: true},
		{line: "/rewind -2", isCmd: true, bad: true},
		{line: "/rewind 1 2", isCmd: true, bad: true},
		{line: "/rewind 1001", isCmd: true, bad: true},
		{line: "/rewind --everything", isCmd: true, bad: true},
	} {
		got, isCmd, msg, err := ParseCommand(c.line)
		if isCmd != c.isCmd || (err != nil) != c.bad || (err != nil && !errors.Is(err, ErrCommand)) {
			t.Errorf("%q: isCmd %v err %v", c.line, isCmd, err)
			continue
		}
		if !c.bad && (got != c.want || msg != c.msg) {
			t.Errorf("%q: %+v msg %q, want %+v msg %q", c.line, got, msg, c.want, c.msg)
		}
	}
	if _, _, _, err := ParseCommand("/rewind " + strings.Repeat("9", 100)); err == nil || len(err.Error()) > 200 {
		t.Errorf("a long argument: %v", err)
	}
}

// The commands reach their actions with what was typed; /rewind without
// flags asks (f, c, b; Esc cancels); fork and rewind wait for the turn's
// end; a malformed command is said in the conversation and sends nothing.
func TestCommandKeys(t *testing.T) {
	var calls []string
	m := scripted(80, 30)
	m.act = Actions{
		Prompt: func(s string) tea.Cmd { calls = append(calls, "prompt:"+s); return nil },
		Switch: func(what, name string) tea.Cmd { calls = append(calls, "switch:"+what+"="+name); return nil },
		Fork:   func() tea.Cmd { calls = append(calls, "fork"); return nil },
		Rewind: func(n int, files, conv bool) tea.Cmd {
			calls = append(calls, fmt.Sprintf("rewind:%d:%v:%v", n, files, conv))
			return nil
		},
		Preview:  func(n int) tea.Cmd { calls = append(calls, fmt.Sprintf("preview:%d", n)); return nil },
		Sessions: func() tea.Cmd { calls = append(calls, "sessions"); return nil },
	}
	enter := func(s string) {
		for _, r := range s {
			m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
		}
		m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	}
	key := func(r rune) { m.Update(tea.KeyPressMsg{Code: r, Text: string(r)}) }
	expect := func(want ...string) {
		t.Helper()
		if strings.Join(calls, "|") != strings.Join(want, "|") {
			t.Fatalf("calls %q, want %q", calls, want)
		}
		calls = nil
	}

	enter("/model opus")
	enter("/agent PLANNER")
	enter("/mode plan")
	enter("/fork")
	enter("//model is a word")
	enter("/demo error")
	expect("switch:model=opus", "switch:persona=PLANNER", "switch:permissionMode=plan", "fork", "prompt:/model is a word", "prompt:/demo error")

	enter("/rewind 2 --files")
	expect("rewind:2:true:false")

	enter("/sessions")
	expect("sessions")

	enter("/rewind")
	expect("preview:1")
	if f := plain(m.Frame()); !strings.Contains(f, "Rewind 1 turn: f files · c conversation · b both · Esc cancel") {
		t.Fatalf("no question:\n%s", f)
	}
	m.Update(PreviewMsg{Turns: 2, Text: "stale"}) // another question's: ignored
	m.Update(PreviewMsg{Turns: 1, Text: "make   a\nfile", Files: []string{"a.go (modified)", "b.txt (added)"}})
	if f := strings.Join(strings.Fields(plain(m.Frame())), " "); !strings.Contains(f,
		"Rewind 1 turn (to before “make a file”; files to restore: a.go (modified), b.txt (added)): f files · c conversation · b both · Esc cancel") {
		t.Fatalf("no preview in the question:\n%s", f)
	}
	key('x') // not an answer: typed
	m.Update(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
	key('c')
	expect("rewind:1:false:true")
	if strings.Contains(plain(m.Frame()), "Rewind 1 turn:") {
		t.Fatal("the question stays after its answer")
	}
	enter("/rewind 3")
	key('b')
	expect("preview:3", "rewind:3:true:true")
	enter("/rewind")
	m.Update(tea.KeyPressMsg{Code: tea.KeyEscape})
	key('f')
	expect("preview:1")
	if string(m.input) != "f" {
		t.Fatalf("after Esc, f is text: input %q", string(m.input))
	}
	m.Update(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})

	// While a turn runs: a switch goes (it applies from the next turn),
	// fork and rewind are refused here, a message waits.
	m.Update(EventMsg{Type: "status", Timestamp: 1, State: "thinking"})
	enter("/model haiku")
	enter("/fork")
	enter("/rewind --both")
	expect("switch:model=haiku")
	if f := plain(m.Frame()); strings.Count(f, "a turn is running; wait for its end") != 2 {
		t.Fatalf("fork and rewind during a turn are not refused on screen:\n%s", f)
	}
	enter("hello")
	expect()
	m.Update(EventMsg{Type: "status", Timestamp: 1, State: "idle"})
	m.Update(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})

	enter("/rewind 0")
	enter("/model")
	expect()
	f := plain(m.Frame())
	if !strings.Contains(f, "✗ command: /rewind [N]") || !strings.Contains(f, "✗ command: /model takes one name") {
		t.Fatalf("malformed commands are not explained:\n%s", f)
	}

	// A preview that fails (no turn to undo) ends the question and says why.
	enter("/rewind 5")
	m.Update(PreviewMsg{Turns: 5, Err: errors.New("/rewind refused (404): 2 turn(s) to undo, not 5")})
	if f := plain(m.Frame()); strings.Contains(f, "Rewind 5 turns") || !strings.Contains(f, "✗ /rewind refused (404): 2 turn(s) to undo, not 5") {
		t.Fatalf("a failed preview:\n%s", f)
	}
	key('f')
	expect("preview:5")
	m.Update(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})

	enter("/help")
	if !m.help || !strings.Contains(plain(m.Frame()), "/rewind [N]") {
		t.Fatalf("/help does not list the commands:\n%s", plain(m.Frame()))
	}
}

// What the commands did shows in the conversation: a switch's answer, a
// fork (the session event), a rewind (the rewound event), a refusal.
func TestCommandResults(t *testing.T) {
	yes := true
	m := scripted(80, 24, Event{Type: "user", Content: "first"}, Event{Type: "text", Content: "one"},
		Event{Type: "status", State: "idle"})
	m.Update(NoteMsg{Text: "The next turns run with model opus"})
	m.Update(EventMsg{Type: "session", Timestamp: 1, SessionID: "new-id", From: "old-id"})
	m.Update(EventMsg{Type: "rewound", Timestamp: 1, ToTurn: 1, Files: []string{"a.go", "b/c.txt"}, Conversation: &yes})
	m.Update(NoteMsg{Text: "/rewind refused (422): the engine cannot cut its conversation", Err: true})
	f := strings.Join(strings.Fields(plain(m.Frame())), " ")
	for _, want := range []string{"» The next turns run with model opus", "» Forked: this is now session new-id, a copy of old-id",
		"» Rewound: 2 file(s) restored: a.go, b/c.txt; the conversation continues from before that turn",
		"✗ /rewind refused (422): the engine cannot cut its conversation"} {
		if !strings.Contains(f, want) {
			t.Errorf("the screen lacks %q:\n%s", want, f)
		}
	}
	golden(t, "commands", m.Frame())

	// /rewind's question with its preview, on the status line.
	q := scripted(80, 16, Event{Type: "user", Content: "make a file"}, Event{Type: "text", Content: "made"}, Event{Type: "status", State: "idle"})
	q.act.Rewind = func(int, bool, bool) tea.Cmd { return nil }
	for _, r := range "/rewind" {
		q.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	q.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	q.Update(PreviewMsg{Turns: 1, Text: "make a file", Files: []string{"made.txt (added)", "main.go (modified)"}})
	golden(t, "rewind-question", q.Frame())

	var many []string
	for i := range 15 {
		many = append(many, fmt.Sprintf("f%d", i))
	}
	no := false
	if got := rewoundText(Event{Files: many, Conversation: &no}); !strings.HasSuffix(got, "f9 and 5 more") {
		t.Errorf("a long file list: %q", got)
	}
	if got := rewoundText(Event{Conversation: &no}); got != "Rewound: nothing had changed" {
		t.Errorf("an empty rewind: %q", got)
	}
}

func TestPreviewText(t *testing.T) {
	var many []string
	for i := range 8 {
		many = append(many, fmt.Sprintf("f%d (added)", i))
	}
	for _, c := range []struct {
		p    PreviewMsg
		want string
	}{
		{PreviewMsg{Text: strings.Repeat("x", 50)}, " (to before “" + strings.Repeat("x", 40) + "…”; no file changed since)"},
		{PreviewMsg{Text: "hi", FilesError: "no file snapshot"}, " (to before “hi”; its files cannot be restored (no file snapshot))"},
		{PreviewMsg{Text: "hi", Files: many}, " (to before “hi”; files to restore: f0 (added), f1 (added), f2 (added), f3 (added), f4 (added) and 3 more)"},
	} {
		if got := previewText(c.p); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}

// A trust event shows what was not honoured and each widened grant;
// /trust trusts the persona and MCP notices of the turn (not the
// session file's rules, which a person grants by "always"), once.
func TestTrustNoticeAndCommand(t *testing.T) {
	var calls []string
	m := scripted(100, 30, Event{Type: "user", Content: "go"})
	m.act.Trust = func(kind, name, path, hash string) tea.Cmd {
		calls = append(calls, kind+":"+name+":"+path+":"+hash)
		return nil
	}
	m.Update(EventMsg{Type: "trust", Timestamp: 1, TrustKind: "persona", Name: "worker", Path: "/p/agents/AGENT_worker.md", Hash: "sha256:ab",
		Changes: []event.TrustChange{{Field: "auto_approve_tools", Trusted: "(not set)", Now: "Bash"}}, Message: "persona file widens auto_approve_tools"})
	m.Update(EventMsg{Type: "trust", Timestamp: 1, TrustKind: "mcp", Name: "evil", Hash: "sha256:cd", Message: "MCP server evil is not started"})
	m.Update(EventMsg{Type: "trust", Timestamp: 1, TrustKind: "session", Rules: []string{"Bash"}, Message: "the session file says rules Bash"})
	f := strings.Join(strings.Fields(plain(m.Frame())), " ")
	for _, want := range []string{"Not honoured: persona file widens auto_approve_tools", "auto_approve_tools: (not set) → Bash",
		"Not honoured: MCP server evil is not started", "rules: Bash", "/trust to trust it as shown"} {
		if !strings.Contains(f, want) {
			t.Errorf("the screen lacks %q:\n%s", want, f)
		}
	}
	enter := func(s string) {
		for _, r := range s {
			m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
		}
		m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	}
	enter("/trust")
	if strings.Join(calls, "|") != "persona:worker:/p/agents/AGENT_worker.md:sha256:ab|mcp:evil::sha256:cd" {
		t.Fatalf("/trust called %q", calls)
	}
	calls = nil
	enter("/trust")
	if len(calls) != 0 || !strings.Contains(plain(m.Frame()), "/trust: the last turn showed nothing") {
		t.Fatalf("a second /trust: %q\n%s", calls, plain(m.Frame()))
	}
	if _, err := DecodeEvent([]byte(`{"type":"trust","timestamp":1,"message":"x"}`)); err == nil {
		t.Error("a trust event without trustKind decoded")
	}
}

// /sessions' note: one line a session, the current one marked, each
// worktree session's branch and base, the others in the project tree.
func TestSessionsText(t *testing.T) {
	got := SessionsText([]SessionItem{
		{SessionID: "1a2b3c4d-0000", Title: "Fix the parser", Current: true, Running: true, Isolation: "worktree", Branch: "harness/1a2b3c4d", Base: "main"},
		{SessionID: "5e6f7a8b-0000", Title: "Write\nthe docs"},
		{SessionID: "9c0d1e2f-0000", Title: "Ask", PendingApprovals: 1, Isolation: "worktree", Branch: "feature/x", Base: "origin/main"},
	})
	want := "Sessions of this project (* this one):\n" +
		"* 1a2b3c4d  harness/1a2b3c4d ← main  running  Fix the parser\n" +
		"  5e6f7a8b  (project tree)           idle     Write the docs\n" +
		"  9c0d1e2f  feature/x ← origin/main  waiting  Ask"
	if got != want {
		t.Errorf("SessionsText:\n%s\nwant:\n%s", got, want)
	}
	if got := SessionsText(nil); got != "No sessions in this project." {
		t.Errorf("no sessions: %q", got)
	}
	m := scripted(80, 10)
	for _, r := range "/sessions" {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	if f := plain(m.Frame()); !strings.Contains(f, "/sessions is not available here") {
		t.Errorf("without the action, /sessions says so:\n%s", f)
	}
}
