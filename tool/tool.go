// Package tool holds the native engine's tools: read, list_dir and grep,
// with exact input schemas and output formats. Each tool answers a JSON
// object: {"content": …}, {"entries": …} or {"matches": …} on success and
// {"error": "…"} on failure; on failure Execute also returns a non-nil
// error (a *Error) so a loop can mark the result is_error.
//
//	tools := tool.All(root)            // confined to root ("" = free paths)
//	out, err := tools[0].Execute(ctx, json.RawMessage(`{"path":"go.mod","end_line":3}`))
//	// out: {"content":"module …\n\ngo 1.26.0"}, err: nil
//
// Paths: relative ones are taken from the root (or the working directory
// when there is none). With a root, a path that leaves it — by "..", an
// absolute path elsewhere, or a symlink pointing out — is refused with
// "path escapes the working directory".
package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Tool is one tool the model can call. It has the shape of native.Tool.
type Tool interface {
	Name() string
	Description() string
	InputSchema() json.RawMessage
	Execute(ctx context.Context, input json.RawMessage) (string, error)
}

// All returns read, list_dir and grep, confined to root ("" = free paths,
// as the standalone API's spec has them).
func All(root string) []Tool {
	return []Tool{Read{Root: root}, ListDir{Root: root}, Grep{Root: root}}
}

// Error is a tool failure; its Message is what the model sees.
type Error struct{ Message string }

func (e *Error) Error() string { return e.Message }

// ErrEscape is matched by errors.Is for paths that leave the root.
var ErrEscape = errors.New("path escapes the working directory")

// fail answers {"error": msg} with a *Error.
func fail(msg string) (string, error) {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return string(b), &Error{Message: msg}
}

// ok answers {key: value}.
func ok(key, value string) (string, error) {
	b, err := json.Marshal(map[string]string{key: value})
	if err != nil {
		return fail(err.Error())
	}
	return string(b), nil
}

// decode reads input strictly into v (unknown fields are refused: a
// misspelt argument is the model's mistake to learn about).
func decode(input json.RawMessage, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(input)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid input: %v", err)
	}
	return nil
}

// resolve turns p into the path to use: relative to root (or the working
// directory), and inside root when there is one, symlinks included.
func resolve(root, p string) (string, error) {
	if p == "" {
		return "", errors.New("path is required")
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("invalid path")
	}
	if root == "" {
		return p, nil
	}
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("working directory: %v", err)
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(r, abs)
	}
	abs = filepath.Clean(abs)
	if !within(r, abs) && !within(root, abs) {
		return "", ErrEscape
	}
	// Follow symlinks as far as the path exists: a link may not lead out.
	real, err := filepath.EvalSymlinks(abs)
	if err == nil {
		if !within(r, real) {
			return "", ErrEscape
		}
		return real, nil
	}
	// A path that does not exist (yet): check its nearest existing parent.
	dir := filepath.Dir(abs)
	for {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			if !within(r, real) {
				return "", ErrEscape
			}
			return abs, nil
		}
		next := filepath.Dir(dir)
		if next == dir {
			return abs, nil
		}
		dir = next
	}
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// fsMessage words a file system error the way the tools' outputs name
// them.
func fsMessage(err error) string {
	switch {
	case errors.Is(err, ErrEscape):
		return ErrEscape.Error()
	case errors.Is(err, fs.ErrNotExist):
		return "file not found"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }

// statPath stats p (following symlinks).
func statPath(p string) (os.FileInfo, error) { return os.Stat(p) }
