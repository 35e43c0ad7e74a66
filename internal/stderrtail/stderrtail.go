// Package stderrtail reads an agent child's stderr for the engines
// (claudecode, codex, acp): every line, with the child's secret values
// replaced by [REDACTED], goes to the logger (at debug level unless the
// engine says otherwise) and into a bounded tail
// kept for the turn's error (session:error's stderrTail). stderr never
// reaches the event stream.
package stderrtail

import (
	"bufio"
	"io"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/logging"
)

// Bounds of what is kept and read.
const (
	Lines   = 20      // lines kept in the tail
	MaxLine = 1 << 20 // bytes of one line kept (the rest of it is read and dropped)
	MaxTail = 2000    // bytes String returns at most (the end of the tail)
)

// Tail is one child's stderr. Read runs on a goroutine of its own; Scrub
// and String are safe for concurrent use with it.
type Tail struct {
	// Level is the level each line is logged at; the zero value is
	// zerolog.DebugLevel. Set it before Read.
	Level zerolog.Level

	secrets []string
	mu      sync.Mutex
	lines   []string
}

// New returns a Tail that scrubs secrets (values of 4 bytes or more; a
// shorter value would mangle ordinary text).
func New(secrets []string) *Tail { return &Tail{secrets: secrets} }

// Scrub replaces every secret value in line with [REDACTED].
func (t *Tail) Scrub(line string) string {
	for _, v := range t.secrets {
		if len(v) >= 4 {
			line = strings.ReplaceAll(line, v, "[REDACTED]")
		}
	}
	return line
}

// Read reads r to its end: each line scrubbed, logged with msg and kept.
// A line longer than MaxLine is cut, never a reason to stop reading.
func (t *Tail) Read(r io.Reader, log zerolog.Logger, msg string) {
	// Small: most children print nothing on stderr, and every turn's
	// start allocates this (50 turns at once, 50 × 64 KB was garbage
	// enough for GC cycles at start); readLine assembles longer lines.
	br := bufio.NewReaderSize(r, 4<<10)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			s := t.Scrub(line)
			// spec 004's "stderr output" entry: the line's first 500 characters
			log.WithLevel(t.Level).Str("line", logging.Truncate(s, 500)).Str("source", msg).Msg(logging.EventStderr)
			t.mu.Lock()
			t.lines = append(t.lines, s)
			if len(t.lines) > Lines {
				t.lines = t.lines[1:]
			}
			t.mu.Unlock()
		}
		if err != nil {
			_, _ = io.Copy(io.Discard, r)
			return
		}
	}
}

// String is the tail: its last lines, at most MaxTail bytes.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.Join(t.lines, "\n")
	if len(s) > MaxTail {
		s = s[len(s)-MaxTail:]
	}
	return s
}

// readLine reads one line, keeping at most MaxLine bytes of it.
func readLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(b) < MaxLine {
			if room := MaxLine - len(b); len(frag) > room {
				frag = frag[:room]
			}
			b = append(b, frag...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return strings.TrimRight(string(b), "\r\n"), err
	}
}
