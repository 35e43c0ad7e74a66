package trust

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// The readers of a record on a turn's start path (Session, Persona,
// MCPTrusted, CheckPersona, MCPServers…) read it several times a turn,
// and it holds every session of its project: decoding it each time was
// most of what the server allocated when many turns started at once.
// view reads the file's bytes each time (another process may have
// written it) and decodes them again only when they differ from the
// bytes it decoded last: same bytes, same record, so nothing is trusted
// that the file does not say now.

// maxCached bounds the projects whose record is kept decoded.
const maxCached = 64

type cached struct {
	raw []byte
	rec *Record
}

type recordCache struct {
	mu sync.Mutex
	m  map[string]*cached // by clean project root
}

// view returns root's record as the file says now, shared: the caller
// reads it and never modifies it, nor anything it points to (clone what
// is handed out). Errors are Load's.
func (s *Store) view(root string) (*Record, error) {
	root = filepath.Clean(root)
	path := s.Path(root)
	buf := rawBufs.Get().(*bytes.Buffer)
	defer rawBufs.Put(buf)
	buf.Reset()
	if err := readRaw(path, buf); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &Record{Version: recordVersion, ProjectRoot: root}, nil
		}
		return read(path, root) // its error, as Load says it
	}
	c := &s.cache
	c.mu.Lock()
	if e := c.m[root]; e != nil && bytes.Equal(e.raw, buf.Bytes()) {
		c.mu.Unlock()
		return e.rec, nil
	}
	c.mu.Unlock()
	raw := bytes.Clone(buf.Bytes())
	r, err := decode(raw, path, root)
	if err != nil {
		return r, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = map[string]*cached{}
	}
	c.m[root] = &cached{raw: raw, rec: r}
	c.mu.Unlock()
	return r, nil
}

// rawBufs are the buffers view reads a record's bytes into (most reads
// find the bytes it decoded last, and keep nothing).
var rawBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readRaw reads a record file (at most MaxFileSize+1 bytes) into buf.
func readRaw(path string, buf *bytes.Buffer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = buf.ReadFrom(io.LimitReader(f, MaxFileSize+1))
	return err
}
