package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func openLog(t testing.TB, path string) *EventLog {
	t.Helper()
	l, err := OpenEventLog(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestAppendFormat(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`{"type":"chat:delta","text":"hi"}`, `{"seq":1,"type":"chat:delta","text":"hi"}`},
		{"{\n  \"type\": \"x\",\n  \"n\": [1, 2]\n}", `{"seq":2,"type":"x","n":[1,2]}`},
		{`{}`, `{"seq":3}`},
		{` { } `, `{"seq":4}`},
		{`{"text":"line\nbreak \"seq\":9"}`, `{"seq":5,"text":"line\nbreak \"seq\":9"}`},
		{`{"nested":{"seq":1},"list":[{"seq":2}]}`, `{"seq":6,"nested":{"seq":1},"list":[{"seq":2}]}`},
	}
	path := filepath.Join(t.TempDir(), "s.events.jsonl")
	l := openLog(t, path)
	for i, tt := range tests {
		seq, err := l.Append([]byte(tt.in))
		if err != nil {
			t.Fatalf("Append(%s): %v", tt.in, err)
		}
		if seq != int64(i+1) {
			t.Errorf("seq = %d, want %d", seq, i+1)
		}
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, tt := range tests {
		if lines[i] != tt.want {
			t.Errorf("line %d = %s, want %s", i+1, lines[i], tt.want)
		}
		if !json.Valid([]byte(lines[i])) {
			t.Errorf("line %d is not valid JSON", i+1)
		}
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestAppendRejects(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "e.jsonl"))
	for _, in := range []string{``, `[]`, `"str"`, `42`, `null`, `{"a":`, `{"a":1}{"b":2}`, `{"seq":3}`, `{"a":1,"seq":3}`, `{"se\u0071":3}`} {
		if _, err := l.Append([]byte(in)); !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("Append(%s): err = %v, want ErrInvalidEvent", in, err)
		}
	}
	if l.LastSeq() != 0 {
		t.Errorf("rejected events consumed seqs: %d", l.LastSeq())
	}
}

func appendN(t testing.TB, l *EventLog, n int) {
	t.Helper()
	for i := range n {
		if _, err := l.Append(fmt.Appendf(nil, `{"type":"chat:delta","i":%d,"text":%q}`, i, strings.Repeat("x", i%37))); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadAfter(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "e.jsonl"))
	if recs, err := l.ReadAfter(0); err != nil || len(recs) != 0 {
		t.Fatalf("empty log: %v %v", recs, err)
	}
	const n = 200
	appendN(t, l, n)
	// Every resume point, including before the start and past the end,
	// must give exactly the events after it (checks the binary search).
	for after := int64(-1); after <= n+1; after++ {
		recs, err := l.ReadAfter(after)
		if err != nil {
			t.Fatal(err)
		}
		wantLen := max(0, min(n, n-int(after)))
		if len(recs) != wantLen {
			t.Fatalf("ReadAfter(%d): %d records, want %d", after, len(recs), wantLen)
		}
		for i, r := range recs {
			want := max(after, 0) + int64(i) + 1
			if r.Seq != want {
				t.Fatalf("ReadAfter(%d)[%d].Seq = %d, want %d", after, i, r.Seq, want)
			}
			var m map[string]any
			if err := json.Unmarshal(r.Event, &m); err != nil || m["seq"] != float64(want) || m["i"] != float64(want-1) {
				t.Fatalf("record %d: %s (%v)", want, r.Event, err)
			}
		}
	}
	// Stopping early.
	count := 0
	for _, err := range l.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		if count++; count == 3 {
			break
		}
	}
	if count != 3 {
		t.Errorf("iteration did not stop: %d", count)
	}
}

func TestReadAfterLargeEvents(t *testing.T) {
	// Lines longer than the scan chunk exercise the chunked searches.
	l := openLog(t, filepath.Join(t.TempDir(), "e.jsonl"))
	big := strings.Repeat("y", 3*scanChunk+17)
	for i := range 6 {
		if _, err := l.Append(fmt.Appendf(nil, `{"i":%d,"big":%q}`, i, big)); err != nil {
			t.Fatal(err)
		}
	}
	for after := int64(0); after <= 6; after++ {
		recs, err := l.ReadAfter(after)
		if err != nil || len(recs) != int(6-after) || (len(recs) > 0 && recs[0].Seq != after+1) {
			t.Fatalf("ReadAfter(%d) = %d records, %v", after, len(recs), err)
		}
	}
	l.Close()
	l2 := openLog(t, l.Path())
	if l2.LastSeq() != 6 {
		t.Errorf("recovered seq %d, want 6", l2.LastSeq())
	}
}

func TestSeqContinuesAfterRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.jsonl")
	l, _ := OpenEventLog(path)
	appendN(t, l, 10)
	l.Close()

	l2 := openLog(t, path)
	if l2.LastSeq() != 10 {
		t.Fatalf("LastSeq after reopen = %d, want 10", l2.LastSeq())
	}
	seq, err := l2.Append([]byte(`{"type":"after"}`))
	if err != nil || seq != 11 {
		t.Fatalf("Append after reopen = %d, %v; want 11", seq, err)
	}
}

func TestTornTail(t *testing.T) {
	tests := []struct {
		name     string
		content  string
		wantSeq  int64
		wantData string
	}{
		{"empty file", "", 0, ""},
		{"only a torn line", `{"seq":1,"ty`, 0, ""},
		{"torn after whole lines", "{\"seq\":1}\n{\"seq\":2,\"a\":1}\n{\"seq\":3,\"a\"", 2, "{\"seq\":1}\n{\"seq\":2,\"a\":1}\n"},
		{"garbage last line is skipped for seq", "{\"seq\":1}\n{\"seq\":2}\ngarbage\n", 2, "{\"seq\":1}\n{\"seq\":2}\ngarbage\n"},
		{"torn seq number", "{\"seq\":7}\n{\"seq\":8", 7, "{\"seq\":7}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "e.jsonl")
			os.WriteFile(path, []byte(tt.content), 0o600)
			l := openLog(t, path)
			if l.LastSeq() != tt.wantSeq {
				t.Errorf("LastSeq = %d, want %d", l.LastSeq(), tt.wantSeq)
			}
			data, _ := os.ReadFile(path)
			if string(data) != tt.wantData {
				t.Errorf("file = %q, want %q", data, tt.wantData)
			}
			seq, err := l.Append([]byte(`{"next":true}`))
			if err != nil || seq != tt.wantSeq+1 {
				t.Errorf("next Append = %d, %v", seq, err)
			}
			recs, err := l.ReadAfter(tt.wantSeq)
			if err != nil || len(recs) != 1 || string(recs[0].Event) != fmt.Sprintf(`{"seq":%d,"next":true}`, tt.wantSeq+1) {
				t.Errorf("ReadAfter = %v, %v", recs, err)
			}
		})
	}
}

func TestConcurrentAppendAndRead(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "e.jsonl"))
	const writers, each = 8, 250
	var wg sync.WaitGroup
	seqs := make(chan int64, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				seq, err := l.Append(fmt.Appendf(nil, `{"w":%d,"i":%d}`, w, i))
				if err != nil {
					t.Error(err)
					return
				}
				seqs <- seq
			}
		}()
	}
	// Readers run during the appends: what they see is always a gapless
	// prefix 1..k of whole events.
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	for range 2 {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				recs, err := l.ReadAfter(0)
				if err != nil {
					t.Error(err)
					return
				}
				for i, r := range recs {
					if r.Seq != int64(i+1) || !json.Valid(r.Event) {
						t.Errorf("reader saw seq %d at index %d (%s)", r.Seq, i, r.Event)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(seqs)
	seen := map[int64]bool{}
	for s := range seqs {
		if seen[s] {
			t.Fatalf("seq %d returned twice", s)
		}
		seen[s] = true
	}
	recs, _ := l.ReadAfter(0)
	if len(recs) != writers*each || l.LastSeq() != writers*each {
		t.Errorf("%d records, LastSeq %d, want %d", len(recs), l.LastSeq(), writers*each)
	}
}

func TestEventLogClose(t *testing.T) {
	l, _ := OpenEventLog(filepath.Join(t.TempDir(), "e.jsonl"))
	appendN(t, l, 2)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := l.Append([]byte(`{}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v", err)
	}
	if _, err := l.ReadAfter(0); !errors.Is(err, ErrClosed) {
		t.Errorf("ReadAfter after Close: %v", err)
	}
	if err := l.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close: %v", err)
	}
}

func TestStoreEventLogShared(t *testing.T) {
	st := newStore(t)
	root := t.TempDir()
	s, _ := st.Create(root, "", "workbench")
	a, err := st.EventLog(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := st.EventLog(s.ID)
	if a != b {
		t.Error("two EventLog calls gave two writers for one session")
	}
	a.Append([]byte(`{"x":1}`))
	a.Close() // a caller closed it anyway: the store reopens
	c, err := st.EventLog(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if seq, _ := c.Append([]byte(`{"x":2}`)); seq != 2 {
		t.Errorf("seq after reopen = %d, want 2", seq)
	}
	if c.Path() != EventLogPath(root, s.ID) {
		t.Errorf("path %s", c.Path())
	}
	if _, err := st.EventLog("0b8f3a2e-1c4d-4e5f-8a9b-0c1d2e3f4a5b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("EventLog of unknown session: %v", err)
	}
}

func BenchmarkAppend(b *testing.B) {
	l := openLog(b, filepath.Join(b.TempDir(), "e.jsonl"))
	ev := []byte(`{"type":"chat:delta","sessionId":"0b8f3a2e-1c4d-4e5f-8a9b-0c1d2e3f4a5b","text":"Hello, this is a token or two"}`)
	for b.Loop() {
		if _, err := l.Append(ev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadAfterNearEnd(b *testing.B) {
	l := openLog(b, filepath.Join(b.TempDir(), "e.jsonl"))
	appendN(b, l, 200000)
	for b.Loop() {
		recs, err := l.ReadAfter(199990)
		if err != nil || len(recs) != 10 {
			b.Fatal(len(recs), err)
		}
	}
}
