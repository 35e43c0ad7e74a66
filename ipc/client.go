package ipc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/google/uuid"
)

// ErrNoDaemon is returned by Dial when no daemon listens for the nick.
var ErrNoDaemon = errors.New("ipc: no daemon is running for this nick")

// Client talks to one daemon. Calls are serialized: one request on the
// wire at a time.
type Client struct {
	mu   sync.Mutex
	conn net.Conn
	r    *bufio.Reader
}

// Dial connects to nick's daemon at SocketPath(nick).
func Dial(ctx context.Context, nick string) (*Client, error) {
	path, err := SocketPath(nick)
	if err != nil {
		return nil, err
	}
	return DialPath(ctx, path)
}

// DialPath connects to the daemon socket at path.
func DialPath(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("%w (%s): %v", ErrNoDaemon, path, err)
	}
	return &Client{conn: c, r: bufio.NewReaderSize(c, 64*1024)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Call sends req (with a new UUID as its ID when it has none) and reads
// lines until the response with that ID; the whispers sent before it are
// returned beside it. Ending ctx closes the connection.
func (c *Client) Call(ctx context.Context, req Request) (Response, []Whisper, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.ID == "" {
		req.ID = uuid.NewString()
	}
	stop := context.AfterFunc(ctx, func() { c.conn.Close() })
	defer stop()
	b, err := json.Marshal(req)
	if err != nil {
		return Response{}, nil, err
	}
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return Response{}, nil, c.ctxErr(ctx, err)
	}
	var whispers []Whisper
	for {
		line, tooLong, err := readLine(c.r, 64<<20)
		if err != nil {
			return Response{}, whispers, c.ctxErr(ctx, err)
		}
		if tooLong {
			continue
		}
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &head) != nil {
			continue
		}
		switch head.Type {
		case "whisper":
			var w Whisper
			if json.Unmarshal(line, &w) == nil {
				whispers = append(whispers, w)
			}
		case "response":
			var r Response
			// an empty id answers a line the server could not read (too
			// long): with one call on the wire at a time, it is this one
			if json.Unmarshal(line, &r) == nil && (r.ID == req.ID || r.ID == "") {
				return r, whispers, nil
			}
		}
	}
}

func (c *Client) ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("ipc: %w", err)
}
