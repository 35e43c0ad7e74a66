package claudecode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON scanner for the hot path. A turn can stream hundreds of
// thousands of stream_event lines, and each needs only two or three nested
// fields; decoding whole lines with encoding/json costs more than the rest
// of the driver together (see BENCHMARKS.md). The scanner walks a line
// once, skips what it does not need without allocating, and validates
// structure as it goes, so a malformed line is still reported as one.
// Rare frames (system/init, result, user) go through encoding/json.

var errSyntax = errors.New("invalid JSON")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	if i < len(b) && b[i] > ' ' { // the common case: no space at all
		return i
	}
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at b[i]
// (after optional white space).
func skipValue(b []byte, i int) (int, error) {
	return skipValueDepth(b, i, 0)
}

const maxDepth = 10000

func skipValueDepth(b []byte, i, depth int) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return i, errSyntax
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return i, errSyntax
		}
		return skipContainer(b, i, depth+1)
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	}
	return i, errSyntax
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, errSyntax
	}
	return i + len(lit), nil
}

func skipNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return start, errSyntax
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return start, errSyntax
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return start, errSyntax
		}
	}
	return i, nil
}

// skipString returns the index just past the string starting at b[i]=='"'.
// Most strings on a line are keys and short values (ids, types): their
// first shortString bytes are looked at eight at a time for a quote.
// Beyond, it jumps from quote to quote. Either way a quote preceded by an
// odd run of backslashes is escaped, and the search goes on after it.
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	end := min(len(b), j+shortString)
	for j < end {
		if j+8 <= len(b) {
			m := hasByte(binary.LittleEndian.Uint64(b[j:]), '"')
			if m == 0 {
				j += 8
				continue
			}
			j += bits.TrailingZeros64(m) / 8
		} else if b[j] != '"' {
			j++
			continue
		}
		if !escapedQuote(b, i, j) {
			return j + 1, nil
		}
		j++
	}
	if j >= len(b) {
		return len(b), errSyntax
	}
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b), errSyntax
		}
		j += k
		if !escapedQuote(b, i, j) {
			return j + 1, nil
		}
		j++
	}
}

// escapedQuote reports whether the quote at b[j], in the string opened at
// b[i], is escaped: preceded by an odd run of backslashes.
func escapedQuote(b []byte, i, j int) bool {
	n := 0
	for p := j - 1; p > i && b[p] == '\\'; p-- {
		n++
	}
	return n%2 == 1
}

// shortString is how many bytes of a string skipString looks at eight
// at a time before it searches for the closing quote.
const shortString = 64

// hasByte has the high bit set in the lowest byte of x equal to c (and
// maybe in higher ones after it): the classic "has zero byte" test on
// x^c, whose lowest flagged byte is exact.
func hasByte(x uint64, c byte) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	y := x ^ (lo * uint64(c))
	return (y - lo) &^ y & hi
}

func skipContainer(b []byte, i, depth int) (int, error) {
	open := b[i]
	closing := byte('}')
	if open == '[' {
		closing = ']'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == closing {
		return i + 1, nil
	}
	for {
		var err error
		if open == '{' {
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != '"' {
				return i, errSyntax
			}
			if i, err = skipString(b, i); err != nil {
				return i, err
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, errSyntax
			}
			i++
		}
		if i, err = skipValueDepth(b, i, depth); err != nil {
			return i, err
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, errSyntax
		}
		if b[i] == closing {
			return i + 1, nil
		}
		if b[i] != ',' {
			return i, errSyntax
		}
		i++
	}
}

// eachField calls fn with the raw key (without quotes, still escaped) and
// the raw value of every member of the object in b. It stops early when fn
// returns false.
func eachField(b []byte, fn func(key, value []byte) bool) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errSyntax
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return trailing(b, i+1)
	}
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return errSyntax
		}
		ks := i
		var err error
		if i, err = skipString(b, i); err != nil {
			return err
		}
		key := b[ks+1 : i-1]
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return errSyntax
		}
		vs := skipSpace(b, i+1)
		if i, err = skipValue(b, vs); err != nil {
			return err
		}
		if !fn(key, b[vs:i]) {
			return nil
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return errSyntax
		}
		if b[i] == '}' {
			return trailing(b, i+1)
		}
		if b[i] != ',' {
			return errSyntax
		}
		i++
	}
}

func trailing(b []byte, i int) error {
	if skipSpace(b, i) != len(b) {
		return errSyntax
	}
	return nil
}

// errStopWalk, returned by a walkObject member function, ends the walk
// there; the caller takes it for success.
var errStopWalk = errors.New("stop")

// walkObject walks the object starting at b[i]=='{' as skipContainer
// skips it, and returns the index just past it. For every member it calls
// member with the raw key (as eachField gives it) and the index where the
// value starts (after white space); member returns the index just past
// the value (skipValueDepth(b, vs, d) when it only wants to skip it, d
// the object's own depth as skipContainer counts it: 0 for a line) or an
// error that ends the walk.
func walkObject(b []byte, i int, member func(key []byte, vs int) (int, error)) (int, error) {
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return i, errSyntax
		}
		ks := i
		var err error
		if i, err = skipString(b, i); err != nil {
			return i, err
		}
		key := b[ks+1 : i-1]
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, errSyntax
		}
		if i, err = member(key, skipSpace(b, i+1)); err != nil {
			return i, err
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, errSyntax
		}
		if b[i] == '}' {
			return i + 1, nil
		}
		if b[i] != ',' {
			return i, errSyntax
		}
		i++
	}
}

// eachElement calls fn with every raw element of the array in b.
func eachElement(b []byte, fn func(value []byte) bool) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return errSyntax
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return nil
	}
	for {
		vs := skipSpace(b, i)
		var err error
		if i, err = skipValue(b, vs); err != nil {
			return err
		}
		if !fn(b[vs:i]) {
			return nil
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return errSyntax
		}
		if b[i] == ']' {
			return nil
		}
		if b[i] != ',' {
			return errSyntax
		}
		i++
	}
}

// keyIs compares a raw key with a plain ASCII name. Keys the CLI sends are
// never escaped; an escaped key simply does not match.
func keyIs(key []byte, name string) bool { return string(key) == name }

// stringValue decodes a raw JSON string value. null yields "". Any other
// type is an error.
func stringValue(raw []byte) (string, error) {
	if len(raw) == 4 && string(raw) == "null" {
		return "", nil
	}
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", errSyntax
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		if !validPlain(body) {
			return "", errSyntax
		}
		if !utf8.Valid(body) {
			return string(replaceInvalidUTF8(nil, body)), nil
		}
		return string(body), nil
	}
	out, err := unescape(make([]byte, 0, len(body)), body)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(out) {
		out = replaceInvalidUTF8(nil, out)
	}
	return string(out), nil
}

// checkString reports the error stringValue would return for raw,
// without decoding it when it needs no unescaping.
func checkString(raw []byte) error {
	if len(raw) == 4 && string(raw) == "null" {
		return nil
	}
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return errSyntax
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		if !validPlain(body) {
			return errSyntax
		}
		return nil
	}
	_, err := stringValue(raw)
	return err
}

// replaceInvalidUTF8 appends src to dst with every byte that is not part
// of a valid UTF-8 sequence replaced by U+FFFD, as encoding/json does.
func replaceInvalidUTF8(dst, src []byte) []byte {
	for len(src) > 0 {
		r, size := utf8.DecodeRune(src)
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, src[:size]...)
		}
		src = src[size:]
	}
	return dst
}

// validPlain reports whether an unescaped string body is valid JSON string
// content: no control characters. Invalid UTF-8 is replaced later, as
// encoding/json does, so it is not rejected here.
func validPlain(body []byte) bool {
	for _, c := range body {
		if c < 0x20 {
			return false
		}
	}
	return true
}

// unescape appends the decoded string body to dst. Invalid UTF-8 and lone
// surrogates become U+FFFD, matching encoding/json.
func unescape(dst, body []byte) ([]byte, error) {
	for i := 0; i < len(body); {
		c := body[i]
		if c < 0x20 {
			return dst, errSyntax
		}
		if c != '\\' {
			j := i + 1
			for j < len(body) && body[j] != '\\' && body[j] >= 0x20 {
				j++
			}
			dst = append(dst, body[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(body) {
			return dst, errSyntax
		}
		e := body[i+1]
		if c := simpleEscapes[e]; c != 0 {
			dst = append(dst, c)
			i += 2
			continue
		}
		if e != 'u' {
			return dst, errSyntax
		}
		r, ok := hex4(body, i+2)
		if !ok {
			return dst, errSyntax
		}
		i += 6
		if utf16.IsSurrogate(r) {
			r2, ok2 := rune(-1), false
			if i+1 < len(body) && body[i] == '\\' && body[i+1] == 'u' {
				r2, ok2 = hex4(body, i+2)
			}
			if ok2 {
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					i += 6
					dst = utf8.AppendRune(dst, dec)
					continue
				}
			}
			r = utf8.RuneError
		}
		dst = utf8.AppendRune(dst, r)
	}
	return dst, nil
}

// simpleEscapes maps the byte after a backslash to what it stands for;
// 0 marks the bytes that are not one-byte escapes (\u, or invalid).
var simpleEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[i:i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}

// intValue decodes a raw JSON integer; null yields 0.
func intValue(raw []byte) (int, error) {
	if string(raw) == "null" {
		return 0, nil
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil {
		return 0, errSyntax
	}
	return n, nil
}
