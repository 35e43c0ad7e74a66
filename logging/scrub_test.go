package logging

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/internal/secrets"
)

// Issue 24.7: a registered secret value never reaches a log line, in the
// project log (JSON) or a command's console log.
func TestLogsAreScrubbed(t *testing.T) {
	const key = "sk-ant-logging-test-0123456789"
	secrets.Register(key)
	root := t.TempDir()
	log, c, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Str("env", "ANTHROPIC_API_KEY="+key).Msg("session:init " + key)
	c.Close()
	b, err := os.ReadFile(Path(root))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), key) || strings.Count(string(b), secrets.Redacted) != 2 {
		t.Errorf("harness.log: %s", b)
	}
	var out bytes.Buffer
	console := zerolog.New(zerolog.ConsoleWriter{Out: Scrubbed(&out), NoColor: true})
	console.Warn().Str("line", "key="+key).Msg("claude stderr")
	if strings.Contains(out.String(), key) || !strings.Contains(out.String(), secrets.Redacted) {
		t.Errorf("console log: %s", out.String())
	}
}
