package irc_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/irc"
	"github.com/chirality/harness/irc/irctest"
)

// A nick longer than the server allows fails registration with a
// *NickError, whether the server refuses it (432, as ngircd does) or
// would truncate it (NICKLEN in RPL_ISUPPORT); the client stops instead
// of retrying. A nick within the limit registers as before.
func TestNickTooLong(t *testing.T) {
	for _, tc := range []struct {
		name     string
		truncate bool
		want     string
	}{
		{"refused", false, `irc: the server refused the nick "lab-alice-long" (432): Nickname too long, max. 9 characters`},
		{"truncated", true, `irc: the nick "lab-alice-long" has 14 characters but the server allows 9 (its NICKLEN): use a shorter nick or server name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := irctest.NewFake()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			f.SetNickLen(9, tc.truncate)
			c, err := irc.New(irc.Config{Addr: f.Addr(), Nick: "lab-alice-long", Channels: []string{"#dev"}, Timeout: 3 * time.Second,
				MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			err = c.WaitRegistered(ctxT(t, 10*time.Second), 1)
			var ne *irc.NickError
			if !errors.As(err, &ne) || ne.Nick != "lab-alice-long" || err.Error() != tc.want {
				t.Fatalf("err = %v, want %s", err, tc.want)
			}
			if !errors.Is(c.Err(), err) {
				t.Fatalf("Err() = %v", c.Err())
			}
			if got := f.Members("#dev"); len(got) != 0 {
				t.Fatalf("joined with the wrong nick: %v", got)
			}
			// it does not retry: one NICK line only
			n := 0
			for _, l := range f.Lines() {
				if strings.HasPrefix(l, "NICK ") {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%d NICK lines: %v", n, f.Lines())
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("within", func(t *testing.T) {
		f, err := irctest.NewFake()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.SetNickLen(9, false)
		c, _ := newClient(t, f.Addr(), "lab-alice", "#dev")
		if c.Err() != nil || c.Nick() != "lab-alice" {
			t.Fatalf("%v %q", c.Err(), c.Nick())
		}
	})
}
