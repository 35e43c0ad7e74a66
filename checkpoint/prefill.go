package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zlib"
)

// prefill hashes many new files (the untracked ones git listed, as
// lstat saw them) in process, on a few goroutines, into one pack, and
// adds them to the index with their stat data, so that the git add -A
// that follows finds them clean and hashes nothing (it still decides
// what the snapshot holds: a file changed since is hashed again, one
// now ignored is left out). In a store with no index yet (the first
// snapshot) it also stores the trees, so git write-tree stores none.
// complete says that the index now holds exactly the listed files
// (listed is how many git listed): the store had none, and each was
// read (none gone, no nested repository, no file too big to read here),
// so git add -A has nothing to do; then tr is the picture of that index,
// its trees hashed. On any error nothing was changed but
// a pack that is of no harm; git then hashes the files itself.
func (s *Store) prefill(ctx context.Context, untracked []found, listed int) (complete bool, tr *tracked, err error) {
	if runtime.GOOS != "linux" || len(untracked) == 0 {
		return false, nil, errors.ErrUnsupported // the index's stat data is read on Linux only
	}
	old, err := readIndex(s.index)
	if err != nil {
		return false, nil, err
	}
	// Big files are left to git (streamed); nested repositories too.
	var todo []found
	for _, f := range untracked {
		if f.fi.Size() <= 1<<20 && (f.fi.Mode().IsRegular() || f.fi.Mode()&fs.ModeSymlink != 0) {
			todo = append(todo, f)
		}
	}
	type result struct {
		e   indexEntry
		raw []byte // the pack entry: header and compressed bytes
		ok  bool
	}
	dr, err := openDirReader(s.root)
	if err != nil {
		return false, nil, err
	}
	defer dr.close()
	res := make([]result, len(todo))
	// The workers take the files in runs of prefillChunk (one atomic
	// add each, no channel hand-off per file).
	var wg sync.WaitGroup
	var next atomic.Int64
	for range min(4, (len(todo)+prefillChunk-1)/prefillChunk) {
		wg.Go(func() {
			var buf []byte
			for ctx.Err() == nil {
				end := int(next.Add(prefillChunk))
				start := end - prefillChunk
				if start >= len(todo) {
					return
				}
				for i := start; i < min(end, len(todo)); i++ {
					f := todo[i]
					mode := modeOf(f.fi)
					data, err := dr.read(f.rel, mode, f.fi.Size(), &buf)
					if err != nil {
						continue // changed or gone: git looks at it again
					}
					id, raw := packEntry(packBlob, "blob", data)
					res[i] = result{e: indexEntry{path: f.rel, mode: mode, id: id, st: statOf(f.fi), size: f.fi.Size()}, raw: raw, ok: true}
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return false, nil, err
	}
	p := newPackWriter(s.objectsDir())
	defer p.abort()
	es := old
	for _, r := range res {
		if !r.ok {
			continue
		}
		if err := p.addRaw(r.e.id, r.raw); err != nil {
			return false, nil, err
		}
		es = append(es, r.e)
	}
	complete = len(old) == 0 && len(es) == listed
	if len(old) == 0 {
		t, err := newTracked(es)
		if err == nil {
			_, err = t.treeID(&objectWriter{dir: s.objectsDir(), pack: p})
		}
		if err != nil {
			return false, nil, err
		}
		if complete {
			tr = t
		}
	}
	if err := p.finish(); err != nil {
		return false, nil, err
	}
	if err := writeIndex(s.index, es); err != nil {
		return false, nil, err
	}
	return complete, tr, nil
}

func (s *Store) objectsDir() string { return s.gitDir + string(os.PathSeparator) + "objects" }

// modeOf is git's mode for a file or symlink (the owner's executable
// bit only, as git keeps it).
func modeOf(fi fs.FileInfo) uint32 {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return modeSymlink
	case fi.Mode()&0o100 != 0:
		return modeExec
	}
	return modeFile
}

// prefillChunk is how many files a prefill worker takes at a time.
const prefillChunk = 64

// readSmall reads exactly size bytes from f into *buf.
func readSmall(f *os.File, size int64, buf *[]byte) ([]byte, error) {
	if int64(cap(*buf)) < size+1 {
		*buf = make([]byte, size+1)
	}
	b := (*buf)[:size+1]
	n, err := io.ReadFull(f, b)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	if int64(n) != size {
		return nil, errChanged
	}
	return b[:n], nil
}

// packEntry returns an object's id and its pack entry (type and size
// header, zlib stream).
func packEntry(kind int, name string, content []byte) (oid, []byte) {
	id := hashObject(name, content)
	var b bytes.Buffer
	n := len(content)
	c := byte(kind<<4) | byte(n&15)
	n >>= 4
	for n > 0 {
		b.WriteByte(c | 0x80)
		c = byte(n & 0x7f)
		n >>= 7
	}
	b.WriteByte(c)
	zw := zlibs.Get().(*zlib.Writer)
	zw.Reset(&b)
	zw.Write(content)
	zw.Close()
	zlibs.Put(zw)
	return id, b.Bytes()
}
