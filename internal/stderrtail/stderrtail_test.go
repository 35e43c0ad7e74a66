package stderrtail_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/internal/stderrtail"
)

func TestReadScrubsLogsAndBounds(t *testing.T) {
	var in strings.Builder
	in.WriteString("key sk-abcdef leaked\r\n")
	in.WriteString(strings.Repeat("x", stderrtail.MaxLine+500) + "\n") // a huge line does not stop the reader
	for i := 0; i < stderrtail.Lines; i++ {
		fmt.Fprintf(&in, "line %d\n", i)
	}
	in.WriteString("last without newline")
	var logs bytes.Buffer
	tl := stderrtail.New([]string{"sk-abcdef", "ab"})
	tl.Read(strings.NewReader(in.String()), zerolog.New(&logs).Level(zerolog.DebugLevel), "agent stderr")

	if strings.Contains(logs.String(), "sk-abcdef") || !strings.Contains(logs.String(), "key [REDACTED] leaked") {
		t.Errorf("the secret was not scrubbed from the log: %.200s", logs.String())
	}
	got := tl.String()
	if !strings.HasSuffix(got, "line 19\nlast without newline") {
		t.Errorf("tail ends %q", got[max(0, len(got)-60):])
	}
	if strings.Contains(got, "line 0\n") || len(got) > stderrtail.MaxTail {
		t.Errorf("tail not bounded: %d bytes, first line 0 kept: %v", len(got), strings.Contains(got, "line 0\n"))
	}
	if tl.Scrub("ab cd") != "ab cd" {
		t.Error("a secret shorter than 4 bytes was scrubbed")
	}
}

// Lines are logged at Level: debug by default (they do not show at info),
// the level an engine sets otherwise.
func TestReadLogsAtLevel(t *testing.T) {
	var quiet, warned bytes.Buffer
	stderrtail.New(nil).Read(strings.NewReader("boom\n"), zerolog.New(&quiet).Level(zerolog.InfoLevel), "agent stderr")
	if quiet.Len() != 0 {
		t.Errorf("a debug line was logged at info: %s", quiet.String())
	}
	tl := stderrtail.New(nil)
	tl.Level = zerolog.WarnLevel
	tl.Read(strings.NewReader("boom\n"), zerolog.New(&warned).Level(zerolog.InfoLevel), "agent stderr")
	if !strings.Contains(warned.String(), `"level":"warn"`) || !strings.Contains(warned.String(), `"line":"boom"`) {
		t.Errorf("the line at warn level: %q", warned.String())
	}
}
