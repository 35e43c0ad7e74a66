package checkpoint

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/klauspost/compress/zlib"
)

// The store's objects written in process, in git's formats so git reads
// them as its own: an object's id is the SHA-1 of "type size\0" and its
// bytes (the store is a SHA-1 repository: Open writes no objectFormat);
// a loose object is objects/xx/yyyy…, the zlib stream of the same; a
// pack holds many (pack.go).

// oid is a SHA-1 object id.
type oid [sha1.Size]byte

func (o oid) String() string { return hex.EncodeToString(o[:]) }

// Git's modes for tree entries and index entries.
const (
	modeFile    = 0o100644
	modeExec    = 0o100755
	modeSymlink = 0o120000
	modeGitlink = 0o160000
	modeTree    = 0o40000
)

// errChanged: a file changed size while it was read; the snapshot is
// retried by a walk.
var errChanged = errors.New("checkpoint: a file changed while it was read")

// objectWriter writes a snapshot's objects: into its pack, but for a
// big file's blob, which is streamed into a loose object of its own.
type objectWriter struct {
	dir  string // objects
	pack *packWriter
}

// path returns the file of loose object id.
func (w objectWriter) path(id oid) string {
	h := id.String()
	return filepath.Join(w.dir, h[:2], h[2:])
}

// write stores an object of kind ("blob", "tree") with content, and
// returns its id.
func (w objectWriter) write(kind string, content []byte) (oid, error) {
	k := packBlob
	if kind == "tree" {
		k = packTree
	}
	return w.pack.add(k, content)
}

// blobFile stores the file at path as a blob, reading exactly size
// bytes (its size when it was stat'ed): a file that is now shorter or
// longer fails with errChanged. A symlink's blob is its target.
func (w objectWriter) blobFile(path string, mode uint32, size int64) (oid, error) {
	if mode == modeSymlink {
		target, err := os.Readlink(path)
		if err != nil {
			return oid{}, err
		}
		return w.write("blob", []byte(target))
	}
	f, err := os.Open(path)
	if err != nil {
		return oid{}, err
	}
	defer f.Close()
	if size <= 1<<20 {
		var buf []byte
		data, err := readSmall(f, size, &buf)
		if err != nil {
			return oid{}, err
		}
		return w.write("blob", data)
	}
	// A big file: hashed and compressed as it is read, into a temporary
	// file renamed to its id at the end.
	tmp, err := os.CreateTemp(w.dir, "tmp_obj_*")
	if err != nil {
		return oid{}, fmt.Errorf("checkpoint: %w", err)
	}
	defer os.Remove(tmp.Name())
	h := sha1.New()
	zw := zlibs.Get().(*zlib.Writer)
	defer zlibs.Put(zw)
	zw.Reset(tmp)
	out := io.MultiWriter(h, zw)
	fmt.Fprintf(out, "blob %d\x00", size)
	n, err := io.Copy(out, io.LimitReader(f, size+1))
	if err == nil {
		err = zw.Close()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return oid{}, fmt.Errorf("checkpoint: %w", err)
	}
	if n != size {
		return oid{}, errChanged
	}
	var id oid
	h.Sum(id[:0])
	final := w.path(id)
	if err := os.MkdirAll(filepath.Dir(final), 0o700); err != nil {
		return oid{}, fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return oid{}, fmt.Errorf("checkpoint: %w", err)
	}
	return id, nil
}

// treeEntry is one entry of a tree object.
type treeEntry struct {
	name string
	mode uint32
	id   oid
}

// encodeTree returns a tree object's content: its entries in git's
// order (by name, a tree's name compared as if it ended in "/"), each
// "mode name\0" and the binary id.
func encodeTree(es []treeEntry) []byte {
	key := func(e treeEntry) string {
		if e.mode == modeTree {
			return e.name + "/"
		}
		return e.name
	}
	sort.Slice(es, func(i, j int) bool { return key(es[i]) < key(es[j]) })
	n := 0
	for _, e := range es {
		n += 7 + len(e.name) + 1 + len(e.id)
	}
	b := make([]byte, 0, n)
	for _, e := range es {
		b = strconv.AppendUint(b, uint64(e.mode), 8)
		b = append(b, ' ')
		b = append(b, e.name...)
		b = append(b, 0)
		b = append(b, e.id[:]...)
	}
	return b
}

// hashObject returns the id an object would have, without storing it.
func hashObject(kind string, content []byte) oid {
	h := sha1.New()
	io.WriteString(h, kind+" "+strconv.Itoa(len(content))+"\x00")
	h.Write(content)
	var id oid
	h.Sum(id[:0])
	return id
}
