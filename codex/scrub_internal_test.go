package codex

import (
	"testing"

	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/internal/stderrtail"
)

// The child's stderr is scrubbed of its credentials' values, as spawn
// sets it up.
func TestScrub(t *testing.T) {
	tl := stderrtail.New(secrets.SecretValues([]string{"OPENAI_API_KEY=sk-abcdef", "PATH=/usr/bin", "CODEX_API_KEY=xyz"}))
	for _, tc := range []struct{ in, want string }{
		{"auth sk-abcdef failed", "auth [REDACTED] failed"},
		{"path /usr/bin", "path /usr/bin"},
		{"short xyz kept", "short xyz kept"}, // values under 4 bytes are not scrubbed (too common)
	} {
		if got := tl.Scrub(tc.in); got != tc.want {
			t.Errorf("scrub(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
