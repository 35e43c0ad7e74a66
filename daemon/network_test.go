package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/irc"
	"github.com/chirality/harness/irc/irctest"
)

// These tests run agents on a network of two linked ngircd servers
// (irctest.StartLinkedNgircd; issue 22.2) and the seed's agents.yaml
// (22.1). The agents are native (anthropic) agents on fake Messages
// APIs: their answers are relayed by the daemon, so what crosses the
// network is the daemon's own traffic.

// netAgent starts one agent of cfgYAML on the core with api.
func netAgent(t *testing.T, cfgYAML, nick string, api *claudetest.FakeAPI, home string) (*Daemon, error) {
	t.Helper()
	cfg, err := ParseConfig([]byte(cfgYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	sel, err := cfg.Select([]string{nick})
	if err != nil {
		t.Fatal(err)
	}
	logger := zerolog.New(zerolog.ConsoleWriter{Out: testLog{t}, NoColor: true}).Level(zerolog.InfoLevel)
	d, err := New(Options{Config: cfg, Agent: sel[0], MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Logger: &logger,
		Core: CoreOptions{HarnessBinary: buildHarness(t), StateDir: t.TempDir(), Env: claudetest.BaseEnv(home),
			ChildEnv: api.Env(), TurnTimeout: 60 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctxT(t, 60*time.Second)); err != nil {
		return nil, err
	}
	t.Cleanup(func() { d.Stop(context.Background()) })
	return d, nil
}

// testLog writes a daemon's log lines to the test's log (shown when it
// fails).
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// answerer answers every mention with "<sender>: <me> got <text>",
// after a while when the text says "slow"; started gets each prompt.
func answerer(me string, started chan<- string) func(*claudetest.Request) claudetest.Reply {
	return func(r *claudetest.Request) claudetest.Reply {
		_, sender, text, ok := mentionOf(r)
		if !ok {
			return claudetest.TextReply("OK")
		}
		if started != nil {
			select {
			case started <- text:
			default:
			}
		}
		reply := claudetest.TextReply(sender + ": " + me + " got " + text)
		if strings.Contains(text, "slow") {
			reply.Delay = 3 * time.Second
		}
		return reply
	}
}

// waitSee waits for a message from sender matching re on got.
func waitSee(t *testing.T, got <-chan irc.Message, sender, re string, d time.Duration) irc.Message {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(d)
	for {
		select {
		case m := <-got:
			if m.Sender == sender && rx.MatchString(m.Text) {
				return m
			}
		case <-deadline:
			t.Fatalf("never saw %s say /%s/ within %s", sender, re, d)
		}
	}
}

// waitWho polls WHO channel from c until every nick is there.
func waitWho(t *testing.T, c *irc.Client, channel string, nicks ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		who, err := c.Who(ctxT(t, 5*time.Second), channel)
		have := map[string]bool{}
		for _, w := range who {
			have[w.Nick] = true
		}
		missing := ""
		for _, n := range nicks {
			if !have[n] {
				missing = n
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never saw %s in %s (WHO: %+v, %v)", c.Nick(), missing, channel, who, err)
		}
		time.Sleep(50 * time.Millisecond) // poll: JOINs cross the link within a second
	}
}

// skillCLI runs `harness channel ARGS…` as the agent nick would.
func skillCLI(t *testing.T, nick string, args ...string) string {
	t.Helper()
	cmd := exec.Command(buildHarness(t), append([]string{"channel"}, args...)...)
	cmd.Env = append(os.Environ(), "HARNESS_NICK="+nick)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("harness channel %s as %s: %v\n%s", strings.Join(args, " "), nick, err, out)
	}
	return string(out)
}

func TestNetworkTwoLinkedServers(t *testing.T) {
	buildHarness(t)
	run := shortTemp(t)
	t.Setenv("XDG_RUNTIME_DIR", run)
	srvA, srvB := irctest.StartLinkedNgircd(t)
	hostA, portA, _ := strings.Cut(srvA.Addr(), ":")
	hostB, portB, _ := strings.Cut(srvB.Addr(), ":")
	home, dir := t.TempDir(), t.TempDir()
	// far lives on server A, with B as its second address (through a
	// gate the test opens when it wants far back); near on B
	gate := newGate(t, srvB.Addr())
	cfgA := "server: {name: net, host: " + hostA + ", port: " + portA + ", hosts: ['" + gate.addr + "']}\nagents:\n" +
		"  - {nick: net-far, agent: anthropic, directory: " + dir + "/far, channels: ['#dev']}\n" +
		"  - {nick: net-near, agent: anthropic, directory: " + dir + "/twin, channels: ['#dev']}\n"
	cfgB := "server: {name: net, host: " + hostB + ", port: " + portB + "}\nagents:\n" +
		"  - {nick: net-near, agent: anthropic, directory: " + dir + "/near, channels: ['#dev']}\n"
	apiFar, apiNear := newAPI(t), newAPI(t)
	farStarted := make(chan string, 10)
	apiFar.SetResponder(answerer("net-far", farStarted))
	apiNear.SetResponder(answerer("net-near", nil))
	far, err := netAgent(t, cfgA, "net-far", apiFar, home)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := netAgent(t, cfgB, "net-near", apiNear, home); err != nil {
		t.Fatal(err)
	}
	bob, bobGot := human(t, srvB.Addr(), "bob", "#dev")
	waitWho(t, bob, "#dev", "bob", "net-far", "net-near")

	// a person on B mentions the agent on A: the prompt and the answer
	// cross the link
	if err := bob.Send("#dev", "@net-far hello across"); err != nil {
		t.Fatal(err)
	}
	waitSee(t, bobGot, "net-far", `^bob: net-far got @net-far hello across$`, 60*time.Second)
	if want := "[IRC @mention in #dev] <bob> @net-far hello across"; !promptSeen(apiFar, want) {
		t.Fatalf("the agent on A never got the prompt %q", want)
	}
	// the skill CLI of the agent on A sees both servers' members
	if out := skillCLI(t, "net-far", "who", "#dev"); !strings.Contains(out, "bob") || !strings.Contains(out, "net-near") || !strings.Contains(out, "net-far") {
		t.Fatalf("who #dev from A: %s", out)
	}
	if out := skillCLI(t, "net-far", "channels"); !strings.Contains(out, "#dev") {
		t.Fatalf("channels: %s", out)
	}
	if out := skillCLI(t, "net-far", "read", "#dev"); !strings.Contains(out, "@net-far hello across") {
		t.Fatalf("read #dev from A: %s", out)
	}

	// the same nick on the other server: the later daemon fails with a
	// clear error, and nobody answers as net-near_0 (its own socket
	// directory: it is another machine's daemon)
	t.Setenv("XDG_RUNTIME_DIR", shortTemp(t))
	_, err = netAgent(t, cfgA, "net-near", newAPI(t), home)
	var nickErr *irc.NickError
	if !errors.As(err, &nickErr) || !strings.Contains(err.Error(), `"net-near" is already in use on the IRC network`) {
		t.Fatalf("a second net-near on A: %v, want a NickError saying the nick is in use", err)
	}
	t.Setenv("XDG_RUNTIME_DIR", run)
	for _, w := range mustWho(t, bob, "#dev") {
		if strings.HasPrefix(w.Nick, "net-near") && w.Nick != "net-near" {
			t.Fatalf("a renamed agent is in the channel: %+v", w)
		}
	}

	// the split: A stops while far works on a mention; near, on B, keeps
	// working; far's turn ends while it has no server, and its answer
	// waits; far reconnects to B (its second address) with back-off,
	// rejoins #dev and posts it
	for len(farStarted) > 0 {
		<-farStarted
	}
	if err := bob.Send("#dev", "@net-far slow one"); err != nil {
		t.Fatal(err)
	}
	for started := ""; !strings.Contains(started, "slow one"); {
		select {
		case started = <-farStarted:
		case <-time.After(60 * time.Second):
			t.Fatal("far's slow turn never reached its model")
		}
	}
	srvA.Stop()
	if err := bob.Send("#dev", "@net-near during the split"); err != nil {
		t.Fatal(err)
	}
	waitSee(t, bobGot, "net-near", `^bob: net-near got @net-near during the split$`, 60*time.Second)
	deadline := time.Now().Add(60 * time.Second)
	for far.irc.Waiting() != 1 || far.irc.Connected() {
		if time.Now().After(deadline) {
			t.Fatalf("far's answer is not waiting for a server (waiting %d, connected %v)", far.irc.Waiting(), far.irc.Connected())
		}
		time.Sleep(20 * time.Millisecond) // poll: the turn ends 3 s after A stopped
	}
	if gate.refused() == 0 {
		t.Fatal("far never tried its second address")
	}
	gate.open()
	waitSee(t, bobGot, "net-far", `^bob: net-far got @net-far slow one$`, 60*time.Second)
	if got := far.irc.Addr(); got != gate.addr {
		t.Fatalf("far is on %s, want its second address %s", got, gate.addr)
	}
	if st := far.Status(); !st.Connected || strings.Join(st.Channels, " ") != "#dev" || st.Server != gate.addr ||
		!strings.Contains(st.Line(), "in #dev on "+gate.addr) {
		t.Fatalf("far after the split: %+v (%s)", st, st.Line())
	}
	if err := bob.Send("#dev", "@net-far still there?"); err != nil {
		t.Fatal(err)
	}
	waitSee(t, bobGot, "net-far", `^bob: net-far got @net-far still there\?$`, 60*time.Second)

	// A comes back and relinks: a person on A reaches near on B again
	srvA.Restart()
	if err := srvA.WaitLinked("irc-b.test", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	alice, aliceGot := human(t, srvA.Addr(), "alice", "#dev")
	waitWho(t, alice, "#dev", "alice", "bob", "net-near", "net-far")
	if err := alice.Send("#dev", "@net-near back from A"); err != nil {
		t.Fatal(err)
	}
	waitSee(t, aliceGot, "net-near", `^alice: net-near got @net-near back from A$`, 60*time.Second)
}

// gate forwards connections to a server once opened; before, it closes
// each at once (a server that is down, for the client).
type gate struct {
	addr   string
	ln     net.Listener
	mu     sync.Mutex
	isOpen bool
	closed int
}

func newGate(t *testing.T, to string) *gate {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{addr: ln.Addr().String(), ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.mu.Lock()
			open := g.isOpen
			if !open {
				g.closed++
			}
			g.mu.Unlock()
			if !open {
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	return g
}

func (g *gate) open()        { g.mu.Lock(); g.isOpen = true; g.mu.Unlock() }
func (g *gate) refused() int { g.mu.Lock(); defer g.mu.Unlock(); return g.closed }

func mustWho(t *testing.T, c *irc.Client, channel string) []irc.WhoEntry {
	t.Helper()
	who, err := c.Who(ctxT(t, 10*time.Second), channel)
	if err != nil {
		t.Fatal(err)
	}
	return who
}

// TestSeedAgentAgainstTheDemoModel: the seed's agents.yaml as written
// (only the server's address is the test's); spark-culture, a Claude
// Code agent, is started against the demo model and answers a mention
// as spark-culture, its markdown relayed as plain text.
func TestSeedAgentAgainstTheDemoModel(t *testing.T) {
	e := newE2E(t)
	cfg, err := LoadConfig("testdata/seed-agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.Host = e.host
	if cfg.Server.Port, err = strconv.Atoi(e.port); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sel, err := cfg.Select([]string{"spark-culture"})
	if err != nil {
		t.Fatal(err)
	}
	a := sel[0]
	a.Directory = filepath.Join(dir, "culture") // a fresh folder: the daemon makes it
	if _, err := InstallSkill(cfg, a); err != nil {
		t.Fatal(err)
	}
	api := newAPI(t)
	api.SetResponder(claudetest.DemoResponder(claudetest.DemoOptions{ChunkDelay: time.Millisecond}))
	d, err := New(Options{Config: cfg, Agent: a, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		Core: CoreOptions{HarnessBinary: e.bin, StateDir: t.TempDir(), ClaudeBinary: claudetest.FindCLI(t),
			Env: claudetest.BaseEnv(e.home), ChildEnv: api.Env(), TurnTimeout: 90 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctxT(t, 60*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(context.Background()) })
	if d.IRCNick() != "spark-culture" {
		t.Fatalf("IRC nick %q, want spark-culture as written", d.IRCNick())
	}
	joinCtx := ctxT(t, 10*time.Second)
	if err := e.bob.Join(joinCtx, "#general"); err != nil {
		t.Fatal(err)
	}
	waitWho(t, e.bob, "#general", "bob", "spark-culture")
	if err := e.bob.Send("#general", "@spark-culture hello there"); err != nil {
		t.Fatal(err)
	}
	// the demo's answer ends with its summary; every relayed line is plain
	var lines []string
	deadline := time.After(120 * time.Second)
	done := regexp.MustCompile(`entries|listing failed`)
	for !done.MatchString(strings.Join(lines, "\n")) {
		select {
		case m := <-e.bobGot:
			if m.Sender == "spark-culture" && m.Channel == "#general" {
				lines = append(lines, m.Text)
			}
		case <-deadline:
			t.Fatalf("spark-culture never relayed the demo's summary; it said:\n%s", strings.Join(lines, "\n"))
		}
	}
	for _, l := range lines {
		if strings.Contains(l, "**") || strings.HasPrefix(l, "#") || strings.Contains(l, "```") {
			t.Errorf("markdown reached IRC: %q", l)
		}
	}
	if want := "[IRC @mention in #general] <bob> @spark-culture hello there"; !promptSeen(api, want) {
		t.Fatalf("the agent never got the prompt %q", want)
	}
}
