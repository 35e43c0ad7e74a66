package claudecode_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/golden")

// TestGoldenTranscripts decodes every transcript recorded from the real
// CLI (testdata/transcripts, see TestContractLiveMatchesRecording) and compares the UI
// events with testdata/golden/<name>.events.jsonl.
func TestGoldenTranscripts(t *testing.T) {
	paths, err := filepath.Glob("testdata/transcripts/*.ndjson")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no transcripts found: %v", err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".ndjson")
		t.Run(name, func(t *testing.T) {
			got := decodeFile(t, path)
			golden := filepath.Join("testdata", "golden", name+".events.jsonl")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGoldenTranscripts -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("events differ from %s\n got:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

func decodeFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := claudecode.NewDecoder(f, claudecode.DecoderOptions{
		SessionID:   "golden-session",
		OnLineError: func(e *claudecode.LineError) { t.Errorf("%s: %v", path, e) },
	})
	var out bytes.Buffer
	for d.Next() {
		out.Write(d.Event().AppendJSON(nil))
		out.WriteByte('\n')
	}
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
