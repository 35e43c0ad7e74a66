package ipc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// ErrAlreadyRunning is returned by Listen when a live daemon answers on
// the socket.
var ErrAlreadyRunning = errors.New("ipc: a daemon already listens on this socket")

// Handler answers one request; data is sent as the response's data, an
// error as its error. ctx ends when the server closes or the client goes
// away (it hangs up, or closes its writing side, while the request runs).
// Handlers run on the connection's goroutine, one request at a time per
// connection, many connections at once.
type Handler func(ctx context.Context, req Request) (data any, err error)

// Then is handler data with a function to run once the response is
// written (a shutdown answers before it closes the server). After runs
// on the connection's goroutine: it must not wait for the server to
// close.
type Then struct {
	Data  any
	After func()
}

// ServerConfig configures Listen.
type ServerConfig struct {
	// Path is the socket file (see SocketPath).
	Path    string
	Handler Handler
	// Whispers, when set, is called before each response to a skill
	// command (SkillCommands) and returns the whispers to send first.
	Whispers func() []Whisper
	// Unsent, when set, gets back the whispers that could not be written
	// (the client went away first), so they wait for the next call.
	Unsent func([]Whisper)
	// MaxLine bounds a request line (0 = MaxLine).
	MaxLine int
	Logger  *zerolog.Logger
}

// Server serves JSON Lines requests on a Unix socket. A client cannot
// kill it: bad JSON, unknown commands, oversized lines and handler panics
// all become error responses.
type Server struct {
	cfg    ServerConfig
	ln     net.Listener
	log    zerolog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
	once  sync.Once
}

// Listen creates the socket (mode 0600; a stale socket file with no
// daemon behind it is replaced) and serves it until Close.
func Listen(cfg ServerConfig) (*Server, error) {
	if cfg.Handler == nil || cfg.Path == "" {
		return nil, errors.New("ipc: ServerConfig needs Path and Handler")
	}
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = MaxLine
	}
	if _, err := os.Lstat(cfg.Path); err == nil {
		if err := CheckNotRunning(cfg.Path); err != nil {
			return nil, err
		}
		if err := os.Remove(cfg.Path); err != nil {
			return nil, fmt.Errorf("ipc: remove stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("ipc: %w", err)
	}
	if err := os.Chmod(cfg.Path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("ipc: %w", err)
	}
	s := &Server{cfg: cfg, ln: ln, conns: map[net.Conn]bool{}, log: zerolog.Nop()}
	if cfg.Logger != nil {
		s.log = cfg.Logger.With().Str("component", "ipc").Logger()
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// CheckNotRunning returns an error wrapping ErrAlreadyRunning when a
// daemon answers on the socket at path; a missing or stale socket file is
// nil. A daemon calls it before anything else it starts (Listen checks
// again, and replaces a stale file).
func CheckNotRunning(path string) error {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil
	}
	c.Close()
	return fmt.Errorf("%w: %s", ErrAlreadyRunning, path)
}

// Path is the socket's path.
func (s *Server) Path() string { return s.cfg.Path }

// Close stops accepting, cancels running handlers, closes every
// connection, waits for their goroutines and removes the socket file.
// Safe to call more than once.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.cancel()
		s.ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
		_ = os.Remove(s.cfg.Path)
	})
	return nil
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	r := bufio.NewReaderSize(c, 64*1024)
	w := bufio.NewWriter(c)
	for {
		line, tooLong, err := readLine(r, s.cfg.MaxLine)
		if err != nil {
			return
		}
		var resp Response
		var whispers []Whisper
		var after func()
		if tooLong {
			resp = Response{Type: "response", Error: fmt.Sprintf("%v (more than %d bytes)", ErrLineTooLong, s.cfg.MaxLine)}
		} else if len(line) == 0 {
			continue
		} else {
			req, err := DecodeRequest(line)
			if err != nil {
				resp = Response{Type: "response", ID: req.ID, Error: err.Error()}
			} else {
				hctx, end := watchHangUp(ctx, c, r)
				resp, after = s.handle(hctx, req)
				end()
				if SkillCommands[req.Type] && s.cfg.Whispers != nil {
					whispers = s.cfg.Whispers()
				}
			}
		}
		for i, wh := range whispers {
			wh.Type = "whisper"
			if err := writeJSON(c, w, wh); err != nil {
				if s.cfg.Unsent != nil {
					s.cfg.Unsent(whispers[i:])
				}
				return
			}
		}
		err = writeJSON(c, w, resp)
		if after != nil {
			after()
			after = nil
		}
		if err != nil {
			return
		}
	}
}

func (s *Server) handle(ctx context.Context, req Request) (resp Response, after func()) {
	resp = Response{Type: "response", ID: req.ID}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error().Str("type", req.Type).Str("panic", fmt.Sprint(p)).Str("stack", string(debug.Stack())).Msg("handler panicked")
			resp.OK, resp.Data, resp.Error = false, nil, "internal error"
		}
	}()
	data, err := s.cfg.Handler(ctx, req)
	if t, ok := data.(Then); ok {
		data, after = t.Data, t.After
	}
	if err != nil {
		resp.Error = err.Error()
		return resp, after
	}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			resp.Error = "internal error: " + err.Error()
			return resp, after
		}
		resp.Data = b
	}
	resp.OK = true
	return resp, after
}

// watchHangUp returns ctx, cancelled when the client hangs up while a
// request runs (an irc_ask whose skill CLI was killed must not wait out
// its timeout), and the function that ends the watch. It peeks at the
// connection: a pipelined next request is left in r for the next read; a
// read error other than end's own deadline means the client is gone.
func watchHangUp(ctx context.Context, c net.Conn, r *bufio.Reader) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	var ended atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := r.Peek(1); err != nil && !ended.Load() {
			cancel()
		}
	}()
	return ctx, func() {
		ended.Store(true)
		_ = c.SetReadDeadline(time.Now()) // unblocks the Peek
		<-done
		_ = c.SetReadDeadline(time.Time{})
		cancel()
	}
}

func writeJSON(c net.Conn, w *bufio.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	w.Write(b)
	w.WriteByte('\n')
	return w.Flush()
}

// readLine reads one line of at most max bytes; a longer one is read to
// its end and reported with tooLong.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		frag, isPrefix, err := r.ReadLine()
		if err != nil {
			return nil, false, err
		}
		if !tooLong {
			if len(line)+len(frag) > max {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if !isPrefix {
			return line, tooLong, nil
		}
	}
}
