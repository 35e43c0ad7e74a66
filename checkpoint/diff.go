package checkpoint

import (
	"bytes"
	"fmt"
	"strings"
)

// parseNameStatus reads `git diff-tree -r -z --name-status` output:
// status NUL path NUL, repeated.
func parseNameStatus(out []byte) ([]Change, error) {
	var res []Change
	fields := bytes.Split(out, []byte{0})
	if n := len(fields); n > 0 && len(fields[n-1]) == 0 {
		fields = fields[:n-1]
	}
	if len(fields)%2 != 0 {
		return nil, fmt.Errorf("checkpoint: git diff-tree: odd output (%d fields)", len(fields))
	}
	for i := 0; i < len(fields); i += 2 {
		var op string
		switch st := string(fields[i]); st {
		case "A":
			op = OpAdded
		case "D":
			op = OpDeleted
		case "M", "T":
			op = OpModified
		default:
			return nil, fmt.Errorf("checkpoint: git diff-tree: unexpected status %q", st)
		}
		res = append(res, Change{Path: string(fields[i+1]), Op: op})
	}
	return res, nil
}

// attachPatches splits `git diff-tree -p` output into per-file patches
// and sets each change's Patch (the chunks of one path, such as a type
// change's deletion and creation, joined), cut at limit bytes. Changes
// whose patch is missing from out (it was cut) get Truncated.
func attachPatches(changes []Change, out []byte, capped bool, limit int) {
	byPath := make(map[string]int, len(changes))
	for i, c := range changes {
		byPath[c.Path] = i
	}
	found := make([]bool, len(changes))
	last := -1 // the change of the last chunk (maybe cut by the cap)
	for _, chunk := range splitPatches(out) {
		path, ok := patchPath(chunk)
		i, known := byPath[path]
		if !ok || !known {
			continue
		}
		found[i], last = true, i
		c := &changes[i]
		if c.Truncated {
			continue
		}
		if room := limit - len(c.Patch); len(chunk) > room {
			cut := chunk[:max(room, 0)]
			if j := strings.LastIndexByte(cut, '\n'); j >= 0 {
				cut = cut[:j+1]
			}
			c.Patch += cut
			c.Truncated = true
			continue
		}
		c.Patch += chunk
	}
	for i := range changes {
		if !found[i] || (capped && i == last) {
			changes[i].Truncated = true
		}
	}
}

// splitPatches cuts a patch stream at each line that starts a file's
// diff. A content line never starts with "diff" (it starts with ' ', '+',
// '-', '\\' or is a hunk or header line).
func splitPatches(out []byte) []string {
	s := string(out)
	var res []string
	for len(s) > 0 {
		next := strings.Index(s[1:], "\ndiff --git ")
		if next < 0 {
			res = append(res, s)
			break
		}
		res = append(res, s[:next+2])
		s = s[next+2:]
	}
	return res
}

// patchPath reads the path of a chunk's "diff --git a/P b/P" line
// (--no-renames: both sides name one path), C-quoted when it holds
// special characters.
func patchPath(chunk string) (string, bool) {
	line, _, _ := strings.Cut(chunk, "\n")
	rest, ok := strings.CutPrefix(line, "diff --git ")
	if !ok {
		return "", false
	}
	if strings.HasPrefix(rest, `"`) {
		p, ok := unquoteC(rest)
		if !ok {
			return "", false
		}
		return strings.CutPrefix(p, "a/")
	}
	n := (len(rest) - 5) / 2 // rest is "a/" P " b/" P
	if n <= 0 || 2*n+5 != len(rest) || !strings.HasPrefix(rest, "a/") {
		return "", false
	}
	p := rest[2 : 2+n]
	if rest[2+n:] != " b/"+p {
		return "", false
	}
	return p, true
}

// unquoteC reads the C-quoted string git writes for an unusual path
// ("a\nb", octal escapes for other bytes) at the start of s.
func unquoteC(s string) (string, bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", false
	}
	var b []byte
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return string(b), true
		case '\\':
			i++
			if i >= len(s) {
				return "", false
			}
			switch e := s[i]; e {
			case 'a':
				b = append(b, '\a')
			case 'b':
				b = append(b, '\b')
			case 't':
				b = append(b, '\t')
			case 'n':
				b = append(b, '\n')
			case 'v':
				b = append(b, '\v')
			case 'f':
				b = append(b, '\f')
			case 'r':
				b = append(b, '\r')
			case '"', '\\':
				b = append(b, e)
			default:
				if e < '0' || e > '3' || i+2 >= len(s) {
					return "", false
				}
				v := 0
				for _, d := range []byte(s[i : i+3]) {
					if d < '0' || d > '7' {
						return "", false
					}
					v = v*8 + int(d-'0')
				}
				b = append(b, byte(v))
				i += 2
			}
		default:
			b = append(b, c)
		}
	}
	return "", false
}
