package irc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chirality/harness/irc"
	"github.com/chirality/harness/irc/irctest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t *testing.T, addr, nick string, chans ...string) (*irc.Client, chan irc.Message) {
	t.Helper()
	c, err := irc.New(irc.Config{Addr: addr, Nick: nick, Channels: chans, Timeout: 3 * time.Second,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan irc.Message, 100)
	c.OnMessage(func(m irc.Message) { got <- m })
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := ctxT(t, 10*time.Second)
	if err := c.WaitRegistered(ctx, 1); err != nil {
		t.Fatalf("%s not registered: %v", nick, err)
	}
	for _, ch := range chans {
		if err := c.WaitJoined(ctx, ch); err != nil {
			t.Fatalf("%s not in %s: %v", nick, ch, err)
		}
	}
	return c, got
}

func next(t *testing.T, ch chan irc.Message) irc.Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message")
	}
	return irc.Message{}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []irc.Config{
		{Nick: "a"},
		{Addr: "x:1", Nick: "1bad"},
		{Addr: "x:1", Nick: "ok", Channels: []string{"nochan"}},
	} {
		if _, err := irc.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// exercise runs the client's commands against a server: messages both
// ways, mentions, multi-line sends, ask, who, topic, join and part.
func exercise(t *testing.T, addr string) {
	a, aGot := newClient(t, addr, "lab-alice", "#dev")
	b, bGot := newClient(t, addr, "lab-bob", "#dev")
	ctx := ctxT(t, 20*time.Second)

	if err := b.Send("#dev", "hello @lab-alice\nsecond line\r\nPRIVMSG #dev :injected"); err != nil {
		t.Fatal(err)
	}
	m := next(t, aGot)
	if m.Text != "hello @lab-alice" || !m.Mention || m.Sender != "lab-bob" || m.Channel != "#dev" {
		t.Fatalf("got %+v", m)
	}
	if m := next(t, aGot); m.Text != "second line" || m.Mention {
		t.Fatalf("got %+v", m)
	}
	if m := next(t, aGot); m.Text != "PRIVMSG #dev :injected" {
		t.Fatalf("a newline injected a command: %+v", m)
	}
	if got := a.Read("#dev", 2); len(got) != 2 || got[1].Text != "PRIVMSG #dev :injected" {
		t.Fatalf("read: %+v", got)
	}
	long := strings.Repeat("word ", 200)
	if err := a.Send("#dev", long); err != nil {
		t.Fatal(err)
	}
	var joined []string
	for len(strings.Join(joined, " ")) < len(strings.TrimSpace(long)) {
		joined = append(joined, next(t, bGot).Text)
	}
	if strings.TrimSpace(strings.Join(joined, " ")) != strings.TrimSpace(long) {
		t.Fatalf("long message changed on the way: %q", joined)
	}
	if err := a.Send("#dev", "\r\n"); !errors.Is(err, irc.ErrEmptyMessage) {
		t.Fatalf("empty: %v", err)
	}
	// a flood is refused whole: bob sees none of it, only what follows
	flood := strings.Repeat("line\n", irc.MaxSendLines+1)
	if err := a.Send("#dev", flood); !errors.Is(err, irc.ErrTooLong) {
		t.Fatalf("flood: %v", err)
	}
	if err := a.Send("#dev", strings.Repeat("ok\n", irc.MaxSendLines)); err != nil {
		t.Fatalf("MaxSendLines lines: %v", err)
	}
	for i := 0; i < irc.MaxSendLines; i++ {
		if m := next(t, bGot); m.Text != "ok" {
			t.Fatalf("after a refused flood, bob saw %q", m.Text)
		}
	}

	// ask: bob answers alice's question
	go func() {
		for m := range bGot {
			if strings.Contains(m.Text, "ready?") {
				_ = b.Send("#dev", "not for you")
				_ = b.Send("#dev", "lab-alice: yes")
				return
			}
		}
	}()
	ans, err := a.Ask(ctx, "#dev", "ready?", 10*time.Second)
	if err != nil || ans.Text != "lab-alice: yes" || ans.Sender != "lab-bob" {
		t.Fatalf("ask: %+v %v", ans, err)
	}
	if _, err := a.Ask(ctx, "#dev", "anyone?", 50*time.Millisecond); !errors.Is(err, irc.ErrAskTimeout) {
		t.Fatalf("ask timeout: %v", err)
	}

	who, err := a.Who(ctx, "#dev")
	if err != nil {
		t.Fatal(err)
	}
	nicks := map[string]bool{}
	for _, w := range who {
		nicks[w.Nick] = true
	}
	if !nicks["lab-alice"] || !nicks["lab-bob"] {
		t.Fatalf("who: %+v", who)
	}

	if topic, err := a.Topic(ctx, "#dev", "build\nstatus"); err != nil || topic != "build status" {
		t.Fatalf("set topic: %q %v", topic, err)
	}
	if topic, err := b.Topic(ctx, "#dev", ""); err != nil || topic != "build status" {
		t.Fatalf("topic: %q %v", topic, err)
	}
	// a topic longer than one IRC line is refused, the old one kept
	if _, err := a.Topic(ctx, "#dev", strings.Repeat("long topic\n", 100)); !errors.Is(err, irc.ErrTooLong) {
		t.Fatalf("long topic: %v", err)
	}
	if topic, err := b.Topic(ctx, "#dev", ""); err != nil || topic != "build status" {
		t.Fatalf("topic after a refused one: %q %v", topic, err)
	}

	if err := a.Join(ctx, "#ops"); err != nil {
		t.Fatal(err)
	}
	if got := a.Channels(); strings.Join(got, ",") != "#dev,#ops" {
		t.Fatalf("channels: %v", got)
	}
	if err := a.Part(ctx, "#ops"); err != nil {
		t.Fatal(err)
	}
	if got := a.Channels(); strings.Join(got, ",") != "#dev" {
		t.Fatalf("channels after part: %v", got)
	}
	if err := a.Join(ctx, "bad"); !errors.Is(err, irc.ErrInvalidChannel) {
		t.Fatalf("bad join: %v", err)
	}
}

func TestClientFake(t *testing.T) {
	f, err := irctest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	exercise(t, f.Addr())
}

func TestClientNgircd(t *testing.T) {
	n := irctest.StartNgircd(t)
	exercise(t, n.Addr())
}

func TestNgircdErrors(t *testing.T) {
	n := irctest.StartNgircd(t)
	a, _ := newClient(t, n.Addr(), "lab-alice", "#dev")
	b, _ := newClient(t, n.Addr(), "lab-bob", "#dev")
	ctx := ctxT(t, 10*time.Second)
	if _, err := a.Topic(ctx, "#dev", "mine"); err != nil {
		t.Fatal(err)
	}
	var se *irc.ServerError
	if _, err := b.Topic(ctx, "#ops", "theirs"); !errors.As(err, &se) {
		t.Fatalf("topic of a channel not joined: %v", err)
	}
	if _, err := a.Topic(ctx, "#elsewhere", ""); !errors.As(err, &se) {
		t.Fatalf("topic of a channel not joined: %v", err)
	}
	if err := a.Part(ctx, "#notin"); !errors.As(err, &se) {
		t.Fatalf("part of a channel not joined: %v", err)
	}
}

// The connection drops; the client reconnects with back-off and rejoins.
func TestReconnectFake(t *testing.T) {
	f, err := irctest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, _ := newClient(t, f.Addr(), "lab-alice", "#dev")
	ctx := ctxT(t, 10*time.Second)
	f.Refuse(true)
	f.DropAll()
	// refused connections: the client keeps trying (the fake counts no
	// lines from them), then gets in once the server accepts again
	if err := a.Send("#dev", "x"); err == nil {
		// sending may race the drop; either way the client must recover
		t.Log("send before the drop was noticed")
	}
	f.Refuse(false)
	if err := a.WaitRegistered(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitJoined(ctx, "#dev"); err != nil {
		t.Fatal(err)
	}
	if got := f.Members("#dev"); len(got) != 1 || got[0] != "lab-alice" {
		t.Fatalf("members after reconnect: %v", got)
	}
}

// A slow server still registers the client within the timeout.
func TestSlowServer(t *testing.T) {
	f, err := irctest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.SetDelay(30 * time.Millisecond)
	newClient(t, f.Addr(), "slow", "#dev")
}

// Close while the server refuses every connection returns promptly.
func TestCloseWhileRefused(t *testing.T) {
	f, err := irctest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Refuse(true)
	c, err := irc.New(irc.Config{Addr: f.Addr(), Nick: "x", Timeout: time.Second, MinBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitRegistered(ctxT(t, 100*time.Millisecond), 1); err == nil {
		t.Fatal("registered on a refusing server")
	}
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung")
	}
	if err := c.Send("#dev", "x"); !errors.Is(err, irc.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
}

// An ngircd restart: the client reconnects and rejoins its channels.
func TestReconnectNgircd(t *testing.T) {
	n := irctest.StartNgircd(t)
	a, _ := newClient(t, n.Addr(), "lab-alice", "#dev")
	n.Restart()
	ctx := ctxT(t, 15*time.Second)
	if err := a.WaitRegistered(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitJoined(ctx, "#dev"); err != nil {
		t.Fatal(err)
	}
	_, bGot := newClient(t, n.Addr(), "lab-bob", "#dev")
	if err := a.Send("#dev", "back"); err != nil {
		t.Fatal(err)
	}
	if m := next(t, bGot); m.Text != "back" {
		t.Fatalf("got %+v", m)
	}
}

// A nick in use at the first registration is a NickError (433), and the
// client never takes another nick (ircevent would try lab-alice_0).
func TestNickInUse(t *testing.T) {
	n := irctest.StartNgircd(t)
	newClient(t, n.Addr(), "lab-alice", "#dev")
	c, err := irc.New(irc.Config{Addr: n.Addr(), Nick: "lab-alice", Channels: []string{"#dev"}, MinBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.WaitRegistered(ctxT(t, 10*time.Second), 1)
	var ne *irc.NickError
	if !errors.As(err, &ne) || ne.Code != "433" || !strings.Contains(err.Error(), `"lab-alice" is already in use on the IRC network`) {
		t.Fatalf("WaitRegistered = %v, want a 433 NickError", err)
	}
	if c.Nick() != "lab-alice" || c.Registrations() != 0 {
		t.Fatalf("registered as %s (%d times)", c.Nick(), c.Registrations())
	}
}

// Later keeps what it cannot post (the server is down; the channel not
// joined yet) and posts it after the rejoin, in order; a message for a
// channel the client left does not hold back another channel's.
func TestLaterAcrossARestart(t *testing.T) {
	n := irctest.StartNgircd(t)
	a, _ := newClient(t, n.Addr(), "lab-alice", "#dev", "#ops")
	if err := a.Later("#ops", "now"); err != nil || a.Waiting() != 0 {
		t.Fatalf("Later while connected: %v, %d waiting", err, a.Waiting())
	}
	if err := a.Part(ctxT(t, 10*time.Second), "#ops"); err != nil {
		t.Fatal(err)
	}
	if err := a.Later("#ops", "to a channel left"); err != nil || a.Waiting() != 0 {
		t.Fatalf("Later to a channel left: %v, %d waiting (it must not wait for a JOIN that never comes)", err, a.Waiting())
	}
	n.Stop()
	ctx := ctxT(t, 10*time.Second)
	for a.Connected() {
		if ctx.Err() != nil {
			t.Fatal("still connected after the server stopped")
		}
		time.Sleep(10 * time.Millisecond) // poll: the client sees the close
	}
	for _, s := range []string{"one", "two"} {
		if err := a.Later("#dev", s); err != nil {
			t.Fatal(err)
		}
	}
	if a.Waiting() != 2 {
		t.Fatalf("%d waiting, want 2", a.Waiting())
	}
	n.Restart()
	// posted once #dev is joined again (the flush runs on the JOIN), in
	// order; whether another client is in #dev by then is a race, so the
	// proof is the client's own record of what it posted
	ctx = ctxT(t, 15*time.Second)
	if err := a.WaitJoined(ctx, "#dev"); err != nil {
		t.Fatal(err)
	}
	var posted []string
	for len(posted) < 2 {
		if ctx.Err() != nil {
			t.Fatalf("posted %q after the rejoin, %d still waiting", posted, a.Waiting())
		}
		time.Sleep(10 * time.Millisecond) // poll: the flush follows the JOIN
		posted = posted[:0]
		for _, m := range a.Read("#dev", 0) {
			if m.Self {
				posted = append(posted, m.Text)
			}
		}
	}
	if strings.Join(posted, ",") != "one,two" || a.Waiting() != 0 {
		t.Fatalf("posted %q (%d waiting), want one,two", posted, a.Waiting())
	}
	// and the channel gets what is posted after
	_, bGot := newClient(t, n.Addr(), "lab-bob", "#dev")
	if err := a.Later("#dev", "three"); err != nil {
		t.Fatal(err)
	}
	if m := next(t, bGot); m.Sender != "lab-alice" || m.Text != "three" {
		t.Fatalf("got %+v", m)
	}
}
