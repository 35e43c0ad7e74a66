package tui

import (
	"os"
	"path/filepath"
	"strings"
)

// HistoryMax is how many prompts the history keeps (oldest dropped first).
const HistoryMax = 100

// History is the prompt history: loaded from a file, at most HistoryMax
// entries, saved after every Add. Prev/Next walk it like a shell's Up and
// Down and stop at both ends. Not safe for concurrent use.
type History struct {
	path    string
	entries []string
	pos     int // len(entries) = past the newest (the draft)
	draft   string
}

// LoadHistory reads path (one JSON-escaped prompt per line; a missing file
// is an empty history).
func LoadHistory(path string) *History {
	h := &History{path: path}
	if b, err := os.ReadFile(path); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" {
				h.entries = append(h.entries, unescape(l))
			}
		}
	}
	if len(h.entries) > HistoryMax {
		h.entries = h.entries[len(h.entries)-HistoryMax:]
	}
	h.pos = len(h.entries)
	return h
}

// Entries returns the prompts, oldest first.
func (h *History) Entries() []string { return append([]string(nil), h.entries...) }

// Add appends a prompt (dropping the oldest past HistoryMax), resets the
// position and saves the file.
func (h *History) Add(p string) error {
	if strings.TrimSpace(p) == "" {
		return nil
	}
	h.entries = append(h.entries, p)
	if len(h.entries) > HistoryMax {
		h.entries = h.entries[len(h.entries)-HistoryMax:]
	}
	h.pos, h.draft = len(h.entries), ""
	if h.path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return err
	}
	var b strings.Builder
	for _, e := range h.entries {
		b.WriteString(escape(e))
		b.WriteByte('\n')
	}
	return os.WriteFile(h.path, []byte(b.String()), 0o600)
}

// Prev returns the previous (older) prompt; at the oldest it stays there.
// current is the input being edited, kept as the draft.
func (h *History) Prev(current string) (string, bool) {
	if len(h.entries) == 0 {
		return current, false
	}
	if h.pos == len(h.entries) {
		h.draft = current
	}
	if h.pos > 0 {
		h.pos--
	}
	return h.entries[h.pos], true
}

// Next returns the next (newer) prompt, or the draft past the newest.
func (h *History) Next() (string, bool) {
	if h.pos >= len(h.entries) {
		return h.draft, false
	}
	h.pos++
	if h.pos == len(h.entries) {
		return h.draft, true
	}
	return h.entries[h.pos], true
}

func escape(s string) string   { return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s) }
func unescape(s string) string { return strings.NewReplacer(`\\`, `\`, `\n`, "\n").Replace(s) }
