package checkpoint

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	bin "encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/klauspost/compress/zlib"
)

// packWriter collects the objects of one snapshot into one pack file
// (objects/pack/pack-<sum>.pack and its .idx, version 2, no deltas):
// two files per snapshot rather than one per object. The idx is written
// last, so git sees the pack whole or not at all.
type packWriter struct {
	dir  string // objects/pack
	f    *os.File
	bw   *bufio.Writer
	off  int64
	objs []packed
	seen map[oid]bool
}

type packed struct {
	id  oid
	off int64
	crc uint32
}

// Git's object type numbers in a pack.
const (
	packTree = 2
	packBlob = 3
)

// zlibs reuses compressors (each holds about a MiB of tables).
var zlibs = sync.Pool{New: func() any {
	zw, _ := zlib.NewWriterLevel(io.Discard, zlib.BestSpeed)
	return zw
}}

func newPackWriter(objects string) *packWriter {
	return &packWriter{dir: filepath.Join(objects, "pack"), seen: map[oid]bool{}}
}

// add appends an object (packTree or packBlob) and returns its id.
func (p *packWriter) add(kind int, content []byte) (oid, error) {
	name := "blob"
	if kind == packTree {
		name = "tree"
	}
	id, raw := packEntry(kind, name, content)
	return id, p.addRaw(id, raw)
}

// addRaw appends object id's pack entry (from packEntry).
func (p *packWriter) addRaw(id oid, raw []byte) error {
	if p.seen[id] {
		return nil
	}
	if p.f == nil {
		if err := os.MkdirAll(p.dir, 0o700); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		f, err := os.CreateTemp(p.dir, "tmp_pack_*")
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		p.f, p.bw = f, bufio.NewWriterSize(f, 256<<10)
		// The count is written at the end, when it is known.
		if _, err := p.bw.Write([]byte{'P', 'A', 'C', 'K', 0, 0, 0, 2, 0, 0, 0, 0}); err != nil {
			return p.fail(err)
		}
		p.off = 12
	}
	if _, err := p.bw.Write(raw); err != nil {
		return p.fail(err)
	}
	p.objs = append(p.objs, packed{id: id, off: p.off, crc: crc32.ChecksumIEEE(raw)})
	p.seen[id] = true
	p.off += int64(len(raw))
	return nil
}

func (p *packWriter) fail(err error) error {
	p.abort()
	return fmt.Errorf("checkpoint: writing a pack: %w", err)
}

// abort removes the unfinished pack. Safe to call more than once.
func (p *packWriter) abort() {
	if p.f != nil {
		p.f.Close()
		os.Remove(p.f.Name())
		p.f = nil
	}
}

// finish writes the pack's count and checksum and its index, and puts
// both in place. A writer that got no object writes nothing.
func (p *packWriter) finish() error {
	if p.f == nil {
		return nil
	}
	defer p.abort()
	if err := p.bw.Flush(); err != nil {
		return p.fail(err)
	}
	var count [4]byte
	bin.BigEndian.PutUint32(count[:], uint32(len(p.objs)))
	if _, err := p.f.WriteAt(count[:], 8); err != nil {
		return p.fail(err)
	}
	h := sha1.New()
	if _, err := io.Copy(h, io.NewSectionReader(p.f, 0, p.off)); err != nil {
		return p.fail(err)
	}
	var sum [sha1.Size]byte
	h.Sum(sum[:0])
	if _, err := p.f.WriteAt(sum[:], p.off); err != nil {
		return p.fail(err)
	}
	if err := p.f.Close(); err != nil {
		return p.fail(err)
	}
	base := filepath.Join(p.dir, "pack-"+oid(sum).String())
	if err := os.Rename(p.f.Name(), base+".pack"); err != nil {
		return p.fail(err)
	}
	p.f = nil
	if err := replaceFile(base+".idx", string(p.index(sum))); err != nil {
		os.Remove(base + ".pack")
		return err
	}
	return nil
}

// index returns the pack's .idx (version 2): fan-out table, sorted ids,
// CRCs, offsets (those past 2 GiB in a table of 64-bit ones), the pack's
// checksum and its own.
func (p *packWriter) index(packSum [sha1.Size]byte) []byte {
	objs := p.objs
	sort.Slice(objs, func(i, j int) bool { return bytes.Compare(objs[i].id[:], objs[j].id[:]) < 0 })
	b := make([]byte, 0, 8+256*4+len(objs)*28+2*sha1.Size)
	b = append(b, 0xff, 't', 'O', 'c', 0, 0, 0, 2)
	var fan [256]uint32
	for _, o := range objs {
		fan[o.id[0]]++
	}
	total := uint32(0)
	for i := range fan {
		total += fan[i]
		b = bin.BigEndian.AppendUint32(b, total)
	}
	for _, o := range objs {
		b = append(b, o.id[:]...)
	}
	for _, o := range objs {
		b = bin.BigEndian.AppendUint32(b, o.crc)
	}
	var large []int64
	for _, o := range objs {
		if o.off < 1<<31 {
			b = bin.BigEndian.AppendUint32(b, uint32(o.off))
		} else {
			b = bin.BigEndian.AppendUint32(b, 1<<31|uint32(len(large)))
			large = append(large, o.off)
		}
	}
	for _, off := range large {
		b = bin.BigEndian.AppendUint64(b, uint64(off))
	}
	b = append(b, packSum[:]...)
	sum := sha1.Sum(b)
	return append(b, sum[:]...)
}

// packs counts the store's pack files.
func packs(objects string) int {
	des, _ := os.ReadDir(filepath.Join(objects, "pack"))
	n := 0
	for _, de := range des {
		if filepath.Ext(de.Name()) == ".idx" {
			n++
		}
	}
	return n
}
