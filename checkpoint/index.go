package checkpoint

import (
	"bytes"
	"crypto/sha1"
	bin "encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"syscall"
)

// The store's git index, read and written in process: version 2, SHA-1,
// stage 0 only (the store never merges), no extensions written. Its
// stat data is what git compares (its stat cache): a walk that follows
// an index written here re-reads only the files whose stat differs.

// stat is the stat data an index entry keeps (each field cut to 32
// bits, as git keeps it).
type stat struct {
	ctime, ctimeNs, mtime, mtimeNs uint32
	dev, ino, uid, gid, size       uint32
}

// statOf returns fi's stat data.
func statOf(fi fs.FileInfo) stat {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stat{size: uint32(fi.Size()), mtime: uint32(fi.ModTime().Unix()), mtimeNs: uint32(fi.ModTime().Nanosecond())}
	}
	return statFromSys(st)
}

// indexEntry is one file of the index.
type indexEntry struct {
	path string
	mode uint32
	id   oid
	st   stat
	size int64 // the file's size when it was stat'ed (not cut)
}

// errIndexFormat: the index is not one this code reads (git may have
// written another version); the caller walks instead.
var errIndexFormat = errors.New("checkpoint: index format not read in process")

// readIndex reads the entries of a git index of version 2 (or 3 without
// extended flags) and checks its checksum. A missing index is empty.
func readIndex(path string) ([]indexEntry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if len(data) < 12+sha1.Size || string(data[:4]) != "DIRC" || be32(data[4:]) != 2 {
		return nil, errIndexFormat
	}
	body := data[:len(data)-sha1.Size]
	if sum := sha1.Sum(body); !bytes.Equal(sum[:], data[len(body):]) {
		return nil, fmt.Errorf("%w: bad checksum", errIndexFormat)
	}
	n := int(be32(data[8:]))
	es := make([]indexEntry, 0, min(n, len(body)/62)) // the count is not trusted

	off := 12
	for range n {
		const fixed = 62
		if off+fixed > len(body) {
			return nil, errIndexFormat
		}
		d := body[off:]
		flags := bin.BigEndian.Uint16(d[60:])
		if flags&0x7000 != 0 { // extended flags or a stage other than 0
			return nil, errIndexFormat
		}
		end := bytes.IndexByte(d[fixed:], 0)
		if end < 0 {
			return nil, errIndexFormat
		}
		e := indexEntry{
			path: string(d[fixed : fixed+end]),
			mode: be32(d[24:]),
			st: stat{ctime: be32(d[0:]), ctimeNs: be32(d[4:]), mtime: be32(d[8:]), mtimeNs: be32(d[12:]),
				dev: be32(d[16:]), ino: be32(d[20:]), uid: be32(d[28:]), gid: be32(d[32:]), size: be32(d[36:])},
		}
		e.size = int64(e.st.size)
		copy(e.id[:], d[40:60])
		es = append(es, e)
		off += (fixed + end + 8) &^ 7
	}
	return es, nil
}

// writeIndex writes es (any order) as the index at path, through a
// temporary file renamed into place.
func writeIndex(path string, es []indexEntry) error {
	sort.Slice(es, func(i, j int) bool { return es[i].path < es[j].path })
	size := 12 + sha1.Size
	for _, e := range es {
		size += (62 + len(e.path) + 8) &^ 7
	}
	b := make([]byte, 0, size)
	b = append(b, "DIRC"...)
	b = bin.BigEndian.AppendUint32(b, 2)
	b = bin.BigEndian.AppendUint32(b, uint32(len(es)))
	for _, e := range es {
		start := len(b)
		for _, v := range []uint32{e.st.ctime, e.st.ctimeNs, e.st.mtime, e.st.mtimeNs, e.st.dev, e.st.ino,
			e.mode, e.st.uid, e.st.gid, e.st.size} {
			b = bin.BigEndian.AppendUint32(b, v)
		}
		b = append(b, e.id[:]...)
		b = bin.BigEndian.AppendUint16(b, uint16(min(len(e.path), 0xfff)))
		b = append(b, e.path...)
		pad := (62+len(e.path)+8)&^7 - (len(b) - start)
		b = append(b, make([]byte, pad)...)
	}
	sum := sha1.Sum(b)
	b = append(b, sum[:]...)
	return replaceFile(path, string(b))
}
