package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

func TestParseSteerCommand(t *testing.T) {
	for line, want := range map[string]string{
		"/steer use tabs":               "use tabs",
		"  /steer   keep  the  spaces ": "keep  the  spaces",
		"/steer /not a command":         "/not a command",
	} {
		c, isCmd, _, err := ParseCommand(line)
		if err != nil || !isCmd || c != (Command{Name: "steer", Arg: want}) {
			t.Errorf("%q: %+v %v %v, want steer %q", line, c, isCmd, err, want)
		}
	}
	for _, bad := range []string{"/steer", "/steer   "} {
		if _, isCmd, _, err := ParseCommand(bad); !isCmd || !errors.Is(err, ErrCommand) {
			t.Errorf("%q: isCmd %v, err %v; want a command error", bad, isCmd, err)
		}
	}
	if _, isCmd, msg, _ := ParseCommand("//steer x"); isCmd || msg != "/steer x" {
		t.Errorf("//steer x is a message: %v %q", isCmd, msg)
	}
}

// /steer TEXT while a turn runs calls Steer with the text (not Queue,
// not Prompt); the steered message, once the server's stream has it,
// shows as a user part of the running turn; outside a turn /steer is
// refused on the screen and nothing is sent.
func TestSteerKeys(t *testing.T) {
	var calls []string
	m := scripted(80, 24, Event{Type: "user", Content: "long task"}, Event{Type: "status", State: "thinking"})
	m.act = Actions{
		Prompt: func(s string) tea.Cmd { calls = append(calls, "prompt:"+s); return nil },
		Queue:  func(s string) tea.Cmd { calls = append(calls, "queue:"+s); return nil },
		Steer:  func(s string) tea.Cmd { calls = append(calls, "steer:"+s); return nil },
	}
	enter := func(s string) {
		for _, r := range s {
			m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
		}
		m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	}
	enter("/steer use tabs")
	if got := strings.Join(calls, "|"); got != "steer:use tabs" {
		t.Fatalf("calls %q, want steer:use tabs", got)
	}
	if len(m.input) != 0 {
		t.Fatalf("input %q kept after steering", string(m.input))
	}
	calls = nil
	m.Update(EventMsg(Event{Type: "user", Content: "use tabs", Timestamp: 1}))
	m.Update(EventMsg(Event{Type: "status", State: "thinking", Timestamp: 1}))
	if f := plain(m.Frame()); !strings.Contains(f, "▌ use tabs") {
		t.Fatalf("the steered message is not shown in the turn:\n%s", f)
	}
	// A refusal from the server shows as an error note.
	m.Update(NoteMsg{Text: "/steer refused (422): the fakeacp engine cannot take a message while a turn runs", Err: true})
	if f := plain(m.Frame()); !strings.Contains(f, "/steer refused (422)") {
		t.Fatalf("no refusal on the screen:\n%s", f)
	}
	m.Update(EventMsg(Event{Type: "status", State: "idle", Timestamp: 1}))
	enter("/steer too late")
	if len(calls) != 0 {
		t.Fatalf("steered outside a turn: %q", calls)
	}
	if f := plain(m.Frame()); !strings.Contains(f, "no turn is running to steer") {
		t.Fatalf("no refusal outside a turn:\n%s", f)
	}
}

// TestRealTerminalSteer runs `harness tui --demo` on the native engine
// in tmux: while the demo model's long answer streams, /steer puts a
// message into the turn; it shows there, the same turn answers it (the
// demo model echoes it) and ends; /steer after the turn is refused on the
// screen.
func TestRealTerminalSteer(t *testing.T) {
	_, run, waitFor := demoTUIOn(t, "anthropic", 60, 120*time.Second)
	typeLine := func(s string) {
		run("send-keys", "-t", "t", "-l", s)
		run("send-keys", "-t", "t", "Enter")
	}
	waitFor("the input box", func(s string) bool { return strings.Contains(s, "Message  (Enter send") })
	typeLine("please give me a long answer")
	waitFor("the long answer streaming", func(s string) bool { return strings.Contains(s, "A long answer") })
	typeLine("/steer steered hello")
	waitFor("the steered message in the turn", func(s string) bool { return strings.Contains(s, "▌ steered hello") })
	waitFor("the turn answering it and ending", func(s string) bool {
		return strings.Contains(s, "You said: steered hello") && !strings.Contains(s, "Thinking...") && !strings.Contains(s, "Running:")
	})
	typeLine("/steer too late")
	waitFor("the refusal outside a turn", func(s string) bool { return strings.Contains(s, "no turn is running to steer") })
}
