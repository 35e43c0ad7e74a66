package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

func TestParseQueueCommand(t *testing.T) {
	for _, c := range []struct {
		line string
		want Command
	}{
		{"/queue", Command{Name: "queue"}},
		{"/queue edit 2   fix  the  tests ", Command{Name: "queue", Sub: "edit", Index: 2, Arg: "fix  the  tests"}},
		{"/queue move 3 1", Command{Name: "queue", Sub: "move", Index: 3, To: 1}},
		{"/queue delete 1", Command{Name: "queue", Sub: "delete", Index: 1}},
		{"/queue rm 4", Command{Name: "queue", Sub: "delete", Index: 4}},
	} {
		got, isCmd, _, err := ParseCommand(c.line)
		if err != nil || !isCmd || got != c.want {
			t.Errorf("%q: %+v %v %v, want %+v", c.line, got, isCmd, err, c.want)
		}
	}
	for _, bad := range []string{"/queue edit 2", "/queue edit x text", "/queue move 1", "/queue move 0 1", "/queue delete", "/queue delete 1 2", "/queue shuffle", "/queue rm 1001"} {
		if _, isCmd, _, err := ParseCommand(bad); !isCmd || err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A message sent while a turn runs is queued; the queue shows above the
// input; /queue's forms name the prompts by their place; a turn's start
// lists the queue again.
func TestQueueKeysAndScreen(t *testing.T) {
	var calls []string
	m := scripted(80, 30, Event{Type: "user", Content: "long task"}, Event{Type: "status", State: "thinking"})
	m.act = Actions{
		Prompt:    func(s string) tea.Cmd { calls = append(calls, "prompt:"+s); return nil },
		Queue:     func(s string) tea.Cmd { calls = append(calls, "queue:"+s); return nil },
		QueueList: func(asked bool) tea.Cmd { calls = append(calls, fmt.Sprintf("list:%v", asked)); return nil },
		QueueEdit: func(id string, msg *string, pos *int) tea.Cmd {
			switch {
			case msg != nil:
				calls = append(calls, "edit:"+id+"="+*msg)
			case pos != nil:
				calls = append(calls, fmt.Sprintf("move:%s=%d", id, *pos))
			}
			return nil
		},
		QueueDelete: func(id string) tea.Cmd { calls = append(calls, "delete:"+id); return nil },
	}
	enter := func(s string) {
		for _, r := range s {
			m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
		}
		m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	}
	expect := func(want ...string) {
		t.Helper()
		if strings.Join(calls, "|") != strings.Join(want, "|") {
			t.Fatalf("calls %q, want %q", calls, want)
		}
		calls = nil
	}
	enter("next step")
	expect("queue:next step")
	if len(m.input) != 0 {
		t.Fatalf("input %q kept after queueing", string(m.input))
	}
	m.Update(QueueMsg{Prompts: []QueuedPrompt{{"p1", "next step"}, {"p2", "then\nthis"}, {"p3", "three"}, {"p4", "four"}}})
	f := plain(m.Frame())
	for _, want := range []string{"Queued (4), run in this order when the turn ends", "1. next step", "2. then this", "3. three", "… and 1 more (/queue)"} {
		if !strings.Contains(f, want) {
			t.Fatalf("no %q on the screen:\n%s", want, f)
		}
	}
	if n := strings.Count(f, "\n") + 1; n != 30 {
		t.Fatalf("the frame has %d lines, want the terminal's 30", n)
	}
	enter("/queue edit 2 then that")
	enter("/queue move 3 1")
	enter("/queue delete 4")
	enter("/queue")
	expect("edit:p2=then that", "move:p3=0", "delete:p4", "list:true")
	enter("/queue delete 9")
	expect()
	if !strings.Contains(plain(m.Frame()), "there is no prompt 9 (4 queued") {
		t.Fatalf("no refusal:\n%s", plain(m.Frame()))
	}
	// The next turn starts: the queue is listed again.
	m.Update(EventMsg(Event{Type: "status", State: "idle", Timestamp: 1}))
	m.Update(EventMsg(Event{Type: "user", Content: "next step", Timestamp: 1}))
	expect("list:false") // a turn's start with prompts queued lists the queue again
	m.Update(QueueMsg{})
	if f = plain(m.Frame()); strings.Contains(f, "Queued (") || strings.Contains(f, "Nothing is queued") {
		t.Fatalf("an empty queue nobody asked for:\n%s", f)
	}
	m.Update(QueueMsg{Listed: true})
	f = plain(m.Frame())
	if strings.Contains(f, "Queued (") || !strings.Contains(f, "Nothing is queued") {
		t.Fatalf("an empty queue:\n%s", f)
	}
	// Idle: a message is a prompt, not queued.
	enter("fresh")
	expect("prompt:fresh")
}

// TestRealTerminalQueue runs `harness tui --demo` in tmux: while a turn
// waits on an approval, two messages are queued, moved and edited with
// /queue; once allowed, the turn ends and the queued prompts run in
// their order, each shown as its own turn, and the queue lines go.
func TestRealTerminalQueue(t *testing.T) {
	// tall: the three turns stay on the screen
	_, run, waitFor := demoTUI(t, 200, 90*time.Second)
	has := func(sub ...string) func(string) bool {
		return func(s string) bool {
			for _, x := range sub {
				if !strings.Contains(s, x) {
					return false
				}
			}
			return true
		}
	}
	typeLine := func(s string) {
		run("send-keys", "-t", "t", "-l", s)
		run("send-keys", "-t", "t", "Enter")
	}
	waitFor("the input box", has("Message  (Enter send"))
	typeLine("touch a file please")
	waitFor("the approval card", has("? Allow Bash?"))
	typeLine("hello queued one")
	waitFor("the first queued prompt", has("Queued (1)", "1. hello queued one"))
	typeLine("hello queued two")
	waitFor("the second queued prompt", has("Queued (2)", "2. hello queued two"))
	typeLine("/queue move 2 1")
	waitFor("the move", has("1. hello queued two", "2. hello queued one"))
	typeLine("/queue edit 2 hello queued uno")
	waitFor("the edit", has("1. hello queued two", "2. hello queued uno"))
	run("send-keys", "-t", "t", "-l", "a")
	s := waitFor("both queued turns run and the queue empties", func(s string) bool {
		return !strings.Contains(s, "Queued (") && strings.Count(s, "▌ hello queued") == 2 && strings.Contains(s, "▌ hello queued uno") &&
			!strings.Contains(s, "Thinking...") && !strings.Contains(s, "Running:")
	})
	if i, j := strings.Index(s, "▌ hello queued two"), strings.Index(s, "▌ hello queued uno"); i < 0 || j < i {
		t.Fatalf("the queued turns ran out of order:\n%s", s)
	}
}
