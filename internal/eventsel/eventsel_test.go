package eventsel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/chirality/harness/event"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []event.Type // sent besides Spec
		all  bool
	}{
		{in: ""},
		{in: " , "},
		{in: "all", all: true},
		{in: "usage, all", all: true},
		{in: "approval", want: []event.Type{event.TypeApprovalRequested, event.TypeApprovalResolved}},
		{in: "approval,usage", want: []event.Type{event.TypeApprovalRequested, event.TypeApprovalResolved, event.TypeUsageUpdate, event.TypeRateLimit}},
		{in: "thinking:delta,chat:delta", want: []event.Type{event.TypeThinkingDelta}},
		{in: "plan,plan:ready", want: []event.Type{event.TypePlanReady, event.TypePlanResolved}},
	} {
		s, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if s.All() != tc.all {
			t.Errorf("Parse(%q).All() = %v", tc.in, s.All())
		}
		for _, typ := range event.Types {
			want := tc.all || slices.Contains(Spec, typ) || slices.Contains(tc.want, typ)
			if s.Has(string(typ)) != want {
				t.Errorf("Parse(%q).Has(%s) = %v, want %v", tc.in, typ, !want, want)
			}
		}
		if s.Has("some:future") != tc.all {
			t.Errorf("Parse(%q).Has(a later type) = %v, want %v", tc.in, !tc.all, tc.all)
		}
	}
	for _, bad := range []string{"al", "ALL", "usage,aproval", "chat", strings.Repeat("usage,", 200)} {
		if _, err := Parse(bad); !errors.Is(err, ErrBadEvents) {
			t.Errorf("Parse(%q) = %v, want ErrBadEvents", bad, err)
		}
	}
}

// Every extension type belongs to a group, and no group names a spec
// type: a client can ask for any type by a group name.
func TestGroupsCoverTheExtensions(t *testing.T) {
	grouped := map[event.Type]string{}
	for g, types := range Groups {
		for _, typ := range types {
			if slices.Contains(Spec, typ) {
				t.Errorf("group %s names the spec type %s", g, typ)
			}
			if prev, ok := grouped[typ]; ok {
				t.Errorf("%s is in groups %s and %s", typ, prev, g)
			}
			grouped[typ] = g
		}
	}
	for _, typ := range event.Types {
		if _, ok := grouped[typ]; !ok && !slices.Contains(Spec, typ) {
			t.Errorf("extension type %s is in no group", typ)
		}
	}
	if len(Spec) != 8 {
		t.Errorf("Spec has %d types; 004's UIEvent union has 8", len(Spec))
	}
}

func TestFromRequest(t *testing.T) {
	r := httptest.NewRequest("GET", "/x?events=usage&events=approval&after=3", nil)
	s, err := FromRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Has("usage:update") || !s.Has("approval:requested") || s.Has("thinking:delta") {
		t.Errorf("both values should count, nothing else: %+v", s)
	}
	if _, err := FromRequest(httptest.NewRequest("GET", "/x?events=nope", nil)); err == nil {
		t.Error("an unknown name must be refused")
	}
}

// The type of every event as the core encodes and stores it is read
// from the line's start.
func TestTypeOfStoredLines(t *testing.T) {
	for _, typ := range event.Types {
		ev := event.Event{Type: typ, SessionID: "s", Text: strings.Repeat("x", 100), Time: 1}
		b, _ := json.Marshal(ev)
		line := append([]byte(`{"seq":12345678901234,`), b[1:]...)
		for _, l := range [][]byte{line, b} {
			got, ok := TypeOf(l)
			if !ok || got != string(typ) {
				t.Errorf("TypeOf(%s) = %q, %v", l, got, ok)
			}
		}
		if got, ok := TypeOf(line[:min(peekLen, len(line))]); !ok || got != string(typ) {
			t.Errorf("TypeOf of the first %d bytes of %s = %q, %v", peekLen, line, got, ok)
		}
	}
	for _, bad := range []string{``, `{`, `{"seq":1}`, `{"seq":,"type":"x"}`, `{"seq":1,"sessionId":"s","type":"chat:delta"}`, `{"seq":1,"type":"chat:del`, `{"seq":1,"type":"a\"b"}`, `{"seq":1,"type":""}`, `["type"]`} {
		if got, ok := TypeOf([]byte(bad)); ok {
			t.Errorf("TypeOf(%s) = %q, want not ok", bad, got)
		}
	}
}

func TestPeek(t *testing.T) {
	long := `{"seq":7,"type":"chat:delta","sessionId":"s","text":"` + strings.Repeat("y", 100000) + `"}`
	usage := `{"seq":8,"type":"usage:update","sessionId":"s"}`
	for _, tc := range []struct {
		sel  Set
		line string
		send bool
	}{
		{Default, long, true},
		{Default, usage, false},
		{Default, `{"seq":9}`, false},
		{Everything, `{"seq":9}`, true},
		{Default, `{"seq":1,"type":"process:exit"}`, true}, // shorter than peekLen
	} {
		// one byte at a time: Peek must read on until it has the start
		for _, r := range []io.Reader{strings.NewReader(tc.line), iotest.OneByteReader(strings.NewReader(tc.line))} {
			send, line, err := tc.sel.Peek(r)
			if err != nil || send != tc.send {
				t.Fatalf("Peek(%.40s) = %v, %v; want %v", tc.line, send, err, tc.send)
			}
			if !send {
				continue
			}
			var out bytes.Buffer
			if _, err := io.Copy(&out, line); err != nil || out.String() != tc.line {
				t.Fatalf("the line read back is %d bytes (%v), want the %d of the line", out.Len(), err, len(tc.line))
			}
		}
	}
	// a read error is returned
	if _, _, err := Default.Peek(iotest.ErrReader(errors.New("disk"))); err == nil {
		t.Error("a read error must be returned")
	}
}

func FuzzTypeOf(f *testing.F) {
	f.Add([]byte(`{"seq":1,"type":"chat:delta","sessionId":"s","text":"hi"}`))
	f.Add([]byte(`{"type":"usage:update"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		typ, ok := TypeOf(line)
		if !ok {
			return
		}
		if typ == "" || strings.ContainsAny(typ, "\"\\") {
			t.Fatalf("TypeOf(%q) = %q", line, typ)
		}
		// What it read is what a JSON decoder reads, for valid JSON
		// (which replaces invalid UTF-8, no such type is ever sent, and
		// takes the last of duplicate keys, which no log line has).
		var v struct {
			Type *string `json:"type"`
		}
		if utf8.ValidString(typ) && bytes.Count(line, []byte(`"type"`)) == 1 && json.Unmarshal(line, &v) == nil && (v.Type == nil || *v.Type != typ) {
			t.Fatalf("TypeOf(%q) = %q; json reads %v", line, typ, v.Type)
		}
		if !Default.HasLine(line) && slices.Contains(Spec, event.Type(typ)) {
			t.Fatalf("a spec line %q is left out", line)
		}
	})
}

// writes records what Send did.
type writes struct{ got []string }

func (w *writes) Event(id int64, data []byte, flush bool) error {
	w.got = append(w.got, fmt.Sprintf("event %d flush=%v", id, flush))
	return nil
}

func (w *writes) Flush() error {
	w.got = append(w.got, "flush")
	return nil
}

// A burst whose last record is left out is still flushed: the events
// before it must not wait for the next write (a turn that waits for an
// approval writes nothing for minutes).
func TestSendFlushesABurstEndingInALeftOutRecord(t *testing.T) {
	recs := []struct {
		line string
		more bool
	}{
		{`{"seq":1,"type":"user:message"}`, true},
		{`{"seq":2,"type":"session:init"}`, true},
		{`{"seq":3,"type":"tool:start"}`, true},
		{`{"seq":4,"type":"approval:requested"}`, false}, // the burst's end
		{`{"seq":5,"type":"usage:update"}`, true},        // left out, more follows: nothing
		{`{"seq":6,"type":"chat:delta"}`, false},
	}
	for _, tc := range []struct {
		sel  Set
		want []string
	}{
		{Default, []string{"event 2 flush=false", "event 3 flush=false", "flush", "event 6 flush=true"}},
		{Everything, []string{"event 1 flush=false", "event 2 flush=false", "event 3 flush=false", "event 4 flush=true", "event 5 flush=false", "event 6 flush=true"}},
	} {
		var w writes
		for i, r := range recs {
			if err := tc.sel.Send(&w, int64(i+1), []byte(r.line), r.more); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(w.got, tc.want) {
			t.Errorf("Send wrote %q, want %q", w.got, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{"", "all", "approval,usage", " thinking:delta , plan", "nope", "usage,,all"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, err := Parse(v)
		if err != nil {
			if !errors.Is(err, ErrBadEvents) {
				t.Fatalf("Parse(%q): %v is not ErrBadEvents", v, err)
			}
			return
		}
		for _, typ := range Spec {
			if !s.Has(string(typ)) {
				t.Fatalf("Parse(%q) leaves out the spec type %s", v, typ)
			}
		}
		// Every name it took is a group, a type or all.
		for item := range strings.SplitSeq(v, ",") {
			item = strings.TrimSpace(item)
			if item != "" && item != All && Groups[item] == nil && !slices.Contains(event.Types, event.Type(item)) {
				t.Fatalf("Parse(%q) took %q", v, item)
			}
		}
	})
}
