package logging

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/internal/secrets"
)

// Defaults.
const (
	// Dir is the log directory relative to a project root.
	Dir = ".chirality/logs"
	// FileName is the name of the current log file.
	FileName = "harness.log"
	// DefaultMaxSize is the size at which the log is rotated: 10 MB.
	DefaultMaxSize = 10 << 20
)

// Path returns the log file of a project:
// <projectRoot>/.chirality/logs/harness.log.
func Path(projectRoot string) string {
	return filepath.Join(projectRoot, Dir, FileName)
}

// Options configures NewWithOptions. The zero value gives the defaults.
type Options struct {
	// MaxSize is the rotation size in bytes; 0 means DefaultMaxSize.
	MaxSize int64
	// Level is the minimum level written; the zero value is
	// zerolog.DebugLevel.
	Level zerolog.Level
}

// New opens the project's log with default options and returns a logger
// writing spec 004's LogEntry lines to it (see Entries: the message is
// the event, the fields are the data). Close the returned io.Closer
// when done; the logger's lines after that are dropped, silently: a
// goroutine that outlives its owner's shutdown by a moment (an agent's
// stderr reader, a turn's last "process exited") must not make zerolog
// print "could not write event: file already closed" on the terminal.
func New(projectRoot string) (zerolog.Logger, io.Closer, error) {
	return NewWithOptions(projectRoot, Options{})
}

// NewWithOptions is New with explicit options.
func NewWithOptions(projectRoot string, opts Options) (zerolog.Logger, io.Closer, error) {
	w, err := OpenRotatingFile(Path(projectRoot), opts.MaxSize)
	if err != nil {
		return zerolog.Nop(), nil, err
	}
	// spec 004's LogEntry lines (Entries), scrubbed, to the rotating file;
	// Entries stamps each line, with milliseconds
	log := zerolog.New(Entries(Scrubbed(dropAfterClose{w}))).Level(opts.Level)
	return log, w, nil
}

// Scrubbed returns a writer that passes each Write (a zerolog line) to w
// with every secret value the process knows of replaced by [REDACTED]
// (see internal/secrets: the values of its own secret variables, those
// withheld from agents and the agents' own credentials). Every log the
// harness writes goes through it: the project logs (New) and the
// commands' stderr loggers.
func Scrubbed(w io.Writer) io.Writer { return scrubbed{w} }

type scrubbed struct{ w io.Writer }

func (s scrubbed) Write(p []byte) (int, error) {
	if _, err := s.w.Write(secrets.ScrubLine(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// dropAfterClose is New's writer: a line written after Close is dropped
// without an error (RotatingFile itself answers os.ErrClosed).
type dropAfterClose struct{ r *RotatingFile }

func (d dropAfterClose) Write(p []byte) (int, error) {
	n, err := d.r.Write(p)
	if errors.Is(err, os.ErrClosed) {
		return len(p), nil
	}
	return n, err
}

// RotatingFile is an io.Writer appending to a file that it rotates to
// <path>.1 when a write would take it past MaxSize. Each Write is written
// whole to one file, so a zerolog line (one Write) is never split. A single
// write larger than MaxSize goes to a fresh file on its own.
//
// RotatingFile is safe for concurrent use. It assumes it is the only
// writer rotating the file: two processes logging to one project each
// rotate by their own count, which can leave harness.log.1 larger than
// MaxSize but never loses or splits a line.
type RotatingFile struct {
	path    string
	maxSize int64

	mu     sync.Mutex
	f      *os.File
	size   int64
	closed bool
}

// OpenRotatingFile opens path for appending (creating it 0600, and its
// directory 0700, if needed). maxSize <= 0 means DefaultMaxSize.
func OpenRotatingFile(path string, maxSize int64) (*RotatingFile, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxSize
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("logging: %w", err)
	}
	r := &RotatingFile{path: path, maxSize: maxSize}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *RotatingFile) open() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("logging: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("logging: %w", err)
	}
	r.f, r.size = f, fi.Size()
	return nil
}

// Write appends p, rotating first if p would take the file past the limit.
func (r *RotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, os.ErrClosed
	}
	if r.size > 0 && r.size+int64(len(p)) > r.maxSize {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

// rotate renames the current file to <path>.1 and opens a new one. The
// caller holds r.mu.
func (r *RotatingFile) rotate() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("logging: rotate: %w", err)
	}
	if err := os.Rename(r.path, r.path+".1"); err != nil && !os.IsNotExist(err) {
		// Keep logging to the same file rather than losing lines.
		if oerr := r.open(); oerr != nil {
			return oerr
		}
		return fmt.Errorf("logging: rotate: %w", err)
	}
	return r.open()
}

// Sync flushes the file to stable storage.
func (r *RotatingFile) Sync() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return os.ErrClosed
	}
	return r.f.Sync()
}

// Close closes the file. It is safe to call more than once; writes after
// Close fail with os.ErrClosed.
func (r *RotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return r.f.Close()
}

// Truncate returns s cut to its first n characters (runes), followed by
// "…(+K bytes)" when something was cut, for log fields such as "the first
// 200 characters of the message". Invalid UTF-8 counts a byte per
// character. n <= 0 keeps nothing.
func Truncate(s string, n int) string {
	if n < 0 {
		n = 0
	}
	if len(s) <= n { // fewer bytes than n: certainly fewer runes
		return s
	}
	i, count := 0, 0
	for i < len(s) && count < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	if i >= len(s) {
		return s
	}
	return s[:i] + "…(+" + strconv.Itoa(len(s)-i) + " bytes)"
}
