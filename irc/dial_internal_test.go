package irc

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// dial honours the context the connection library gives it: a cancelled
// one ends the back-off wait and the dial itself (it was ignored: only
// Close ended them).
func TestDialHonoursItsContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := New(Config{Addr: ln.Addr().String(), Nick: "tester", MinBackoff: time.Hour, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer close(c.stop)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// a first dial (no back-off) with a cancelled context
	if conn, err := c.dial(ctx, "tcp", c.cfg.Addr); !errors.Is(err, context.Canceled) {
		if conn != nil {
			conn.Close()
		}
		t.Fatalf("first dial: %v, want context.Canceled", err)
	}
	// a second one waits out an hour of back-off unless ctx ends it
	if _, err := c.dial(ctx, "tcp", c.cfg.Addr); !errors.Is(err, context.Canceled) {
		t.Fatalf("dial in back-off: %v, want context.Canceled", err)
	}
}
