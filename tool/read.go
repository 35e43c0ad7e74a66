package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Read is the read tool: {path, start_line?, end_line?} →
// {"content": "…"}. Lines are 1-indexed and end_line is inclusive: no
// range gives the whole file, start_line alone the rest of the file from
// there, end_line alone the file up to it. The content is the file's
// bytes for those lines, without the last line's newline.
type Read struct {
	// Root confines paths ("" = free paths).
	Root string
}

func (Read) Name() string { return "read" }
func (Read) Description() string {
	return "Read a text file, whole or a range of lines (1-indexed, end_line inclusive)."
}
func (Read) InputSchema() json.RawMessage {
	return schema(`{"type":"object","properties":{"path":{"type":"string","description":"File to read"},"start_line":{"type":"integer","minimum":1,"description":"First line (1-indexed)"},"end_line":{"type":"integer","minimum":1,"description":"Last line, inclusive"}},"required":["path"]}`)
}

type readInput struct {
	Path      string `json:"path"`
	StartLine *int   `json:"start_line"`
	EndLine   *int   `json:"end_line"`
}

// Execute implements Tool.
func (t Read) Execute(ctx context.Context, input json.RawMessage) (string, error) {
	var in readInput
	if err := decode(input, &in); err != nil {
		return fail(err.Error())
	}
	if in.StartLine != nil && *in.StartLine < 1 {
		return fail("start_line must be at least 1")
	}
	if in.EndLine != nil && *in.EndLine < 1 {
		return fail("end_line must be at least 1")
	}
	if in.StartLine != nil && in.EndLine != nil && *in.StartLine > *in.EndLine {
		return fail(fmt.Sprintf("start_line %d is after end_line %d", *in.StartLine, *in.EndLine))
	}
	p, err := resolve(t.Root, in.Path)
	if err != nil {
		return fail(fsMessage(err))
	}
	fi, err := statPath(p)
	if err != nil {
		return fail(fsMessage(err))
	}
	if fi.IsDir() {
		return fail("path is a directory")
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return fail(fsMessage(err))
	}
	if in.StartLine == nil && in.EndLine == nil {
		return ok("content", string(data))
	}
	lines := splitLines(data)
	start, end := 1, len(lines)
	if in.StartLine != nil {
		start = *in.StartLine
	}
	if in.EndLine != nil && *in.EndLine < end {
		end = *in.EndLine
	}
	if start > len(lines) {
		return fail(fmt.Sprintf("start_line %d is beyond the end of the file (%d lines)", start, len(lines)))
	}
	return ok("content", strings.Join(lines[start-1:end], "\n"))
}

// splitLines splits data into lines without their newlines; a final
// newline does not start another line.
func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	return strings.Split(string(data), "\n")
}
