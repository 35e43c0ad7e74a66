// Package irctest runs IRC servers for tests: Fake, an in-process
// scripted server for fault cases (dropped connections, refused
// connections, slow replies), and Ngircd, Debian's ngircd started on a
// free loopback port with a temporary configuration.
package irctest

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// Fake is a small IRC server on 127.0.0.1: registration (NICK, USER →
// 001 and 422), PING, JOIN, PART, PRIVMSG and NOTICE relayed to a
// channel's other members or to a nick, TOPIC, WHO and QUIT. It records
// every line it receives. Faults: Refuse, DropAll, SetDelay, SetNickLen.
type Fake struct {
	ln net.Listener

	mu      sync.Mutex
	clients map[*fakeClient]bool
	chans   map[string]map[*fakeClient]bool
	topics  map[string]string
	lines   []string
	refuse  bool
	delay   time.Duration
	nickLen int
	trunc   bool
	changed chan struct{}
	wg      sync.WaitGroup
	closed  bool
}

type fakeClient struct {
	conn net.Conn
	nick string
	wmu  sync.Mutex
}

// NewFake starts a fake server on 127.0.0.1:0. Close stops it.
func NewFake() (*Fake, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &Fake{ln: ln, clients: map[*fakeClient]bool{}, chans: map[string]map[*fakeClient]bool{},
		topics: map[string]string{}, changed: make(chan struct{})}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// SetNickLen makes the server advertise NICKLEN=n (RPL_ISUPPORT, 005,
// after the welcome) and, for a longer nick, either refuse it before the
// welcome as ngircd does (432 "Nickname too long") or, with truncate,
// register it cut to n characters as some servers do. 0 = no limit, no
// 005.
func (f *Fake) SetNickLen(n int, truncate bool) {
	f.mu.Lock()
	f.nickLen, f.trunc = n, truncate
	f.mu.Unlock()
}

// Addr is the server's host:port.
func (f *Fake) Addr() string { return f.ln.Addr().String() }

// Refuse makes the server close every new connection at once (true) or
// serve them again (false).
func (f *Fake) Refuse(on bool) {
	f.mu.Lock()
	f.refuse = on
	f.mu.Unlock()
}

// SetDelay makes the server wait d before each line it writes.
func (f *Fake) SetDelay(d time.Duration) {
	f.mu.Lock()
	f.delay = d
	f.mu.Unlock()
}

// DropAll closes every client connection (as a crashed server would).
func (f *Fake) DropAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.clients {
		c.conn.Close()
	}
}

// Lines returns the lines received so far from every client.
func (f *Fake) Lines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.lines)
}

// WaitLine waits up to d for a received line with the given prefix and
// returns it.
func (f *Fake) WaitLine(prefix string, d time.Duration) (string, bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		for _, l := range f.lines {
			if strings.HasPrefix(l, prefix) {
				f.mu.Unlock()
				return l, true
			}
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return "", false
		}
	}
}

// Members returns the nicks in channel.
func (f *Fake) Members(channel string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for c := range f.chans[strings.ToLower(channel)] {
		out = append(out, c.nick)
	}
	slices.Sort(out)
	return out
}

// Close stops the server and closes every connection.
func (f *Fake) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	err := f.ln.Close()
	f.DropAll()
	f.wg.Wait()
	return err
}

func (f *Fake) accept() {
	defer f.wg.Done()
	for {
		conn, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		if f.refuse || f.closed {
			f.mu.Unlock()
			conn.Close()
			continue
		}
		c := &fakeClient{conn: conn}
		f.clients[c] = true
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(c)
	}
}

func (f *Fake) write(c *fakeClient, format string, args ...any) {
	f.mu.Lock()
	d := f.delay
	f.mu.Unlock()
	if d > 0 {
		time.Sleep(d) // the fault being simulated: a slow server
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c.conn, format+"\r\n", args...)
}

func (f *Fake) serve(c *fakeClient) {
	defer f.wg.Done()
	defer func() {
		c.conn.Close()
		f.mu.Lock()
		delete(f.clients, c)
		for _, m := range f.chans {
			delete(m, c)
		}
		f.notifyLocked()
		f.mu.Unlock()
	}()
	r := bufio.NewReaderSize(c.conn, 4096)
	user := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		f.mu.Lock()
		f.lines = append(f.lines, line)
		f.notifyLocked()
		f.mu.Unlock()
		cmd, params := parse(line)
		switch cmd {
		case "NICK":
			if len(params) > 0 {
				f.mu.Lock()
				n, trunc := f.nickLen, f.trunc
				f.mu.Unlock()
				switch nick := params[0]; {
				case n > 0 && len(nick) > n && trunc:
					c.nick = nick[:n]
				case n > 0 && len(nick) > n:
					f.write(c, ":fake 432 * %s :Nickname too long, max. %d characters", nick, n)
				default:
					c.nick = nick
				}
			}
		case "USER":
			user = true
		case "PING":
			f.write(c, ":fake PONG fake :%s", strings.Join(params, " "))
		case "JOIN":
			if len(params) == 0 {
				continue
			}
			ch := strings.ToLower(params[0])
			f.mu.Lock()
			if f.chans[ch] == nil {
				f.chans[ch] = map[*fakeClient]bool{}
			}
			f.chans[ch][c] = true
			members := f.members(ch)
			f.notifyLocked()
			f.mu.Unlock()
			for _, m := range members {
				f.write(m, ":%s!u@h JOIN %s", c.nick, params[0])
			}
		case "PART":
			if len(params) == 0 {
				continue
			}
			ch := strings.ToLower(params[0])
			f.mu.Lock()
			members := f.members(ch)
			delete(f.chans[ch], c)
			f.notifyLocked()
			f.mu.Unlock()
			for _, m := range members {
				f.write(m, ":%s!u@h PART %s", c.nick, params[0])
			}
		case "PRIVMSG", "NOTICE":
			if len(params) < 2 {
				continue
			}
			f.mu.Lock()
			var to []*fakeClient
			if strings.HasPrefix(params[0], "#") {
				to = f.members(strings.ToLower(params[0]))
			} else {
				for o := range f.clients {
					if strings.EqualFold(o.nick, params[0]) {
						to = append(to, o)
					}
				}
			}
			f.mu.Unlock()
			for _, m := range to {
				if m != c {
					f.write(m, ":%s!u@h %s %s :%s", c.nick, cmd, params[0], params[1])
				}
			}
		case "TOPIC":
			if len(params) == 0 {
				continue
			}
			ch := strings.ToLower(params[0])
			f.mu.Lock()
			if len(params) > 1 {
				f.topics[ch] = params[1]
				members := f.members(ch)
				f.mu.Unlock()
				for _, m := range members {
					f.write(m, ":%s!u@h TOPIC %s :%s", c.nick, params[0], params[1])
				}
				continue
			}
			t, ok := f.topics[ch]
			f.mu.Unlock()
			if ok {
				f.write(c, ":fake 332 %s %s :%s", c.nick, params[0], t)
			} else {
				f.write(c, ":fake 331 %s %s :No topic is set", c.nick, params[0])
			}
		case "WHO":
			if len(params) == 0 {
				continue
			}
			f.mu.Lock()
			members := f.members(strings.ToLower(params[0]))
			f.mu.Unlock()
			for _, m := range members {
				f.write(c, ":fake 352 %s %s u h fake %s H :0 %s", c.nick, params[0], m.nick, m.nick)
			}
			f.write(c, ":fake 315 %s %s :End of WHO list", c.nick, params[0])
		case "QUIT":
			f.write(c, "ERROR :Closing link")
			return
		}
		if (cmd == "NICK" || cmd == "USER") && user && c.nick != "" {
			f.write(c, ":fake 001 %s :Welcome", c.nick)
			f.mu.Lock()
			n := f.nickLen
			f.mu.Unlock()
			if n > 0 {
				f.write(c, ":fake 005 %s NICKLEN=%d CHANTYPES=# :are supported by this server", c.nick, n)
			}
			f.write(c, ":fake 422 %s :MOTD File is missing", c.nick)
			user = false
		}
	}
}

// members of ch, f.mu held.
func (f *Fake) members(ch string) []*fakeClient {
	var out []*fakeClient
	for m := range f.chans[ch] {
		out = append(out, m)
	}
	return out
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// parse splits an IRC line (no tags expected) into command and params.
func parse(line string) (string, []string) {
	if strings.HasPrefix(line, ":") {
		if _, rest, ok := strings.Cut(line, " "); ok {
			line = rest
		}
	}
	var params []string
	trailing := ""
	hasTrailing := false
	if i := strings.Index(line, " :"); i >= 0 {
		trailing, hasTrailing = line[i+2:], true
		line = line[:i]
	}
	f := strings.Fields(line)
	if len(f) == 0 {
		return "", nil
	}
	params = f[1:]
	if hasTrailing {
		params = append(params, trailing)
	}
	return strings.ToUpper(f[0]), params
}
