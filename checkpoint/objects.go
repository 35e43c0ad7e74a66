package checkpoint

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// The store's objects written in process (the watcher's incremental
// snapshots): git's loose object format, so git reads them as its own.
// A loose object is objects/xx/yyyy…, the zlib stream of "type size\0"
// and the bytes; its id is the SHA-1 of that uncompressed stream (the
// store is a SHA-1 repository: Open writes no objectFormat).

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

// objectWriter writes objects into a store's objects directory: into
// pack when set (a big file's blob is loose all the same), else loose.
type objectWriter struct {
	dir  string
	pack *packWriter
}

// path returns the file of object id.
func (w objectWriter) path(id oid) string {
	h := id.String()
	return filepath.Join(w.dir, h[:2], h[2:])
}

// write stores an object of kind ("blob", "tree") with content, and
// returns its id. An object already present is not written again.
func (w objectWriter) write(kind string, content []byte) (oid, error) {
	if w.pack != nil {
		k := packBlob
		if kind == "tree" {
			k = packTree
		}
		return w.pack.add(k, content)
	}
	h := sha1.New()
	hdr := kind + " " + strconv.Itoa(len(content)) + "\x00"
	io.WriteString(h, hdr)
	h.Write(content)
	var id oid
	h.Sum(id[:0])
	if _, err := os.Lstat(w.path(id)); err == nil {
		return id, nil
	}
	var buf bytes.Buffer
	zw := zlibs.Get().(*zlib.Writer)
	defer zlibs.Put(zw)
	zw.Reset(&buf)
	io.WriteString(zw, hdr)
	zw.Write(content)
	if err := zw.Close(); err != nil {
		return oid{}, err
	}
	return id, w.place(id, func(f *os.File) error { _, err := f.Write(buf.Bytes()); return err })
}

// place writes an object's file through a temporary file in its
// directory and renames it into place (an object's bytes never change,
// so a concurrent writer of the same object is harmless).
func (w objectWriter) place(id oid, fill func(*os.File) error) error {
	final := w.path(id)
	dir := filepath.Dir(final)
	f, err := os.CreateTemp(dir, "tmp_obj_*")
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o700); err == nil {
			f, err = os.CreateTemp(dir, "tmp_obj_*")
		}
	}
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), final)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
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
		buf := make([]byte, size+1)
		n, err := io.ReadFull(f, buf)
		if err != io.ErrUnexpectedEOF && err != nil && !(size == 0 && err == io.EOF) {
			return oid{}, err
		}
		if int64(n) != size {
			return oid{}, errChanged
		}
		return w.write("blob", buf[:n])
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
