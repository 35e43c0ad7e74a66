package claudecode

import (
	"os"
	"strings"
	"testing"
)

// BenchmarkSkipDeltaLine is the floor under the decoder's walk of a
// text_delta line: the scanner skipping the line as one value, no member
// looked at.
func BenchmarkSkipDeltaLine(b *testing.B) {
	raw, err := os.ReadFile("testdata/transcripts/text.ndjson")
	if err != nil {
		b.Fatal(err)
	}
	var line []byte
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.Contains(l, `"text_delta"`) {
			line = []byte(l)
			break
		}
	}
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := skipValue(line, 0); err != nil {
			b.Fatal(err)
		}
	}
}
