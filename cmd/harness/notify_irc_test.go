package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/irc/irctest"
)

// harness serve with --notify-irc and --notify-irc-nick posts a turn's
// end to the channel as that nick, linking to this server's console.
func TestServeNotifiesIRC(t *testing.T) {
	f, err := irctest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	t.Setenv("HARNESS_CLAUDE_BIN", claudetest.FindCLI(t))
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	url, stop, status, errOut := startServe(t, "--demo", "--addr", "127.0.0.1:0",
		"--notify-irc", "irc://"+f.Addr()+"/#alerts", "--notify-irc-nick", "servebot")
	defer func() {
		stop <- os.Interrupt
		if code := <-status; code != 0 {
			t.Errorf("serve exit %d:\n%s", code, errOut.String())
		}
	}()
	id := demoSession(t, url, "claude-code")
	demoTurn(t, url, id, "hello")
	line, ok := f.WaitLine("PRIVMSG #alerts :harness: turn:completed", 60*time.Second)
	if !ok {
		t.Fatalf("no turn:completed line in #alerts; the server got %q", f.Lines())
	}
	if !strings.HasSuffix(line, url+"/#s="+id) {
		t.Errorf("line %q: want the session's link", line)
	}
	if !strings.Contains(strings.Join(f.Lines(), "\n"), "NICK servebot") {
		t.Errorf("not posted as servebot: %q", f.Lines())
	}
}
