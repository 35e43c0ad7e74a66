package irc

import (
	"strings"

	"github.com/chirality/harness/internal/lazyre"
)

// PlainText renders a model's markdown answer as plain text for IRC,
// where nothing renders it: code fences are dropped (their lines kept as
// they are), headings lose their #s, **bold**, __bold__, *em*, _em_ and
// ~~strike~~ lose their markers, `code` its backticks, [text](url)
// becomes "text (url)" (the url alone when they are the same), an image
// its alt text and url, list bullets become "- ", horizontal rules and
// HTML comments go, and tables keep their cells separated by " | ". Text
// that is not markdown passes unchanged; snake_case and 2*3*4 are left
// alone (a marker must open before a word and close after one).
func PlainText(md string) string {
	var out []string
	fence := ""
	for _, line := range strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n") {
		trim := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trim, fence) && strings.Trim(trim, fence[:1]) == "" {
				fence = ""
				continue
			}
			out = append(out, line) // code: as written
			continue
		}
		if f := fenceOpen(trim); f != "" {
			fence = f
			continue
		}
		switch {
		case hrRE.MatchString(trim):
			continue
		case tableRuleRE.MatchString(trim):
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			line = strings.TrimRight(strings.TrimRight(m[1], "#"), " ")
		} else if m := bulletRE.FindStringSubmatch(line); m != nil {
			line = m[1] + "- " + m[2]
		}
		if strings.HasPrefix(trim, "|") && strings.HasSuffix(trim, "|") && len(trim) > 1 {
			cells := strings.Split(trim[1:len(trim)-1], "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			line = strings.Join(cells, " | ")
		}
		out = append(out, inline(line))
	}
	return strings.TrimSpace(collapseBlank(strings.Join(out, "\n")))
}

var (
	hrRE        = lazyre.New(`^(?:\*[ \t]*){3,}$|^(?:-[ \t]*){3,}$|^(?:_[ \t]*){3,}$`)
	tableRuleRE = lazyre.New(`^\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?$`)
	headingRE   = lazyre.New(`^ {0,3}#{1,6}[ \t]+(.*)$`)
	bulletRE    = lazyre.New(`^([ \t]*)[*+-][ \t]+(.*)$`)
	imageRE     = lazyre.New(`!\[([^\]]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	linkRE      = lazyre.New(`\[([^\]]+)\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	commentRE   = lazyre.New(`<!--.*?-->`)
	// emphasis: the marker opens before a non-space and closes after one,
	// and is not inside a word (so snake_case and 2*3*4 stay)
	strongRE = lazyre.New(`(^|[^\w*])\*\*([^\s*](?:[^*]*[^\s*])?)\*\*($|[^\w*])`)
	strong_  = lazyre.New(`(^|[^\w_])__([^\s_](?:[^_]*[^\s_])?)__($|[^\w_])`)
	emRE     = lazyre.New(`(^|[^\w*])\*([^\s*](?:[^*]*[^\s*])?)\*($|[^\w*])`)
	em_      = lazyre.New(`(^|[^\w_])_([^\s_](?:[^_]*[^\s_])?)_($|[^\w_])`)
	strikeRE = lazyre.New(`~~([^\s~](?:[^~]*[^\s~])?)~~`)
)

// fenceOpen is the fence a line opens (``` or ~~~, any longer run), or "".
func fenceOpen(trim string) string {
	for _, c := range []string{"`", "~"} {
		if strings.HasPrefix(trim, c+c+c) {
			n := len(trim) - len(strings.TrimLeft(trim, c))
			if c == "`" && strings.Contains(trim[n:], "`") {
				return "" // inline code, not a fence
			}
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// inline removes the inline markers of one line; code spans (a run of
// n backticks up to the next run of exactly n) keep their content as it
// is, out of the other rules.
func inline(line string) string {
	var b strings.Builder
	rest := line
	for {
		open := strings.IndexByte(rest, '`')
		if open < 0 {
			b.WriteString(spans(rest))
			return b.String()
		}
		n := len(rest[open:]) - len(strings.TrimLeft(rest[open:], "`"))
		body, end := rest[open+n:], -1
		for i := 0; i < len(body); {
			j := strings.IndexByte(body[i:], '`')
			if j < 0 {
				break
			}
			m := len(body[i+j:]) - len(strings.TrimLeft(body[i+j:], "`"))
			if m == n {
				end = i + j
				break
			}
			i += j + m
		}
		if end < 0 { // no closing run: the backticks are text
			b.WriteString(spans(rest[:open+n]))
			rest = rest[open+n:]
			continue
		}
		b.WriteString(spans(rest[:open]))
		b.WriteString(strings.TrimSpace(body[:end]))
		rest = body[end+n:]
	}
}

func spans(s string) string {
	s = commentRE.ReplaceAllString(s, "")
	s = imageRE.ReplaceAllStringFunc(s, func(m string) string {
		p := imageRE.FindStringSubmatch(m)
		if p[1] == "" {
			return p[2]
		}
		return p[1] + " (" + p[2] + ")"
	})
	s = linkRE.ReplaceAllStringFunc(s, func(m string) string {
		p := linkRE.FindStringSubmatch(m)
		if p[1] == p[2] || "mailto:"+p[1] == p[2] {
			return p[2]
		}
		return p[1] + " (" + p[2] + ")"
	})
	for _, re := range []*lazyre.Regexp{strongRE, strong_, emRE, em_} {
		// twice: adjacent spans share the character between them
		s = re.ReplaceAllString(s, "$1$2$3")
		s = re.ReplaceAllString(s, "$1$2$3")
	}
	return strikeRE.ReplaceAllString(s, "$1")
}

// collapseBlank keeps at most one blank line in a row.
func collapseBlank(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := false
	for _, l := range lines {
		b := strings.TrimSpace(l) == ""
		if b && blank {
			continue
		}
		blank = b
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
