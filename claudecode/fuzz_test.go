package claudecode_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/event"
)

// addTranscriptSeeds seeds a fuzz target with every line the real CLI
// printed in the recorded transcripts.
func addTranscriptSeeds(f *testing.F) {
	paths, _ := filepath.Glob("testdata/transcripts/*.ndjson")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			f.Add(append([]byte(nil), sc.Bytes()...))
		}
	}
}

// FuzzDecoder feeds arbitrary input to the decoder: it must never panic,
// never fail (bad lines are skipped), and only ever produce events whose
// JSON is valid and decodes back to the same event.
func FuzzDecoder(f *testing.F) {
	addTranscriptSeeds(f)
	f.Add([]byte("{\"type\":\"stream_event\"\n\n{}\n[1,2]\n\"x\"\n{\"type\":\"result\",\"subtype\":\"success\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := claudecode.NewDecoder(bytes.NewReader(data), claudecode.DecoderOptions{SessionID: "fz", MaxLineBytes: 1 << 16})
		for d.Next() {
			e := d.Event()
			b := e.AppendJSON(nil)
			if !json.Valid(b) {
				t.Fatalf("invalid event JSON %q", b)
			}
			var back event.Event
			if err := json.Unmarshal(b, &back); err != nil || back.Type != e.Type {
				t.Fatalf("event %q does not decode back: %v", b, err)
			}
		}
		if err := d.Err(); err != nil {
			t.Fatalf("decoder failed on in-memory input: %v", err)
		}
	})
}

// FuzzTextValue checks the hand-written scanner against encoding/json on
// the hottest field: a text_delta's text. Whatever raw value the fuzzer
// puts there, the decoder must agree with encoding/json: the same string
// when encoding/json accepts the line, a skipped line when it rejects it.
func FuzzTextValue(f *testing.F) {
	for _, s := range []string{`"plain"`, `"esc \" \\ \/ \b\f\n\r\t"`, `"\u00e9\ud83c\udf89"`, `"\ud800"`, `"\udc00\ud800x"`, "\"raw \xff\"", `"a`, `1`, `null`, `"\u12"`, `"\x"`, "\"ctl \x01\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		line := append([]byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`), raw...)
		line = append(line, "}}}"...)
		if bytes.ContainsAny(raw, "\n\r") {
			return // a newline splits the line: another test's business
		}
		var ref struct {
			Event struct {
				Delta struct {
					Text *string `json:"text"`
				} `json:"delta"`
			} `json:"event"`
		}
		refErr := json.Unmarshal(line, &ref)
		var lineErrs int
		d := claudecode.NewDecoder(bytes.NewReader(line), claudecode.DecoderOptions{OnLineError: func(*claudecode.LineError) { lineErrs++ }})
		var got []string
		for d.Next() {
			got = append(got, d.Event().Text)
		}
		switch {
		case refErr != nil:
			if len(got) != 0 || lineErrs != 1 {
				t.Fatalf("encoding/json rejects %q (%v) but the decoder gave %q with %d errors", line, refErr, got, lineErrs)
			}
		case ref.Event.Delta.Text == nil: // null
			if len(got) != 1 || got[0] != "" {
				t.Fatalf("null text gave %q", got)
			}
		default:
			if len(got) != 1 || got[0] != *ref.Event.Delta.Text {
				t.Fatalf("text %q: decoder %q, encoding/json %q", raw, got, *ref.Event.Delta.Text)
			}
		}
	})
}

// FuzzRepeatedStrings checks the decoder's reuse of the strings lines
// repeat (frame and event types, the session id): raw values a and b go,
// on alternating lines, into a frame's session_id and into a delta's
// type. Each line of the stream must decode as it does alone, in a fresh
// decoder (no state carried from the lines before changes it), and as
// encoding/json decodes it when encoding/json accepts it.
func FuzzRepeatedStrings(f *testing.F) {
	for _, s := range [][2]string{
		{`"s1"`, `"s1"`},
		{`"s1"`, `"s2"`},
		{`"text_delta"`, `"text\u005fdelta"`},
		{`"text\u005fdelta"`, `"text_delta"`},
		{"\"raw \xff\"", "\"raw \xfe\""},
		{`""`, `null`},
		{`"a\"b"`, `"a\\"`},
		{`1`, `"x"`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	type result struct {
		sid   string
		err   bool
		delta bool
	}
	decode := func(in []byte) []result {
		var rs []result
		d := claudecode.NewDecoder(bytes.NewReader(in), claudecode.DecoderOptions{
			SessionID:   "fz",
			OnFrame:     func(fr claudecode.Frame) { rs = append(rs, result{sid: fr.SessionID}) },
			OnLineError: func(*claudecode.LineError) { rs = append(rs, result{err: true}) },
		})
		for d.Next() {
			if d.Event().Type == event.TypeChatDelta && len(rs) > 0 {
				rs[len(rs)-1].delta = true
			}
		}
		return rs
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if bytes.ContainsAny(a, "\n\r") || bytes.ContainsAny(b, "\n\r") {
			return // a newline splits the line
		}
		sidLine := func(raw []byte) []byte {
			l := append([]byte(`{"type":"stream_event","session_id":`), raw...)
			return append(l, `,"event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"t"}}}`...)
		}
		typLine := func(raw []byte) []byte {
			l := append([]byte(`{"type":"stream_event","session_id":"s","event":{"type":"content_block_delta","index":0,"delta":{"type":`), raw...)
			return append(l, `,"text":"t"}}}`...)
		}
		var lines [][]byte
		var in []byte
		for _, raw := range [][]byte{a, b, a, b} {
			for _, l := range [][]byte{sidLine(raw), typLine(raw)} {
				lines = append(lines, l)
				in = append(append(in, l...), '\n')
			}
		}
		streamed := decode(in)
		if len(streamed) != len(lines) {
			t.Fatalf("%d lines, %d frames or errors: %+v", len(lines), len(streamed), streamed)
		}
		for i, l := range lines {
			alone := decode(l)
			if len(alone) != 1 || alone[0] != streamed[i] {
				t.Fatalf("line %d %q: in the stream %+v, alone %+v", i, l, streamed[i], alone)
			}
			var ref struct {
				SessionID *string `json:"session_id"`
				Event     struct {
					Delta struct {
						Type *string `json:"type"`
					} `json:"delta"`
				} `json:"event"`
			}
			if json.Unmarshal(l, &ref) != nil {
				continue // what the decoder does with it is the fresh decoder's
			}
			want := result{delta: ref.Event.Delta.Type != nil && *ref.Event.Delta.Type == "text_delta"}
			if ref.SessionID != nil {
				want.sid = *ref.SessionID
			}
			if streamed[i] != want {
				t.Fatalf("line %d %q: decoder %+v, encoding/json %+v", i, l, streamed[i], want)
			}
		}
	})
}

// FuzzStreamEventLine holds the decoder's one walk of a stream_event line
// (its event and the event's delta read on the way) to encoding/json:
// whenever encoding/json decodes the line, as objects whose last
// duplicate member wins, into the fields the decoder reads with the types
// it wants, the decoder must give a chat:delta with the same text exactly
// when the line is a text_delta, and report no error for a
// content_block_delta. Lines with a
// backslash are left to FuzzTextValue (encoding/json unescapes keys, the
// decoder matches them as they are).
func FuzzStreamEventLine(f *testing.F) {
	addTranscriptSeeds(f)
	for _, s := range []string{
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}},"session_id":"s","parent_tool_use_id":null,"uuid":"u"}`,
		`{"event":{"delta":{"text":"a","type":"text_delta"},"type":"content_block_delta","index":1},"type":"stream_event"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"a"},"delta":{"type":"text_delta","text":"b"}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"a"}},"event":{"type":"message_stop"}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":null}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"\u00e9"}}}`,
	} {
		f.Add([]byte(s))
	}
	// object decodes raw as an object whose members named in strs are
	// strings or null (decoded into strs) and in objs objects.
	object := func(raw []byte, strs map[string]*string, objs map[string]*[]byte) bool {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil || m == nil {
			return false
		}
		for k, v := range m {
			if p, ok := strs[k]; ok {
				var s *string
				if json.Unmarshal(v, &s) != nil {
					return false
				}
				if s != nil {
					*p = *s
				}
			}
			if p, ok := objs[k]; ok {
				if len(v) == 0 || v[0] != '{' {
					return false
				}
				*p = v
			}
		}
		return true
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.ContainsAny(line, "\n\r\\") || bytes.Contains(line, []byte(`"thinking"`)) {
			return
		}
		var typ, sid, parent, uuid, evType, dType, text string
		var ev, delta []byte
		if !object(line, map[string]*string{"type": &typ, "subtype": new(string), "session_id": &sid, "parent_tool_use_id": &parent, "uuid": &uuid}, map[string]*[]byte{"event": &ev}) ||
			typ != "stream_event" || ev == nil {
			return
		}
		var evm map[string]json.RawMessage
		_ = json.Unmarshal(ev, &evm)
		if idx := evm["index"]; idx != nil && string(idx) != "null" {
			if _, err := strconv.Atoi(string(idx)); err != nil {
				return // the decoder stops reading the event there
			}
		}
		if !object(ev, map[string]*string{"type": &evType}, map[string]*[]byte{"delta": &delta}) {
			return
		}
		var want []string
		if evType == "content_block_delta" && delta != nil {
			if !object(delta, map[string]*string{"type": &dType, "text": &text}, nil) {
				return
			}
			var dm map[string]json.RawMessage
			_ = json.Unmarshal(delta, &dm)
			if _, ok := dm["text"]; ok && dType == "text_delta" {
				want = []string{text}
			}
		}
		var lineErr error
		d := claudecode.NewDecoder(bytes.NewReader(line), claudecode.DecoderOptions{OnLineError: func(e *claudecode.LineError) { lineErr = e }})
		var got []string
		for d.Next() {
			if d.Event().Type == event.TypeChatDelta {
				got = append(got, d.Event().Text)
			}
		}
		// Other events' members (content_block, message) the decoder
		// reads with types of its own: their errors are not this test's.
		if lineErr != nil && evType == "content_block_delta" || !slices.Equal(got, want) {
			t.Fatalf("line %q: decoder %q (error %v), encoding/json %q", line, got, lineErr, want)
		}
	})
}
