package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/chirality/harness/event"
)

// Record is one stored event: its seq and the whole stored line (a JSON
// object whose first field is "seq").
//
// Event is the wire and storage form. In the process that made the event
// (Harness.Follow's live records) Typed is the event.Event it was made
// from, so an in-process reader need not decode it back; records read
// from the log have Typed nil. Decode gives the typed event either way.
type Record struct {
	Seq int64
	// Event is the record's JSON as stored, "seq" first. It is nil for a
	// record that was never stored (an ephemeral turn's, which has only
	// Typed): Wire encodes either.
	Event json.RawMessage
	// More is set by readers that know another record is ready right
	// now (Harness.Follow): a writer may hold its flush until a record
	// without it, sending a burst in one write.
	More bool
	// Typed is the event Event was encoded from, or nil. It is shared by
	// every reader of the record: read it, never modify it.
	Typed *event.Event
}

// Wire returns the record's JSON as a reader of the event log sees it:
// Event, or, for a record with only Typed, Typed's JSON with "seq":Seq
// first (without "seq" when Seq is 0).
func (r Record) Wire() json.RawMessage {
	if r.Event != nil || r.Typed == nil {
		return r.Event
	}
	return WithSeq(r.Seq, r.Typed.AppendJSON(nil))
}

// WithSeq returns an event's JSON object as the event log stores it,
// with "seq":seq as its first field (a copy of event when seq is 0).
func WithSeq(seq int64, event []byte) []byte {
	if seq == 0 {
		return bytes.Clone(event)
	}
	b := make([]byte, 0, len(event)+24)
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	if len(event) > 2 {
		b = append(b, ',')
	}
	return append(b, event[1:]...)
}

// Decode returns the record's typed event: Typed when it is set,
// otherwise Event decoded.
func (r Record) Decode() (event.Event, error) {
	if r.Typed != nil {
		return *r.Typed, nil
	}
	var ev event.Event
	err := json.Unmarshal(r.Event, &ev)
	return ev, err
}

// ErrInvalidEvent is returned by Append for input that is not a JSON
// object, or that has its own top-level "seq" field.
var ErrInvalidEvent = errors.New("invalid event")

// EventLog is the append-only event log of one session: a JSONL file whose
// lines are the appended events with "seq":N injected as the first field,
// N = 1, 2, 3… in append order.
//
// Append writes each line with one write(2) on an O_APPEND file and no
// fsync, so it costs a few microseconds; call Sync to make appended events
// durable. Readers (ReadAfter, Records) read through the same file with
// ReadAt and see every event whose Append returned before they started;
// they never see a partial line. All methods are safe for concurrent use.
//
// One EventLog should be the only writer of its file: two processes
// appending to the same file would reuse sequence numbers.
type EventLog struct {
	path     string
	repaired bool // a torn tail was cut when opening

	mu     sync.Mutex // guards the fields below and serialises appends
	f      *os.File
	seq    int64 // last seq written
	size   int64 // bytes of whole lines
	err    error // sticky failure: the file could not be repaired
	closed bool
	buf    []byte       // the line being written
	cbuf   bytes.Buffer // the compacted event
}

// OpenEventLog opens (creating it 0600, its directory 0700) the event log
// at path. It recovers the last seq from the file's tail; a torn last line
// (a crash in the middle of a write) is cut off, never an error.
func OpenEventLog(path string) (*EventLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	l := &EventLog{path: path, f: f}
	if err := l.recover(); err != nil {
		f.Close()
		return nil, fmt.Errorf("event log %s: %w", path, err)
	}
	return l, nil
}

// Path returns the file's path.
func (l *EventLog) Path() string { return l.path }

func (l *EventLog) recover() error {
	fi, err := l.f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	nl, err := lastIndexByte(l.f, size, '\n')
	if err != nil {
		return err
	}
	end := nl + 1 // 0 when there is no newline at all
	if end < size {
		if err := l.f.Truncate(end); err != nil {
			return err
		}
		l.repaired = true
	}
	l.size = end
	// The last line with a valid seq prefix gives the seq to continue from.
	for pos := end - 1; pos >= 0; { // pos: the '\n' ending the line
		prev, err := lastIndexByte(l.f, pos, '\n')
		if err != nil {
			return err
		}
		if seq, ok := readSeq(l.f, prev+1, pos); ok {
			l.seq = seq
			break
		}
		pos = prev
	}
	return nil
}

// LastSeq returns the seq of the last appended event, 0 if none.
func (l *EventLog) LastSeq() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// Append stores event, a JSON object, as the next line and returns its
// seq. The object is compacted to one line and "seq":N is inserted as its
// first field; an object that already has a top-level "seq" is rejected
// (ErrInvalidEvent), as is anything that is not a JSON object. After
// Close it returns ErrClosed.
func (l *EventLog) Append(event []byte) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Compacted into a buffer the log keeps: an append allocates nothing
	// (a turn appends thousands of events; garbage per event means GC
	// cycles, whose assists stall every goroutine of the process).
	l.cbuf.Reset()
	if err := json.Compact(&l.cbuf, event); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	obj := l.cbuf.Bytes()
	if len(obj) < 2 || obj[0] != '{' {
		return 0, fmt.Errorf("%w: not a JSON object", ErrInvalidEvent)
	}
	if hasTopLevelKey(obj, "seq") {
		return 0, fmt.Errorf(`%w: the event has its own top-level "seq"`, ErrInvalidEvent)
	}
	if l.closed {
		return 0, ErrClosed
	}
	if l.err != nil {
		return 0, l.err
	}
	seq := l.seq + 1
	b := append(l.buf[:0], `{"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	if len(obj) == 2 { // {}
		b = append(b, '}')
	} else {
		b = append(b, ',')
		b = append(b, obj[1:]...)
	}
	b = append(b, '\n')
	l.buf = b
	n, err := l.f.Write(b)
	if err != nil {
		// Undo a partial line so later appends stay on line boundaries.
		if n > 0 {
			if terr := l.f.Truncate(l.size); terr != nil {
				l.err = fmt.Errorf("event log %s: write failed and the partial line could not be removed: %w", l.path, terr)
			}
		}
		return 0, fmt.Errorf("event log %s: %w", l.path, err)
	}
	l.seq = seq
	l.size += int64(n)
	if cap(l.buf) > 1<<20 { // let a huge event's buffers go
		l.buf, l.cbuf = nil, bytes.Buffer{}
	}
	return seq, nil
}

// hasTopLevelKey reports whether the compact JSON object obj has key at
// its top level.
func hasTopLevelKey(obj []byte, key string) bool {
	depth, keyNext := 0, false
	for i := 0; i < len(obj); i++ {
		switch obj[i] {
		case '"':
			j := i + 1
			for j < len(obj) && obj[j] != '"' {
				if obj[j] == '\\' {
					j++
				}
				j++
			}
			if depth == 1 && keyNext {
				raw := obj[i : j+1]
				if string(raw[1:len(raw)-1]) == key {
					return true
				}
				var s string
				if bytes.IndexByte(raw, '\\') >= 0 && json.Unmarshal(raw, &s) == nil && s == key {
					return true
				}
			}
			keyNext = false
			i = j
		case '{':
			depth++
			keyNext = depth == 1
		case '[':
			depth++
			keyNext = false
		case '}', ']':
			depth--
			keyNext = false
		case ',':
			keyNext = depth == 1
		case ':':
			keyNext = false
		}
	}
	return false
}

// snapshot returns the file and the size of its whole lines.
func (l *EventLog) snapshot() (*os.File, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, 0, ErrClosed
	}
	return l.f, l.size, nil
}

// ReadAfter returns the events with seq > after, in order. It is Records
// collected into a slice.
func (l *EventLog) ReadAfter(after int64) ([]Record, error) {
	var out []Record
	for r, err := range l.Records(after) {
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Records yields the events with seq > after, in order, as they are in the
// file when iteration starts (events appended later are not included). It
// finds the first one by binary search on the file, so resuming near the
// end of a long log is cheap. Lines without a valid seq prefix are
// skipped. An error (ErrClosed if the log is closed meanwhile) is yielded
// once and ends the sequence:
//
//	for rec, err := range log.Records(lastSeen) {
//		if err != nil { return err }
//		send(rec.Event)
//	}
func (l *EventLog) Records(after int64) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		f, size, err := l.snapshot()
		if err != nil {
			yield(Record{}, err)
			return
		}
		start, err := searchAfter(f, size, after)
		if err != nil {
			yield(Record{}, l.readErr(err))
			return
		}
		// As big as what there is to read, up to 64 KB: a live reader that
		// joins a young turn reads a few KB, and 200 of them should not
		// cost 64 KB each (garbage makes GC cycles, whose assists stall
		// every stream of the process).
		br := bufio.NewReaderSize(io.NewSectionReader(f, start, size-start), int(min(max(size-start, 512), 64<<10)))
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 && line[len(line)-1] == '\n' {
				line = line[:len(line)-1]
				if seq, ok := parseSeqPrefix(line); ok && seq > after {
					if !yield(Record{Seq: seq, Event: line}, nil) {
						return
					}
				}
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(Record{}, l.readErr(err))
				return
			}
		}
	}
}

// Lines calls fn for each event with seq > after, in order, as Records
// would yield it, but hands the stored line (without its newline) as a
// reader instead of a slice: a line of any length passes through the
// reader's buffer (at most 16 KB) and is never held whole, so a client
// that replays a log of megabyte events slowly costs no more memory than
// one that reads fast. fn need not read line to its end (the rest is
// skipped); line is valid only during the call. fn's error ends the walk
// and is returned; a read error is returned as Records yields it.
func (l *EventLog) Lines(after int64, fn func(seq int64, line io.Reader) error) error {
	f, size, err := l.snapshot()
	if err != nil {
		return err
	}
	start, err := searchAfter(f, size, after)
	if err != nil {
		return l.readErr(err)
	}
	// 16 KB: what a stream holds while its client does not read.
	br := bufio.NewReaderSize(io.NewSectionReader(f, start, size-start), int(min(max(size-start, 512), 16<<10)))
	for {
		frag, err := br.ReadSlice('\n')
		if err == io.EOF {
			return nil // the snapshot ends on a line boundary: nothing is cut
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return l.readErr(err)
		}
		lr := &lineReader{br: br, frag: frag, done: err == nil}
		if lr.done {
			lr.frag = frag[:len(frag)-1]
		}
		if seq, ok := parseSeqPrefix(lr.frag); ok && seq > after {
			if err := fn(seq, lr); err != nil {
				return err
			}
		}
		if err := lr.skip(); err != nil {
			return l.readErr(err)
		}
	}
}

// lineReader reads one line of Lines: the fragment at hand, then the
// rest up to the newline, a buffer at a time.
type lineReader struct {
	br   *bufio.Reader
	frag []byte // unread bytes of the line in br's buffer
	done bool   // the newline has been consumed
	err  error
}

func (r *lineReader) Read(p []byte) (int, error) {
	for len(r.frag) == 0 {
		if r.done {
			return 0, io.EOF
		}
		if r.err != nil {
			return 0, r.err
		}
		r.next()
	}
	n := copy(p, r.frag)
	r.frag = r.frag[n:]
	return n, nil
}

// WriteTo writes the rest of the line to w straight from the reader's
// buffer (io.Copy uses it: no copy buffer).
func (r *lineReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if len(r.frag) > 0 {
			n, err := w.Write(r.frag)
			total += int64(n)
			r.frag = r.frag[n:]
			if err != nil {
				return total, err
			}
		}
		if r.done {
			return total, nil
		}
		if r.err != nil {
			return total, r.err
		}
		r.next()
	}
}

// next reads the line's next fragment.
func (r *lineReader) next() {
	frag, err := r.br.ReadSlice('\n')
	switch {
	case err == nil:
		r.frag, r.done = frag[:len(frag)-1], true
	case errors.Is(err, bufio.ErrBufferFull):
		r.frag = frag
	case err == io.EOF:
		r.frag, r.err = frag, io.ErrUnexpectedEOF // a snapshot ends on a newline; never here
	default:
		r.frag, r.err = frag, err
	}
}

// skip consumes what fn left of the line.
func (r *lineReader) skip() error {
	for !r.done {
		if r.err != nil {
			return r.err
		}
		r.next()
	}
	r.frag = nil
	return nil
}

// readErr maps a read failure on a closed file to ErrClosed.
func (l *EventLog) readErr(err error) error {
	if errors.Is(err, os.ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("event log %s: %w", l.path, err)
}

// Sync flushes appended events to stable storage.
func (l *EventLog) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return l.f.Sync()
}

// Close syncs and closes the file. It is safe to call more than once;
// appends and reads after Close fail with ErrClosed.
func (l *EventLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	serr := l.f.Sync()
	return errors.Join(serr, l.f.Close())
}

func (l *EventLog) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// parseSeqPrefix reads N from a line starting with {"seq":N followed by ,
// or }.
func parseSeqPrefix(line []byte) (int64, bool) {
	const prefix = `{"seq":`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return 0, false
	}
	rest := line[len(prefix):]
	i := 0
	for i < len(rest) && i < 19 && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || i >= len(rest) || (rest[i] != ',' && rest[i] != '}') {
		return 0, false
	}
	n, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	return n, err == nil && n > 0
}

// readSeq parses the seq of the line [start, end) of r.
func readSeq(r io.ReaderAt, start, end int64) (int64, bool) {
	n := min(end-start, 32)
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, start); err != nil && err != io.EOF {
		return 0, false
	}
	// 32 bytes hold {"seq": and any int64 and the byte after it.
	return parseSeqPrefix(buf)
}

const scanChunk = 32 << 10

// lastIndexByte returns the offset of the last c in r before offset
// before, or -1.
func lastIndexByte(r io.ReaderAt, before int64, c byte) (int64, error) {
	// Lines are usually short: start with a small read, then grow.
	buf := make([]byte, 512)
	for end := before; end > 0; {
		start := max(0, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := r.ReadAt(b, start); err != nil && err != io.EOF {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, c); i >= 0 {
			return start + int64(i), nil
		}
		end = start
		if len(buf) < scanChunk {
			buf = make([]byte, scanChunk)
		}
	}
	return -1, nil
}

// indexByte returns the offset of the first c in r at or after from and
// before limit, or -1.
func indexByte(r io.ReaderAt, from, limit int64, c byte) (int64, error) {
	// Lines are usually short: start with a small read, then grow.
	buf := make([]byte, 512)
	for start := from; start < limit; {
		b := buf[:min(int64(len(buf)), limit-start)]
		if _, err := r.ReadAt(b, start); err != nil && err != io.EOF {
			return 0, err
		}
		if i := bytes.IndexByte(b, c); i >= 0 {
			return start + int64(i), nil
		}
		start += int64(len(b))
		if len(buf) < scanChunk {
			buf = make([]byte, scanChunk)
		}
	}
	return -1, nil
}

// lineStartAtOrAfter returns the first line start >= p (size if none).
func lineStartAtOrAfter(r io.ReaderAt, p, size int64) (int64, error) {
	if p <= 0 {
		return 0, nil
	}
	nl, err := indexByte(r, p-1, size, '\n')
	if err != nil || nl < 0 {
		return size, err
	}
	return nl + 1, nil
}

// searchAfter returns the offset of the first line with seq > after in the
// first size bytes of r, relying on seq increasing with the offset.
func searchAfter(r io.ReaderAt, size, after int64) (int64, error) {
	if after <= 0 {
		return 0, nil
	}
	lo, hi := int64(0), size
	for lo < hi {
		mid := lo + (hi-lo)/2
		start, err := lineStartAtOrAfter(r, mid, size)
		if err != nil {
			return 0, err
		}
		if start >= hi {
			hi = mid
			continue
		}
		end, err := indexByte(r, start, size, '\n')
		if err != nil {
			return 0, err
		}
		if end < 0 {
			end = size - 1
		}
		if seq, ok := readSeq(r, start, end); ok && seq > after {
			hi = start
		} else {
			lo = end + 1
		}
	}
	return lineStartAtOrAfter(r, lo, size)
}
