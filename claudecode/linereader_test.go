package claudecode

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

// pipeLike hands out its lines one write at a time, as a child that
// prints a line and waits does: a read never returns more than one line.
type pipeLike struct{ lines [][]byte }

func (p *pipeLike) Read(b []byte) (int, error) {
	if len(p.lines) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.lines[0])
	if p.lines[0] = p.lines[0][n:]; len(p.lines[0]) == 0 {
		p.lines = p.lines[1:]
	}
	return n, nil
}

// The line reader starts small and grows its buffer only for a child that
// writes faster than it is read or a line longer than the buffer; every
// line comes out whole either way, whatever the reads return.
func TestLineReaderStartsSmallAndGrows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var lines [][]byte
	var all bytes.Buffer
	for i := range 400 {
		n := 1 + r.IntN(300)
		if i%37 == 0 {
			n = startBufSize - 1 + r.IntN(3*lineBufSize) // around and past each buffer's size
		}
		line := []byte(strings.Repeat(string(rune('a'+i%26)), n) + "\n")
		lines = append(lines, line)
		all.Write(line)
	}
	read := func(src io.Reader) (*lineReader, [][]byte) {
		lr := newLineReader(src, 1<<20)
		var got [][]byte
		for {
			line, err := lr.next()
			if errors.Is(err, io.EOF) {
				return lr, got
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, append([]byte(nil), line...))
		}
	}
	check := func(name string, got [][]byte) {
		t.Helper()
		if len(got) != len(lines) {
			t.Fatalf("%s: %d lines, want %d", name, len(got), len(lines))
		}
		for i := range got {
			if !bytes.Equal(got[i], bytes.TrimSuffix(lines[i], []byte("\n"))) {
				t.Fatalf("%s: line %d is %d bytes, want %d", name, i, len(got[i]), len(lines[i])-1)
			}
		}
	}

	// Short lines one at a time: the buffer stays small.
	short := &pipeLike{}
	for i := range 200 {
		short.lines = append(short.lines, []byte(strings.Repeat("x", 1+i%200)+"\n"))
	}
	lr, got := read(short)
	if len(got) != 200 {
		t.Fatalf("%d short lines, want 200", len(got))
	}
	if lr.br.Size() != startBufSize {
		t.Errorf("one short line per read: buffer %d bytes, want %d", lr.br.Size(), startBufSize)
	}

	// Everything at once (a long stream): it grows, and loses nothing.
	lr, got = read(bytes.NewReader(all.Bytes()))
	check("bulk", got)
	if lr.br.Size() != lineBufSize {
		t.Errorf("bulk reads: buffer %d bytes, want %d", lr.br.Size(), lineBufSize)
	}
	// Odd read sizes across the growth.
	_, got = read(iotest.HalfReader(bytes.NewReader(all.Bytes())))
	check("half reads", got)
	_, got = read(iotest.OneByteReader(bytes.NewReader(all.Bytes())))
	check("one byte reads", got)
	// One line at a time, some longer than the small buffer.
	lr, got = read(&pipeLike{lines: func() [][]byte {
		var c [][]byte
		for _, l := range lines {
			c = append(c, append([]byte(nil), l...))
		}
		return c
	}()})
	check("line at a time", got)
	if lr.br.Size() != lineBufSize {
		t.Errorf("a line past the small buffer: buffer %d bytes, want %d", lr.br.Size(), lineBufSize)
	}
}
