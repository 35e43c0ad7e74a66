package persona

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Mode is the interaction mode of a session.
type Mode string

// The modes.
const (
	ModeWorkbench Mode = "workbench"
	ModePipeline  Mode = "pipeline"
	ModeDirect    Mode = "direct"
)

// Modes lists the valid modes.
var Modes = []Mode{ModeWorkbench, ModePipeline, ModeDirect}

// ValidMode reports whether s names a mode.
func ValidMode(s string) bool {
	_, ok := modeInstructions[Mode(s)]
	return ok
}

// ParseMode returns s as a Mode, or an error wrapping ErrInvalidMode.
func ParseMode(s string) (Mode, error) {
	if !ValidMode(s) {
		return "", fmt.Errorf("%w %q: want workbench, pipeline or direct", ErrInvalidMode, s)
	}
	return Mode(s), nil
}

var modeInstructions = map[Mode]string{
	ModeWorkbench: "Interactive workbench mode. Engage conversationally. Explain your reasoning. Ask for clarification when needed.",
	ModePipeline:  "Pipeline execution mode. Execute the task efficiently with minimal interaction. Report results concisely.",
	ModeDirect:    "Direct terminal mode. Execute commands as requested. Minimal commentary.",
}

// Budget constants.
const (
	// MaxPromptTokens is the token budget of the assembled prompt.
	MaxPromptTokens = 16000
	// CharsPerToken is the estimate used to turn tokens into characters.
	CharsPerToken = 4
	// MaxPromptChars is the budget in bytes of UTF-8 (a byte count never
	// undercounts characters, so the estimate stays conservative).
	MaxPromptChars = MaxPromptTokens * CharsPerToken
	// ContextFileCap is the number of bytes kept from each of README.md
	// and AGENTS.md.
	ContextFileCap = 4096
)

// ContextFiles are the project files included as project context, in
// order.
var ContextFiles = []string{"README.md", "AGENTS.md"}

// BuildSystemPrompt assembles the system prompt of a turn for the project
// at projectRoot, persona p (nil for none) and mode. The parts, each in its
// own tagged block and in this order, are: base identity (the project root
// is made absolute), project context (README.md then AGENTS.md, missing
// files skipped, each capped at ContextFileCap bytes), persona instructions
// (p.Body), mode instructions.
//
// The result fits MaxPromptChars: persona instructions are cut first, then
// the project context (AGENTS.md before README.md, from the end); base
// identity and mode instructions are never cut. Every cut leaves a visible
// "[harness: … truncated …]" marker. Context files are served from a
// cache checked with one stat per file.
func BuildSystemPrompt(projectRoot string, p *Persona, mode Mode) (string, error) {
	return buildSystemPrompt(projectRoot, p, mode, MaxPromptChars)
}

// part is a cuttable piece of text: one context file or the persona body.
type part struct {
	name    string // file name, or persona ID
	label   string // what the cut marker calls it
	text    string // possibly cut
	orig    int    // length before the budget cut
	capNote string // marker of the per-file cap, if applied
}

func buildSystemPrompt(projectRoot string, p *Persona, mode Mode, budget int) (string, error) {
	instr, ok := modeInstructions[mode]
	if !ok {
		return "", fmt.Errorf("%w %q: want workbench, pipeline or direct", ErrInvalidMode, mode)
	}
	root, err := filepath.Abs(projectRoot)
	if err != nil {
		return "", err
	}
	var ctx []*part
	for _, name := range ContextFiles {
		text, size, err := contextCache.read(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("project context: %w", err)
		}
		pt := &part{name: name, label: "project context file " + name, text: text}
		if size > ContextFileCap {
			pt.capNote = fmt.Sprintf("[harness: %s truncated: first %d of %d bytes shown]", name, len(text), size)
		}
		pt.orig = len(pt.text)
		ctx = append(ctx, pt)
	}
	var body []*part
	if p != nil {
		body = []*part{{name: p.ID, label: "persona instructions", text: p.Body, orig: len(p.Body)}}
	}

	render := func() string {
		var b strings.Builder
		b.WriteString("<base_identity>\n")
		b.WriteString("You are operating within the Chirality Command Center.\n")
		b.WriteString("Project root: " + root + "\n")
		b.WriteString("Mode: " + string(mode) + "\n")
		b.WriteString("</base_identity>\n")
		if len(ctx) > 0 {
			b.WriteString("\n<project_context>\n")
			for i, pt := range ctx {
				if i > 0 {
					b.WriteString("\n")
				}
				b.WriteString(`<file name="` + pt.name + "\">\n")
				writeText(&b, pt.text)
				if pt.capNote != "" {
					b.WriteString(pt.capNote + "\n")
				}
				writeCutNote(&b, pt, budget)
				b.WriteString("</file>\n")
			}
			b.WriteString("</project_context>\n")
		}
		for _, pt := range body {
			b.WriteString("\n<persona_instructions persona=\"" + pt.name + "\">\n")
			writeText(&b, pt.text)
			writeCutNote(&b, pt, budget)
			b.WriteString("</persona_instructions>\n")
		}
		b.WriteString("\n<mode_instructions>\n" + instr + "\n</mode_instructions>\n")
		return b.String()
	}

	out := render()
	// Cut in priority order: persona body, then context files from the
	// last one. A cut adds a marker and changes the length, so re-render
	// after each step; every step removes at least one byte.
	cuttable := append(append([]*part{}, body...), reversed(ctx)...)
	for _, pt := range cuttable {
		for len(out) > budget && len(pt.text) > 0 {
			over := len(out) - budget
			if len(pt.text) == pt.orig { // first cut: make room for the marker
				over += len(cutNote(pt.label, pt.orig, pt.orig, budget)) + 1
			}
			pt.text = cutAtLine(pt.text, max(0, len(pt.text)-over))
			out = render()
		}
	}
	return out, nil
}

func reversed[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func writeText(b *strings.Builder, text string) {
	if text == "" {
		return
	}
	b.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteString("\n")
	}
}

func writeCutNote(b *strings.Builder, pt *part, budget int) {
	if len(pt.text) < pt.orig {
		b.WriteString(cutNote(pt.label, len(pt.text), pt.orig, budget) + "\n")
	}
}

func cutNote(what string, kept, orig, budget int) string {
	return fmt.Sprintf("[harness: %s truncated to fit the %d-token prompt budget: %d of %d bytes kept]",
		what, budget/CharsPerToken, kept, orig)
}

// cutAtLine cuts s to at most n bytes, at the end of a line when one ends
// in the last 256 bytes kept, else at a rune boundary.
func cutAtLine(s string, n int) string {
	s = cutUTF8(s, n)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 && len(s)-i <= 256 {
		return s[:i+1]
	}
	return s
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// contextFileCache caches the capped text of context files.
type contextFileCache struct {
	fileCache[contextText]
}

type contextText struct {
	text string
	size int64
}

// read returns the first ContextFileCap bytes of path (cut at a UTF-8
// boundary) and the file's full size.
func (c *contextFileCache) read(path string) (string, int64, error) {
	v, err := c.get(path, func(path string, fi os.FileInfo) (contextText, error) {
		f, err := os.Open(path)
		if err != nil {
			return contextText{}, err
		}
		defer f.Close()
		buf := make([]byte, ContextFileCap)
		n, err := io.ReadFull(f, buf)
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return contextText{}, err
		}
		text := strings.TrimPrefix(string(buf[:n]), "\ufeff")
		text = strings.ReplaceAll(text, "\r\n", "\n")
		if int64(n) < fi.Size() {
			// Drop a UTF-8 sequence split by the cap.
			for len(text) > 0 {
				r, size := utf8.DecodeLastRuneInString(text)
				if r != utf8.RuneError || size != 1 {
					break
				}
				text = text[:len(text)-1]
			}
		}
		return contextText{text: text, size: fi.Size()}, nil
	})
	return v.text, v.size, err
}

var contextCache contextFileCache
