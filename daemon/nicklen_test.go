package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/irc"
	"github.com/chirality/harness/irc/irctest"
)

// A nick longer than the server's NICKLEN (ngircd's default is 9) fails
// Start with the irc.NickError, and nothing is left running.
func TestStartNickTooLong(t *testing.T) {
	f, err := irctest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.SetNickLen(9, false)
	t.Setenv("XDG_RUNTIME_DIR", shortTemp(t))
	host, port, _ := strings.Cut(f.Addr(), ":")
	cfg, err := ParseConfig([]byte("server: {name: lab, host: "+host+", port: "+port+"}\n"+
		"agents:\n  - {nick: alice-long, agent: claude, directory: "+t.TempDir()+", channels: [\"#dev\"]}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	started := false
	d, err := New(Options{Config: cfg, Agent: cfg.Agents[0], MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		NewAgent: func(Hooks) (Agent, Supervisor, error) { started = true; return newFakeAgent(), nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Start(ctxT(t, 15*time.Second))
	var ne *irc.NickError
	if !errors.As(err, &ne) || !strings.Contains(err.Error(), `daemon alice-long: irc: the server refused the nick "lab-alice-long" (432): Nickname too long, max. 9 characters`) {
		t.Fatalf("Start: %v", err)
	}
	if started {
		t.Fatal("the agent was started")
	}
	d.Stop(context.Background())
}
