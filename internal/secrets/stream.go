package secrets

import (
	"bytes"
	"strings"
)

// Text that looks like a credential in a known format is scrubbed too,
// whether or not its value was ever registered: an agent that prints a
// .env file or a key it found shows [REDACTED]. A pattern is a literal
// prefix, then a run of the format's characters at least minRun long;
// the whole run is replaced, however long (leftmost match, greedy), so a
// stream and the text it makes up agree (see Stream). These are the
// unanchored forms of secretValue's key formats; the URL-with-password
// and PEM forms are recognised in the environment only.
type pattern struct {
	prefix string
	class  *[256]bool
	minRun int
}

var patterns = func() []pattern {
	set := func(ranges ...string) *[256]bool {
		var c [256]bool
		for _, r := range ranges {
			if len(r) == 3 && r[1] == '-' {
				for b := r[0]; b <= r[2]; b++ {
					c[b] = true
				}
				continue
			}
			for i := 0; i < len(r); i++ {
				c[r[i]] = true
			}
		}
		return &c
	}
	alnum := set("a-z", "A-Z", "0-9")
	alnumDash := set("a-z", "A-Z", "0-9", "_-")
	alnumUnder := set("a-z", "A-Z", "0-9", "_")
	slack := set("a-z", "A-Z", "0-9", "-")
	aws := set("A-Z", "0-9")
	ps := []pattern{
		{"sk-ant-", alnumDash, 8}, {"sk-proj-", alnumDash, 16},
		{"github_pat_", alnumUnder, 20}, {"glpat-", alnumDash, 16}, {"npm_", alnum, 30},
		{"AKIA", aws, 16}, {"ASIA", aws, 16},
	}
	for _, c := range "pousr" {
		ps = append(ps, pattern{"gh" + string(c) + "_", alnum, 20})
	}
	for _, c := range "abprs" {
		ps = append(ps, pattern{"xox" + string(c) + "-", slack, 10})
	}
	return ps
}()

// starts is how the strings of a set (each of two bytes or more) start:
// their first bytes, and their first two (a bit per pair). A scan asks it
// at each byte and moves on at once where none of them can start, which
// is nearly everywhere in ordinary text.
type starts struct {
	one [256]bool
	two [1024]uint64
}

func (s *starts) add(p string) {
	s.one[p[0]] = true
	k := uint16(p[0])<<8 | uint16(p[1])
	s.two[k>>6] |= 1 << (k & 63)
}

// may reports whether a string of the set may start at b[i]: false when
// none does; true when one may (b ends after b[i], or its first two bytes
// are a string's).
func (s *starts) may(b []byte, i int) bool {
	if !s.one[b[i]] {
		return false
	}
	if i+1 == len(b) {
		return true
	}
	k := uint16(b[i])<<8 | uint16(b[i+1])
	return s.two[k>>6]&(1<<(k&63)) != 0
}

// patternStarts is how the patterns start; patternHold is the most a
// Stream holds back for a pattern (a prefix and one character short of
// its shortest run).
var patternStarts, patternHold = func() (*starts, int) {
	st := new(starts)
	hold := 0
	for _, p := range patterns {
		st.add(p.prefix)
		hold = max(hold, len(p.prefix)+p.minRun-1)
	}
	return st, hold
}()

// scanPatterns appends buf to out with every pattern match replaced by
// Redacted. in is the pattern whose run the previous call ended inside
// (-1 for none): its characters at the start of buf are part of that
// match and dropped. Unless final, it stops where a match may start but
// buf ends before it can tell (rest: where the unread part starts), and
// a match that reaches buf's end leaves its pattern in inRun.
func scanPatterns(out, buf []byte, in int, final bool) (_ []byte, rest, inRun int) {
	i := 0
	if in >= 0 {
		c := patterns[in].class
		for i < len(buf) && c[buf[i]] {
			i++
		}
		if i == len(buf) && !final {
			return out, i, in
		}
	}
	start := i
	for i < len(buf) {
		if !patternStarts.may(buf, i) {
			i++
			continue
		}
		rem := buf[i:]
		pending, matched := false, false
		for k, p := range patterns {
			if len(rem) < len(p.prefix) {
				pending = pending || (!final && strings.HasPrefix(p.prefix, string(rem)))
				continue
			}
			if !bytes.HasPrefix(rem, []byte(p.prefix)) {
				continue
			}
			j := i + len(p.prefix)
			for j < len(buf) && p.class[buf[j]] {
				j++
			}
			if j-i-len(p.prefix) >= p.minRun {
				out = append(append(out, buf[start:i]...), Redacted...)
				i, start, matched = j, j, true
				if j == len(buf) && !final {
					return out, j, k
				}
				break
			}
			pending = pending || (j == len(buf) && !final)
		}
		if matched {
			continue
		}
		if pending {
			return append(out, buf[start:i]...), i, -1
		}
		i++
	}
	return append(out, buf[start:]...), len(buf), -1
}

// hasPattern reports whether b holds a pattern match; no allocation.
func hasPattern(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if !patternStarts.may(b, i) {
			continue
		}
		for _, p := range patterns {
			if !bytes.HasPrefix(b[i:], []byte(p.prefix)) {
				continue
			}
			j := i + len(p.prefix)
			for j < len(b) && p.class[b[j]] && j-i-len(p.prefix) < p.minRun {
				j++
			}
			if j-i-len(p.prefix) >= p.minRun {
				return true
			}
		}
	}
	return false
}

// scrubPatterns is s with every pattern match replaced.
func scrubPatterns(s string) string {
	if !hasPattern([]byte(s)) {
		return s
	}
	out, _, _ := scanPatterns(nil, []byte(s), -1, true)
	return string(out)
}

// scanValues appends buf to out with every registered value replaced by
// Redacted, the longest first where two start at one place (what the
// raw replacer does). Unless final, it stops where a value may start but
// buf ends before it can tell; rest is where the unread part starts.
func scanValues(out, buf []byte, vals []string, first *starts, final bool) (_ []byte, rest int) {
	start, i := 0, 0
	for i < len(buf) {
		if !first.may(buf, i) {
			i++
			continue
		}
		rem := buf[i:]
		matched, pending := 0, false
		for _, v := range vals { // longest first
			if len(v) > len(rem) {
				if !final && strings.HasPrefix(v, string(rem)) {
					pending = true
					break
				}
				continue
			}
			if string(rem[:len(v)]) == v {
				matched = len(v)
				break
			}
		}
		if pending {
			return append(out, buf[start:i]...), i
		}
		if matched > 0 {
			out = append(append(out, buf[start:i]...), Redacted...)
			i += matched
			start = i
			continue
		}
		i++
	}
	return append(out, buf[start:]...), len(buf)
}

// Stream scrubs one block of streamed text (the deltas of one chat or
// thinking block) as it arrives, so that a secret split across deltas is
// scrubbed as it would be in the whole text: what its Writes and its
// Flush return, concatenated, is Scrub of what was written, concatenated.
//
// Write holds back the end of what it was given that could be the start
// of a secret and returns it with a later Write: at most HeldMax bytes
// (the longest registered value's length - 1, plus the longest key
// format's prefix and shortest run - 1, 33, as the two stages, values
// then formats, may each hold a part); Flush returns what is held at the block's end. A Write
// never returns any part of a secret: a match is replaced whole, and a
// pattern's run that reaches the end of a delta is already replaced
// (its further characters are dropped as they come).
//
// A Stream is not safe for concurrent use; the zero value is ready.
type Stream struct {
	vheld []byte // the value stage's held tail
	pheld []byte // the pattern stage's held tail
	inRun int    // pattern+1 whose run the last Write ended inside; 0 for none
	out   []byte // the value stage's output, reused
	pout  []byte // the pattern stage's output, reused
}

// Write takes the next delta of the block and returns what can be shown
// of it now (maybe "", maybe more than text: what was held before).
func (s *Stream) Write(text string) string { return s.step(text, false) }

// Flush ends the block: it returns what was held back and resets s for
// the next block.
func (s *Stream) Flush() string {
	if len(s.vheld) == 0 && len(s.pheld) == 0 {
		s.inRun = 0
		return ""
	}
	return s.step("", true)
}

// Held reports how many bytes s holds back.
func (s *Stream) Held() int { return len(s.vheld) + len(s.pheld) }

func (s *Stream) step(text string, final bool) string {
	vals, first := values()
	// The value stage.
	var mid []byte
	if len(vals) == 0 {
		mid = append(append(s.out[:0], s.vheld...), text...)
		s.out, s.vheld = mid, s.vheld[:0]
	} else {
		buf := append(s.vheld, text...)
		var rest int
		mid, rest = scanValues(s.out[:0], buf, vals, first, final)
		s.out = mid
		s.vheld = append(buf[:0], buf[rest:]...)
	}
	// The pattern stage, on what the value stage let through.
	pbuf := append(s.pheld, mid...)
	out, rest, in := scanPatterns(s.pout[:0], pbuf, s.inRun-1, final)
	s.pout = out
	s.pheld = append(pbuf[:0], pbuf[rest:]...)
	s.inRun = in + 1
	if final {
		s.vheld, s.pheld, s.inRun = s.vheld[:0], s.pheld[:0], 0
	}
	if len(out) == 0 {
		return ""
	}
	if string(out) == text {
		return text // the common case: the delta as it came, without a copy
	}
	return string(out)
}

// HeldMax is the most a Stream holds back with the values registered now.
func HeldMax() int {
	vals, _ := values()
	m := patternHold
	if len(vals) > 0 {
		m += len(vals[0]) - 1 // both stages may hold at once
	}
	return m
}
