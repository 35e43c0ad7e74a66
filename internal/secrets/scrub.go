package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
)

// The process's scrubber. Every secret value the harness knows of —
// those of its own environment, those FilterEnv withheld from a child or
// passed as an agent's own credential, and those a caller registers —
// is replaced by Redacted wherever the harness writes: log lines
// (logging's writers) and events (the core's event path, before they
// are stored and published). One scrubber for the process, so a door, an
// engine and a log never disagree about what is scrubbed.
//
// Values shorter than MinScrubLen are not scrubbed: they would mangle
// ordinary words in every answer. Text in a known credential format
// (patterns in stream.go) is scrubbed too, registered or not. Streamed
// text (an answer's deltas) goes through a Stream, so a secret split
// across two deltas is scrubbed as it is in the whole text.

// Redacted replaces a secret value.
const Redacted = "[REDACTED]"

// MinScrubLen is the shortest value scrubbed.
const MinScrubLen = 8

var scrub struct {
	once  sync.Once
	mu    sync.RWMutex
	seen  map[string]bool
	raw   *strings.Replacer // raw value → Redacted
	json  *strings.Replacer // the value as it appears inside a JSON string → Redacted
	forms [][]byte          // every raw and JSON form: the fast check before replacing
	vals  []string          // the raw values, longest first (Stream)
	first *starts           // how values start; replaced, never changed
}

func scrubInit() {
	scrub.once.Do(func() {
		scrub.mu.Lock()
		defer scrub.mu.Unlock()
		scrub.seen = map[string]bool{}
		addLocked(WithheldEnvValues(os.Environ()))
	})
}

// RegisterEnv registers the values of env's secret variables (IsSecretEnv)
// and of the engines' own credentials (ANTHROPIC_API_KEY): what
// WithheldEnvValues returns.
func RegisterEnv(env []string) { Register(WithheldEnvValues(env)...) }

// Register adds values to the process's scrubber (those shorter than
// MinScrubLen are ignored). Safe for concurrent use; a value registered
// once stays registered.
func Register(values ...string) {
	scrubInit()
	scrub.mu.Lock()
	defer scrub.mu.Unlock()
	addLocked(values)
}

// addLocked adds values and rebuilds the replacers; scrub.mu is held.
func addLocked(values []string) {
	added := false
	for _, v := range values {
		if len(v) >= MinScrubLen && !scrub.seen[v] {
			scrub.seen[v] = true
			added = true
		}
	}
	if !added {
		return
	}
	vals := make([]string, 0, len(scrub.seen))
	for v := range scrub.seen {
		vals = append(vals, v)
	}
	// Longer first: where two values start at one place, the longer wins.
	slices.SortFunc(vals, func(a, b string) int { return len(b) - len(a) })
	var raw, js []string
	done := map[string]bool{}
	for _, v := range vals {
		raw = append(raw, v, Redacted)
		for _, e := range jsonForms(v) {
			if !done[e] {
				done[e] = true
				js = append(js, e, Redacted)
			}
		}
	}
	scrub.raw, scrub.json = strings.NewReplacer(raw...), strings.NewReplacer(js...)
	first := new(starts)
	for _, v := range vals {
		first.add(v)
	}
	scrub.vals, scrub.first = vals, first
	scrub.forms = scrub.forms[:0]
	for _, list := range [][]string{raw, js} {
		for i := 0; i < len(list); i += 2 {
			scrub.forms = append(scrub.forms, []byte(list[i]))
		}
	}
}

// holdsAny reports whether b holds any registered value in any form: the
// common case (no secret) costs no allocation.
func holdsAny(b []byte) bool {
	scrub.mu.RLock()
	defer scrub.mu.RUnlock()
	for _, f := range scrub.forms {
		if bytes.Contains(b, f) {
			return true
		}
	}
	return false
}

// holdsAnyString is holdsAny for a string.
func holdsAnyString(s string) bool {
	scrub.mu.RLock()
	defer scrub.mu.RUnlock()
	for _, f := range scrub.forms {
		if strings.Contains(s, string(f)) {
			return true
		}
	}
	return false
}

// jsonForms are v as it appears between the quotes of a JSON string,
// with and without HTML escaping.
func jsonForms(v string) []string {
	var out []string
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(v)
		s := strings.TrimSuffix(b.String(), "\n")
		out = append(out, s[1:len(s)-1])
	}
	return out
}

// values returns the registered raw values, longest first, and how they
// start. The slice is never changed after it is returned
// (addLocked makes a new one).
func values() ([]string, *starts) {
	scrubInit()
	scrub.mu.RLock()
	defer scrub.mu.RUnlock()
	return scrub.vals, scrub.first
}

func replacers() (raw, js *strings.Replacer) {
	scrubInit()
	scrub.mu.RLock()
	defer scrub.mu.RUnlock()
	return scrub.raw, scrub.json
}

// Scrub returns s with every registered secret value replaced by
// Redacted, and then every credential in a known format (sk-ant-…,
// ghp_…, AKIA…: see patterns).
func Scrub(s string) string {
	raw, _ := replacers()
	if raw != nil && holdsAnyString(s) {
		s = raw.Replace(s)
	}
	return scrubPatterns(s)
}

// ScrubJSON returns the JSON text b with every registered secret value,
// and every credential in a known format, replaced by Redacted inside
// its strings (keys and values); what is
// outside strings (numbers, literals, structure) is never touched, so
// the result is valid JSON when b was. It returns b itself when nothing
// was replaced.
func ScrubJSON(b []byte) []byte {
	_, js := replacers()
	values := js != nil && holdsAny(b)
	if !values && !hasPattern(b) {
		return b
	}
	var out []byte
	last := 0
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		start := i + 1
		j := start
		for j < len(b) && b[j] != '"' {
			if b[j] == '\\' {
				j++
			}
			j++
		}
		if j > len(b) {
			j = len(b)
		}
		seg := string(b[start:j])
		r := seg
		if values {
			r = js.Replace(seg)
		}
		if r != seg || hasPattern(b[start:j]) {
			// A secret is in the literal: replace in its decoded text
			// and encode that again (replacing in the escaped text
			// could cut an escape sequence in two).
			var text string
			if json.Unmarshal(b[start-1:min(j+1, len(b))], &text) == nil {
				var e bytes.Buffer
				enc := json.NewEncoder(&e)
				enc.SetEscapeHTML(false)
				_ = enc.Encode(Scrub(text))
				q := bytes.TrimSuffix(e.Bytes(), []byte("\n"))
				r = string(q[1 : len(q)-1])
			} else {
				r = scrubPatterns(r) // not a whole literal: its characters as they are
			}
		}
		if r != seg {
			out = append(out, b[last:start]...)
			out = append(out, r...)
			last = j
		}
		i = j
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// ScrubLine scrubs one line of output: as JSON when it is a JSON object
// (a zerolog line), else as text.
func ScrubLine(p []byte) []byte {
	if t := bytes.TrimLeft(p, " \t"); len(t) > 0 && t[0] == '{' {
		return ScrubJSON(p)
	}
	raw, _ := replacers()
	values := raw != nil && holdsAny(p)
	if !values && !hasPattern(p) {
		return p
	}
	s := string(p)
	if r := Scrub(s); r != s {
		return []byte(r)
	}
	return p
}

// MinTokenLen is the shortest bearer token a server accepts.
const MinTokenLen = 16

// ErrWeakToken: a bearer token that is blank or shorter than MinTokenLen.
var ErrWeakToken = errors.New("the token must be at least 16 characters and not blank")

// CheckToken is the check every door that takes --token makes at start:
// "" (no token) is fine; a token that is blank, has white space around
// it, or is shorter than MinTokenLen is refused with ErrWeakToken. A token that
// passes is registered with the scrubber, so no log line carries it.
func CheckToken(token string) error {
	if token == "" {
		return nil
	}
	if strings.TrimSpace(token) != token || len(token) < MinTokenLen {
		return ErrWeakToken
	}
	Register(token)
	return nil
}
