package irctest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NgircdPath is where Debian's ngircd package installs the server.
const NgircdPath = "/usr/sbin/ngircd"

// Ngircd is a real IRC server (Debian's ngircd) on a loopback port,
// stopped with the test. Nicks may be 30 characters long (ngircd's
// default is 9), penalties (flood throttling) are off, and there is no
// PAM, ident or DNS lookup, so registration is immediate.
type Ngircd struct {
	t    testing.TB
	dir  string
	port int
	name string // the binary
	// Name is the server's name (irc.test; irc-a.test and irc-b.test
	// when linked).
	Name string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	out  *syncWriter
}

// StartNgircd starts ngircd in the foreground (-n) on a free port of
// 127.0.0.1 and stops it when the test ends. It fails the test when
// ngircd is not installed (`apt-get install ngircd`) or does not listen
// within 10 s.
func StartNgircd(t testing.TB) *Ngircd {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return startNgircd(t, "irc.test", port, "")
}

// StartLinkedNgircd starts two ngircd servers linked to each other on
// loopback, irc-a.test and irc-b.test (a connects to b; both retry the
// link every 2 s after a split), and waits up to 20 s for the link. Stop
// either and start it again (Restart) to split and rejoin the network.
func StartLinkedNgircd(t testing.TB) (a, b *Ngircd) {
	t.Helper()
	pa, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	pb, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	// MyPassword is what a server sends, PeerPassword what it expects:
	// they cross. a dials b; b only waits (Passive).
	link := func(peer string, port int, my, theirs, passive string) string {
		return fmt.Sprintf("[Server]\nName = %s\nHost = 127.0.0.1\nPort = %d\nMyPassword = %s\nPeerPassword = %s\nPassive = %s\n",
			peer, port, my, theirs, passive)
	}
	blockA := link("irc-b.test", pb, "pw-a-to-b", "pw-b-to-a", "no")
	blockB := link("irc-a.test", pa, "pw-b-to-a", "pw-a-to-b", "yes")
	b = startNgircd(t, "irc-b.test", pb, blockB)
	a = startNgircd(t, "irc-a.test", pa, blockA)
	if err := a.WaitLinked("irc-b.test", 20*time.Second); err != nil {
		t.Fatalf("%v\n--- irc-a ---\n%s\n--- irc-b ---\n%s", err, a.Output(), b.Output())
	}
	return a, b
}

// WaitLinked waits until the server lists peer among its links (LINKS,
// asked by a client of its own every 100 ms).
func (n *Ngircd) WaitLinked(peer string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		ok, err := n.links(peer)
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not linked to %s after %s (last: %v)", n.Name, peer, d, err)
		}
		time.Sleep(100 * time.Millisecond) // poll: the link retries every 2 s
	}
}

// links registers a probe client, asks LINKS and reports whether peer is
// in the answer.
func (n *Ngircd) links(peer string) (bool, error) {
	c, err := net.DialTimeout("tcp", n.Addr(), 2*time.Second)
	if err != nil {
		return false, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	nick := fmt.Sprintf("probe%d", time.Now().UnixNano()%1000000)
	fmt.Fprintf(c, "NICK %s\r\nUSER p 0 * :p\r\n", nick)
	r := bufio.NewReader(c)
	asked := false
	found := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return false, err
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch {
		case f[0] == "PING":
			fmt.Fprintf(c, "PONG %s\r\n", strings.Join(f[1:], " "))
		case (f[1] == "376" || f[1] == "422") && !asked:
			asked = true
			fmt.Fprintf(c, "LINKS\r\n")
		case f[1] == "364" && len(f) > 3 && f[3] == peer:
			found = true
		case f[1] == "365":
			fmt.Fprintf(c, "QUIT\r\n")
			return found, nil
		}
	}
}

func startNgircd(t testing.TB, name string, port int, extra string) *Ngircd {
	t.Helper()
	bin := NgircdPath
	if _, err := os.Stat(bin); err != nil {
		p, lerr := exec.LookPath("ngircd")
		if lerr != nil {
			t.Fatalf("ngircd is not installed (Debian package ngircd): %v", err)
		}
		bin = p
	}
	dir := t.TempDir()
	// ngircd drops to nobody when started as root: it reads its config
	// first, so the file may stay private; nothing is written there.
	conf := fmt.Sprintf(`[Global]
Name = %s
Info = harness test server
AdminInfo1 = test
AdminInfo2 = test
AdminEMail = test@invalid
Listen = 127.0.0.1
Ports = %d
MotdPhrase = test
[Limits]
MaxNickLength = 30
MaxPenaltyTime = 0
MaxConnectionsIP = 0
MaxJoins = 0
PingTimeout = 120
PongTimeout = 20
ConnectRetry = 2
[Options]
PAM = no
Ident = no
DNS = no
`, name, port) + extra
	path := filepath.Join(dir, "ngircd.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	n := &Ngircd{t: t, dir: dir, port: port, name: bin, Name: name}
	t.Cleanup(n.Stop)
	if err := n.start(path); err != nil {
		t.Fatal(err)
	}
	return n
}

// Addr is the server's host:port.
func (n *Ngircd) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }

func (n *Ngircd) start(conf string) error {
	cmd := exec.Command(n.name, "-n", "-f", conf)
	out := &syncWriter{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start ngircd: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	n.mu.Lock()
	n.cmd, n.done, n.out = cmd, done, out
	n.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", n.Addr(), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("ngircd exited: %s", out.String())
		case <-time.After(20 * time.Millisecond): // poll for the listener
		}
		if time.Now().After(deadline) {
			n.Stop()
			return errors.New("ngircd did not listen within 10 s")
		}
	}
}

// Stop ends the server (SIGTERM, then SIGKILL after 5 s) and waits for
// it. Safe to call more than once.
func (n *Ngircd) Stop() {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// Restart stops the server and starts it again on the same port (every
// client is disconnected; channels are gone).
func (n *Ngircd) Restart() {
	n.t.Helper()
	n.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// the port may linger a moment after the old process is gone
	for {
		err := n.start(filepath.Join(n.dir, "ngircd.conf"))
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			n.t.Fatalf("restart ngircd: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Output is what ngircd printed so far.
func (n *Ngircd) Output() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.out == nil {
		return ""
	}
	return n.out.String()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
