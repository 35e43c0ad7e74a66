package tui

import (
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/chirality/harness/internal/lazyre"
)

// Theme is the TUI's palette. Bubble Tea downsamples it to what the
// terminal can show (256 or 16 colours).
type Theme struct {
	Background, Text, User, ToolName, Error, Reasoning, Border, Status, CodeBlock, CodeInline string
}

// DefaultTheme is the contract's palette.
var DefaultTheme = Theme{
	Background: "#1a1a1a", Text: "#e0e0e0", User: "#00d7d7", ToolName: "#e5c07b", Error: "#e06c75",
	Reasoning: "#808080", Border: "#4a4a4a", Status: "#e5c07b", CodeBlock: "#3d3a28", CodeInline: "#3a3a3a",
}

func (t Theme) style(fg string) lipgloss.Style {
	return lipgloss.NewStyle().Foreground(lipgloss.Color(fg))
}

var (
	reLink    = lazyre.New(`\[([^\]]+)\]\(([^)\s]+)\)`)
	reOrdered = lazyre.New(`^(\s*)(\d+)\.\s+(.*)$`)
	reBullet  = lazyre.New(`^(\s*)[-*]\s+(.*)$`)
	reHeading = lazyre.New(`^(#{1,6})\s+(.*)$`)
)

// RenderMarkdown renders md as terminal lines, per the TUI's table:
// **bold** bold; *italic* dim italic; `code` on a highlighted background;
// fenced blocks on #3d3a28; "- item"/"* item" → "• item"; "1. item"
// numbered; [text](url) underlined text; "# Heading" bold; nested
// **bold *italic*** both; anything else passes through as is.
func RenderMarkdown(md string, th Theme) []string {
	var out []string
	inFence := false
	block := lipgloss.NewStyle().Background(lipgloss.Color(th.CodeBlock)).Foreground(lipgloss.Color(th.Text))
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			out = append(out, block.Render(line))
			continue
		}
		if m := reHeading.FindStringSubmatch(line); m != nil {
			out = append(out, lipgloss.NewStyle().Bold(true).Render(inline(m[2], th)))
			continue
		}
		if m := reBullet.FindStringSubmatch(line); m != nil {
			out = append(out, m[1]+"• "+inline(m[2], th))
			continue
		}
		if m := reOrdered.FindStringSubmatch(line); m != nil {
			out = append(out, m[1]+m[2]+". "+inline(m[3], th))
			continue
		}
		out = append(out, inline(line, th))
	}
	return out
}

// inline renders bold, italic, code and links within one line. Code spans
// are taken first (nothing inside them is markup); an unmatched marker is
// text.
func inline(s string, th Theme) string {
	var b strings.Builder
	code := lipgloss.NewStyle().Background(lipgloss.Color(th.CodeInline))
	for {
		i := strings.IndexByte(s, '`')
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i+1:], '`')
		if j < 0 {
			break
		}
		b.WriteString(emphasis(s[:i], th, false, false))
		b.WriteString(code.Render(s[i+1 : i+1+j]))
		s = s[i+2+j:]
	}
	b.WriteString(emphasis(s, th, false, false))
	return b.String()
}

// emphasis renders ** and * spans (nested) and links in s.
func emphasis(s string, th Theme, bold, italic bool) string {
	var b strings.Builder
	for len(s) > 0 {
		switch {
		case strings.HasPrefix(s, "**"):
			if end := closing(s[2:], "**"); end >= 0 {
				b.WriteString(emphasis(s[2:2+end], th, true, italic))
				s = s[4+end:]
				continue
			}
		case s[0] == '*' && len(s) > 1 && s[1] != ' ':
			if end := closing(s[1:], "*"); end >= 0 {
				b.WriteString(emphasis(s[1:1+end], th, bold, true))
				s = s[2+end:]
				continue
			}
		case s[0] == '[':
			if loc := reLink.FindStringSubmatchIndex(s); loc != nil && loc[0] == 0 {
				st := style(bold, italic, th).Underline(true)
				b.WriteString(st.Render(s[loc[2]:loc[3]]))
				s = s[loc[1]:]
				continue
			}
		}
		// Plain text up to the next possible marker.
		n := strings.IndexAny(s[1:], "*[")
		if n < 0 {
			n = len(s)
		} else {
			n++
		}
		b.WriteString(style(bold, italic, th).Render(s[:n]))
		s = s[n:]
	}
	return b.String()
}

// closing finds the marker that closes a span in s: for "*" a single star
// not part of "**" (so **bold *italic*** nests), -1 when there is none.
func closing(s, marker string) int {
	if marker == "**" {
		// The last "**" run that leaves a balanced inside.
		for i := 0; i+1 < len(s); i++ {
			if s[i] == '*' && s[i+1] == '*' {
				inner := s[:i]
				if strings.Count(inner, "*")%2 == 0 {
					return i
				}
				// "***": the inner italic closes first.
				if i+2 < len(s) && s[i+2] == '*' && strings.Count(inner+"*", "*")%2 == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '*' {
			continue
		}
		if i+1 < len(s) && s[i+1] == '*' {
			i++
			continue
		}
		if i > 0 {
			return i
		}
	}
	return -1
}

func style(bold, italic bool, th Theme) lipgloss.Style {
	st := lipgloss.NewStyle()
	if bold {
		st = st.Bold(true)
	}
	if italic {
		st = st.Italic(true).Faint(true)
	}
	return st
}

// Truncate cuts text to max lines, adding "... (N more lines)".
func Truncate(text string, max int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) <= max {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:max], "\n") + "\n... (" + strconv.Itoa(len(lines)-max) + " more lines)"
}
