package session

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLinesMatchesRecords: Lines hands over the same events as Records,
// from any starting point, for lines shorter and far longer than its
// buffer, whether fn reads a line whole, partly or not at all.
func TestLinesMatchesRecords(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "s.events.jsonl"))
	for i, n := range []int{0, 1, 100, 511, 512, 513, 64 << 10, 300 << 10, 5, 1 << 20, 7} {
		if _, err := l.Append(fmt.Appendf(nil, `{"type":"t","i":%d,"text":%q}`, i, strings.Repeat("é", n/2))); err != nil {
			t.Fatal(err)
		}
	}
	for _, after := range []int64{0, 1, 5, 10, 11, 99} {
		want, err := l.ReadAfter(after)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"whole", "partly", "not", "writeTo"} {
			var got []Record
			err := l.Lines(after, func(seq int64, line io.Reader) error {
				var b []byte
				var err error
				switch mode {
				case "whole":
					b, err = io.ReadAll(line)
				case "partly":
					b = make([]byte, 10)
					_, err = io.ReadFull(line, b)
				case "writeTo":
					var sb strings.Builder
					_, err = line.(io.WriterTo).WriteTo(&sb)
					b = []byte(sb.String())
				}
				got = append(got, Record{Seq: seq, Event: b})
				return err
			})
			if err != nil {
				t.Fatalf("after %d, %s: %v", after, mode, err)
			}
			if len(got) != len(want) {
				t.Fatalf("after %d, %s: %d lines, want %d", after, mode, len(got), len(want))
			}
			for i := range want {
				w := want[i].Event
				switch mode {
				case "partly":
					w = w[:10]
				case "not":
					w = nil
				}
				if got[i].Seq != want[i].Seq || string(got[i].Event) != string(w) {
					t.Fatalf("after %d, %s: line %d = seq %d %.40q, want seq %d %.40q", after, mode, i, got[i].Seq, got[i].Event, want[i].Seq, w)
				}
			}
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := l.Lines(0, func(int64, io.Reader) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("fn's error: %v after %d lines", err, n)
	}
	l.Close()
	if err := l.Lines(0, func(int64, io.Reader) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Lines after Close: %v", err)
	}
}

// TestLinesHoldsNoLineWhole: walking a log of 4 MB lines allocates about
// one buffer, not the lines.
func TestLinesHoldsNoLineWhole(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "s.events.jsonl"))
	for range 4 {
		if _, err := l.Append(fmt.Appendf(nil, `{"text":%q}`, strings.Repeat("x", 4<<20))); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	buf := make([]byte, 4096)
	total := 0
	err := l.Lines(0, func(_ int64, line io.Reader) error {
		for {
			n, err := line.Read(buf)
			total += n
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	})
	runtime.ReadMemStats(&after)
	if err != nil || total < 16<<20 {
		t.Fatalf("read %d bytes: %v", total, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
		t.Errorf("walking 16 MB of lines allocated %d KB", got>>10)
	}
}
