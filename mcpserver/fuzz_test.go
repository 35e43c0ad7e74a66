package mcpserver

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// What a client sends is cut for an answer or an error: the cut is valid
// UTF-8 when the input is, and bounded; an id check never panics and
// accepts only what session.ValidID does.
func FuzzClipAndCheckID(f *testing.F) {
	for _, s := range []string{"", "é", strings.Repeat("日本", 40), "0b6b2a3e-6a3f-4a53-9a5e-2c1f5f7d9e10", "../../etc", "\x00\xff"} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		c := clip(s, max)
		if len(c) > max+len("…") {
			t.Fatalf("clip(%q, %d) = %d bytes", s, max, len(c))
		}
		if utf8.ValidString(s) && !utf8.ValidString(c) {
			t.Fatalf("clip(%q, %d) = %q: not UTF-8", s, max, c)
		}
		if err := checkID(s); err == nil && (len(s) != 36 || strings.ContainsAny(s, "/.\x00")) {
			t.Fatalf("checkID accepted %q", s)
		}
	})
}
