package ipc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSocketPathRules(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)

	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	p, err := SocketPath("alice")
	if err != nil || p != filepath.Join(xdg, "harness-alice.sock") {
		t.Fatalf("with XDG_RUNTIME_DIR: %q %v", p, err)
	}
	if pid, _ := PIDPath("alice"); pid != filepath.Join(xdg, "harness-alice.pid") {
		t.Fatalf("pid: %q", pid)
	}
	if _, err := EnsureRunDir(); err != nil {
		t.Fatal(err)
	}

	t.Setenv("XDG_RUNTIME_DIR", "")
	p, err = SocketPath("alice")
	want := filepath.Join(home, ".harness", "run", "harness-alice.sock")
	if err != nil || p != want {
		t.Fatalf("without XDG_RUNTIME_DIR: %q %v, want %q", p, err, want)
	}
	if err := os.MkdirAll(filepath.Join(home, ".harness", "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := EnsureRunDir()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("run dir mode: %v %v", fi.Mode(), err)
	}

	t.Setenv("XDG_RUNTIME_DIR", "/"+strings.Repeat("d", 80))
	if _, err := SocketPath(strings.Repeat("n", 30)); !errors.Is(err, ErrPathTooLong) {
		t.Errorf("a path past MaxSocketPath: %v", err)
	}
	if p, err := SocketPath("n"); err != nil || len(p) > MaxSocketPath {
		t.Errorf("a short one: %q %v", p, err)
	}
	for _, bad := range []string{"", "../x", "a/b", "a b", "a.sock", strings.Repeat("a", 65)} {
		if _, err := SocketPath(bad); !errors.Is(err, ErrBadNick) {
			t.Errorf("SocketPath(%q) = %v", bad, err)
		}
	}
}

// The server (as the daemon starts it) and the client (as the CLI dials
// it) agree on the path, with XDG_RUNTIME_DIR set and unset.
func TestCallersAgree(t *testing.T) {
	for _, xdg := range []bool{true, false} {
		home := t.TempDir()
		t.Setenv("HOME", home)
		if xdg {
			t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
		} else {
			t.Setenv("XDG_RUNTIME_DIR", "")
		}
		if _, err := EnsureRunDir(); err != nil {
			t.Fatal(err)
		}
		path, _ := SocketPath("bob")
		s, err := Listen(ServerConfig{Path: path, Handler: func(context.Context, Request) (any, error) { return "pong", nil }})
		if err != nil {
			t.Fatal(err)
		}
		c, err := Dial(context.Background(), "bob")
		if err != nil {
			t.Fatalf("xdg=%v: %v", xdg, err)
		}
		r, _, err := c.Call(context.Background(), Request{Type: CmdStatus})
		if err != nil || !r.OK || string(r.Data) != `"pong"` {
			t.Fatalf("%+v %v", r, err)
		}
		c.Close()
		s.Close()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("socket left behind: %v", err)
		}
	}
}

func startServer(t *testing.T, cfg ServerConfig) (*Server, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ipc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg.Path = filepath.Join(dir, "s.sock")
	s, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, cfg.Path
}

// raw sends lines and reads one line per request back.
func raw(t *testing.T, path string, lines ...string) []map[string]any {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	var out []map[string]any
	for _, l := range lines {
		if _, err := c.Write([]byte(l + "\n")); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("after %q: %v", l[:min(len(l), 80)], err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestServerErrors(t *testing.T) {
	logs := make(logLines, 100)
	logger := zerolog.New(logs)
	_, path := startServer(t, ServerConfig{MaxLine: 1024, Logger: &logger, Handler: func(_ context.Context, r Request) (any, error) {
		switch r.Channel {
		case "#panic":
			panic("boom")
		case "#fail":
			return nil, errors.New("no such channel")
		}
		return map[string]string{"ok": r.Type}, nil
	}})
	got := raw(t, path,
		`{"type":"irc_send","id":"1","channel":"#dev","message":"hi"}`,
		`not json`,
		`{"type":"irc_send","id":"2"`,
		`{"type":"nope","id":"3"}`,
		`{"type":"irc_send","id":"4","channel":"#dev"}`,
		`{"type":"irc_send","channel":"#dev","message":"x"}`,
		`{"type":"irc_read","id":"5","channel":"#dev","limit":-1}`,
		`{"type":"irc_ask","id":"6","channel":"#dev","message":"q","timeout":-1}`,
		`{"type":"irc_join","id":"7","channel":"#panic"}`,
		`{"type":"irc_join","id":"8","channel":"#fail"}`,
		strings.Repeat("x", 5000),
		`{"type":"status","id":"9"} {"type":"status"}`,
		`{"type":"status","id":"10"}`,
	)
	wantErr := map[int]string{1: "bad JSON", 2: "bad JSON", 3: "unknown command", 4: "needs \"message\"", 5: "id must be",
		6: "limit", 7: "timeout", 8: "internal error", 9: "no such channel", 10: "too long", 11: "bad JSON"}
	for i, r := range got {
		if r["type"] != "response" {
			t.Errorf("%d: %v", i, r)
		}
		if want, bad := wantErr[i]; bad {
			if r["ok"] != false || !strings.Contains(r["error"].(string), want) {
				t.Errorf("%d: want error %q, got %v", i, want, r)
			}
		} else if r["ok"] != true {
			t.Errorf("%d: %v", i, r)
		}
	}
	if got[3]["id"] != "3" || got[9]["id"] != "8" {
		t.Errorf("error responses keep the id: %v %v", got[3], got[9])
	}
	// the panic is logged with its value and stack (one message key)
	var entry map[string]any
	for len(logs) > 0 {
		if line := <-logs; strings.Contains(line, "handler panicked") {
			json.Unmarshal([]byte(line), &entry)
		}
	}
	if stack, _ := entry["stack"].(string); entry["panic"] != "boom" || !strings.Contains(stack, "TestServerErrors") {
		t.Errorf("panic log %v", entry)
	}
}

// logLines is a zerolog writer handing each line over.
type logLines chan string

func (c logLines) Write(p []byte) (int, error) { c <- string(p); return len(p), nil }

func TestEveryCommandDecodes(t *testing.T) {
	topic := "t"
	full := Request{ID: "x", Channel: "#c", Message: "m", Target: "#c", Topic: &topic}
	for _, cmd := range Commands {
		r := full
		r.Type = cmd
		b, _ := json.Marshal(r)
		if _, err := DecodeRequest(b); err != nil {
			t.Errorf("%s: %v", cmd, err)
		}
	}
	for cmd, missing := range map[string]string{CmdIRCSend: "channel", CmdIRCRead: "channel", CmdIRCAsk: "channel",
		CmdIRCJoin: "channel", CmdIRCPart: "channel", CmdIRCTopic: "channel", CmdIRCWho: "target"} {
		b, _ := json.Marshal(Request{Type: cmd, ID: "x"})
		if _, err := DecodeRequest(b); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), missing) {
			t.Errorf("%s without %s: %v", cmd, missing, err)
		}
	}
}

func TestWhispersBeforeSkillResponses(t *testing.T) {
	pending := []Whisper{{WhisperType: "CORRECTION", Message: "stop looping"}}
	_, path := startServer(t, ServerConfig{
		Handler: func(context.Context, Request) (any, error) { return nil, nil },
		Whispers: func() []Whisper {
			w := pending
			pending = nil
			return w
		},
	})
	c, err := DialPath(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// status is not a skill command: no whisper
	if _, w, err := c.Call(context.Background(), Request{Type: CmdStatus}); err != nil || len(w) != 0 {
		t.Fatalf("status: %v %v", w, err)
	}
	r, w, err := c.Call(context.Background(), Request{Type: CmdIRCChannels})
	if err != nil || !r.OK || len(w) != 1 || w[0].Type != "whisper" || w[0].Message != "stop looping" {
		t.Fatalf("%+v %+v %v", r, w, err)
	}
	if _, w, _ := c.Call(context.Background(), Request{Type: CmdIRCChannels}); len(w) != 0 {
		t.Fatalf("whisper delivered twice: %v", w)
	}
}

func TestOversizedLineThroughClient(t *testing.T) {
	_, path := startServer(t, ServerConfig{MaxLine: 100, Handler: func(context.Context, Request) (any, error) { return nil, nil }})
	c, err := DialPath(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, _, err := c.Call(context.Background(), Request{Type: CmdIRCSend, Channel: "#c", Message: strings.Repeat("x", 200)})
	if err != nil || r.OK || !strings.Contains(r.Error, "too long") {
		t.Fatalf("%+v %v", r, err)
	}
	if r, _, err := c.Call(context.Background(), Request{Type: CmdStatus}); err != nil || !r.OK {
		t.Fatalf("connection unusable after: %+v %v", r, err)
	}
}

func TestStaleSocketAndAlreadyRunning(t *testing.T) {
	s, path := startServer(t, ServerConfig{Handler: func(context.Context, Request) (any, error) { return nil, nil }})
	if _, err := Listen(ServerConfig{Path: path, Handler: s.cfg.Handler}); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second listener: %v", err)
	}
	s.Close()
	// a stale socket file (a daemon that died) is replaced
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	s2, err := Listen(ServerConfig{Path: path, Handler: s.cfg.Handler})
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	s2.Close()
	if _, err := DialPath(context.Background(), path); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("dial after close: %v", err)
	}
}

func TestCloseCancelsHandlers(t *testing.T) {
	started := make(chan struct{})
	s, path := startServer(t, ServerConfig{Handler: func(ctx context.Context, _ Request) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	c, err := DialPath(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	errc := make(chan error, 1)
	go func() {
		_, _, err := c.Call(context.Background(), Request{Type: CmdIRCAsk, Channel: "#c", Message: "q"})
		errc <- err
	}()
	<-started
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on a running handler")
	}
	<-errc
}

// A client that hangs up while its request runs ends the handler's
// context (an irc_ask of a killed skill CLI stops waiting), and the
// whispers its response would have carried wait for the next call.
func TestClientGoneMidRequest(t *testing.T) {
	ended := make(chan error, 1)
	pending := []Whisper{{WhisperType: "CORRECTION", Message: "keep this"}}
	var unsent []Whisper
	var mu sync.Mutex
	_, path := startServer(t, ServerConfig{
		Handler: func(ctx context.Context, r Request) (any, error) {
			if r.Type != CmdIRCAsk {
				return nil, nil
			}
			select {
			case <-ctx.Done():
				ended <- ctx.Err()
			case <-time.After(10 * time.Second):
				ended <- errors.New("the handler never saw the client go")
			}
			return nil, ctx.Err()
		},
		Whispers: func() []Whisper {
			mu.Lock()
			defer mu.Unlock()
			w := pending
			pending = nil
			return w
		},
		Unsent: func(w []Whisper) {
			mu.Lock()
			defer mu.Unlock()
			unsent = append(unsent, w...)
			pending = append(w, pending...)
		},
	})
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte(`{"type":"irc_ask","id":"1","channel":"#c","message":"q?"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	// the whispers come back once the failed write is seen
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(unsent)
		mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the undelivered whisper was not given back")
		}
		time.Sleep(5 * time.Millisecond) // poll with a deadline
	}
	c, err := DialPath(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, w, err := c.Call(context.Background(), Request{Type: CmdIRCChannels}); err != nil || len(w) != 1 || w[0].Message != "keep this" {
		t.Fatalf("whisper after a lost response: %v %v", w, err)
	}
}

// Requests pipelined on one write are all answered, in order: watching
// for a hang-up leaves the next request where the reader finds it.
func TestPipelinedRequests(t *testing.T) {
	_, path := startServer(t, ServerConfig{Handler: func(_ context.Context, r Request) (any, error) {
		return r.ID, nil
	}})
	var lines []string
	for i := range 50 {
		lines = append(lines, fmt.Sprintf(`{"type":"status","id":"r%d"}`, i))
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(strings.Join(lines, "\n") + "\n")); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	sc := bufio.NewScanner(conn)
	for i := range 50 {
		if !sc.Scan() {
			t.Fatalf("response %d: %v", i, sc.Err())
		}
		var r Response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || !r.OK || r.ID != fmt.Sprintf("r%d", i) {
			t.Fatalf("response %d: %s %v", i, sc.Bytes(), err)
		}
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"type":"irc_send","id":"1","channel":"#dev","message":"hi"}`))
	f.Add([]byte(`{"type":"irc_topic","id":"1","channel":"#dev","topic":null}`))
	f.Add([]byte(`{"id":5}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := DecodeRequest(line)
		if err == nil {
			if r.Check() != nil || r.ID == "" {
				t.Fatalf("accepted an invalid request %+v", r)
			}
			return
		}
		if !errors.Is(err, ErrBadJSON) && !errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrUnknownCommand) {
			t.Fatalf("error outside the protocol's: %v", err)
		}
	})
}
