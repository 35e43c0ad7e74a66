package claudecode_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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
