package notify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/irc"
	"github.com/chirality/harness/irc/irctest"
)

// listener is a person in an IRC channel: the lines others post there.
type listener struct {
	mu    sync.Mutex
	lines []string
}

func (l *listener) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func (l *listener) wait(t *testing.T, prefix string) string {
	t.Helper()
	var found string
	waitFor(t, "a line "+prefix, func() bool {
		for _, s := range l.got() {
			if strings.HasPrefix(s, prefix) {
				found = s
				return true
			}
		}
		return false
	})
	return found
}

// listen joins channel on the server at addr as nick "person".
func listen(t *testing.T, addr, channel string) *listener {
	t.Helper()
	c, err := irc.New(irc.Config{Addr: addr, Nick: "person", Channels: []string{channel}})
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{}
	c.OnMessage(func(m irc.Message) {
		if strings.EqualFold(m.Channel, channel) && !m.Self {
			l.mu.Lock()
			l.lines = append(l.lines, m.Text)
			l.mu.Unlock()
		}
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitJoined(ctx, channel); err != nil {
		t.Fatal(err)
	}
	return l
}

func fakeIRC(t *testing.T) *irctest.Fake {
	t.Helper()
	f, err := irctest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// A turn that asks a person, then ends: the IRC channel gets the
// approval waiting, then the turn's end, each as one line with the
// session's title and link, posted by the configured nick; a secret in
// the title reaches no one.
func TestIRCApprovalAndTurnEnd(t *testing.T) {
	const key = "sk-ant-api03-ircnotifyNOTAREALKEYxxxxxxxxxxxxxxxxxxxxxxxxxx"
	secrets.Register(key)
	h, api, root := newHarness(t, true)
	f := fakeIRC(t)
	person := listen(t, f.Addr(), "#alerts")
	n, err := Start(h, Config{IRC: []string{"irc://hbot@" + f.Addr() + "/#alerts"}, Link: "http://127.0.0.1:8787/"})
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, n)
	s, tr := startAskingTurn(t, h, api, root, "make a marker with "+key)
	ask := person.wait(t, "harness: approval:requested · Approval needed: Bash — make a marker with ")
	pending := h.PendingApprovals(s.ID)
	if len(pending) != 1 {
		t.Fatalf("pending approvals %v when the line arrived, want the one", pending)
	}
	if err := h.Approve(s.ID, pending[0].RequestID, harness.ApprovalAnswer{Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	end := person.wait(t, "harness: turn:completed · Turn completed — ")
	for _, line := range []string{ask, end} {
		if !strings.HasSuffix(line, " · http://127.0.0.1:8787/#s="+s.ID) || strings.Contains(line, key) {
			t.Errorf("line %q: want the session's link at the end and no secret", line)
		}
	}
	if l, ok := f.WaitLine("PRIVMSG #alerts :harness: turn:completed", time.Second); !ok {
		t.Errorf("the server saw no PRIVMSG of the turn's end (lines %q)", f.Lines())
	} else if !strings.Contains(strings.Join(f.Lines(), "\n"), "NICK hbot") {
		t.Errorf("posted as another nick than the URL's: %q", l)
	}
}

// ircs:// connects with TLS (here through a TLS front of the test
// server, trusted through Config.IRCTLS) and posts there.
func TestIRCOverTLS(t *testing.T) {
	f := fakeIRC(t)
	front := httptest.NewUnstartedServer(http.NotFoundHandler())
	front.StartTLS() // only for its certificate (127.0.0.1) and TLS config
	defer front.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", front.TLS)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() { // each TLS connection piped to the plain server
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", f.Addr())
			if err != nil {
				c.Close()
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(b, c); b.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(c, b); c.Close() }()
		}
	}()
	roots := x509.NewCertPool()
	roots.AddCert(front.Certificate())
	person := listen(t, f.Addr(), "#ops")
	n, err := New(Config{IRC: []string{"ircs://" + ln.Addr().String() + "/%23ops"}, IRCNick: "tlsbot",
		IRCTLS: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	n.Observe(event.Event{Type: event.TypeApprovalRequested, SessionID: "s1", Approval: &event.ApprovalRequested{ToolName: "Write"}})
	person.wait(t, "harness: approval:requested · Approval needed: Write")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n.Close(ctx)
	if !strings.Contains(strings.Join(f.Lines(), "\n"), "NICK tlsbot") {
		t.Errorf("the TLS client did not register as tlsbot: %q", f.Lines())
	}
}

// An IRC server that is down never slows the notifier: notifications
// wait in the sink's bounded queue and the client's outbox, and Close
// ends at its deadline.
func TestIRCDeadServerIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there
	n, err := New(Config{IRC: []string{"irc://" + addr + "/#x"}, Queue: 3})
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	for range 500 {
		n.Observe(event.Event{Type: event.TypePlanReady, SessionID: "s1"})
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("500 notifications to a dead server took %s", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	n.Close(ctx)
}

func TestIRCURLs(t *testing.T) {
	for _, c := range []struct{ url, addr, channel, nick string }{
		{"irc://irc.example/#dev", "irc.example:6667", "#dev", DefaultIRCNick},
		{"ircs://bot@irc.example/#dev", "irc.example:6697", "#dev", "bot"},
		{"ircs://irc.example:7000/%23ops", "irc.example:7000", "#ops", DefaultIRCNick},
		{"irc://[::1]:6668/ops", "[::1]:6668", "#ops", DefaultIRCNick},
	} {
		got, err := parseIRC(c.url, "")
		if err != nil || got.addr != c.addr || got.channel != c.channel || got.nick != c.nick || got.tls != strings.HasPrefix(c.url, "ircs") {
			t.Errorf("%s: %+v, %v", c.url, got, err)
		}
	}
	for _, bad := range []string{"http://irc.example/#dev", "irc:///#dev", "irc://irc.example/", "ircs://bot:pw@irc.example/#dev", "irc://bad nick@x/#y"} {
		if n, err := New(Config{IRC: []string{bad}}); err == nil {
			n.Close(context.Background())
			t.Errorf("%s accepted", bad)
		}
	}
}

// The configuration file's irc and irc_nick.
func TestIRCInConfigFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "notify.yaml")
	os.WriteFile(p, []byte("notify:\n  irc: [ircs://irc.example/#dev]\n  irc_nick: filebot\n"), 0o600)
	cfg := Config{IRC: []string{"irc://other.example/#ops"}}
	if err := LoadFile(p, &cfg); err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.IRC, " ") != "ircs://irc.example/#dev irc://other.example/#ops" || cfg.IRCNick != "filebot" || !cfg.Enabled() {
		t.Errorf("config %+v", cfg)
	}
}

// parseIRC never panics; what it accepts has a host:port, a valid
// channel and nick, and came without a password.
func FuzzParseIRC(f *testing.F) {
	for _, s := range []string{"irc://irc.example/#dev", "ircs://bot@h:7000/%23ops", "irc://[::1]/x", "ircs://u:p@h/#c", "irc://h/#", "irc://h/&local"} {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, raw, nick string) {
		got, err := parseIRC(raw, nick)
		if err != nil {
			return
		}
		if _, _, err := net.SplitHostPort(got.addr); err != nil {
			t.Errorf("%q: addr %q: %v", raw, got.addr, err)
		}
		if irc.ValidateChannel(got.channel) != nil || irc.ValidateNick(got.nick, 0) != nil {
			t.Errorf("%q: accepted channel %q nick %q", raw, got.channel, got.nick)
		}
		if strings.Contains(raw, ":") && strings.Contains(raw, "@") {
			if u, err := url.Parse(raw); err == nil && u.User != nil {
				if _, set := u.User.Password(); set {
					t.Errorf("%q: a password was accepted", raw)
				}
			}
		}
	})
}
