package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Binary describes how to find an agent's executable. Every engine with a
// child process (Claude Code, Codex, the ACP agents) is found the same way
// by FindBinary.
type Binary struct {
	// Name is the executable's name ("claude", "codex", "opencode").
	Name string
	// Explicit is a path or a name on PATH given by the user (a flag or
	// an engine entry); "" when none.
	Explicit string
	// EnvVar names the variable consulted next (HARNESS_CLAUDE_BIN…).
	EnvVar string
	// Install says how to get it: one command ("npm install
	// @openai/codex@0.169.0"), or a sentence that quotes its commands in
	// backticks itself.
	Install string
}

// ErrBinaryNotFound is matched (errors.Is) by every *BinaryNotFoundError.
var ErrBinaryNotFound = NewError(ErrUnavailable, "engine: agent binary not found")

// BinaryNotFoundError names every place FindBinary looked.
type BinaryNotFoundError struct {
	Name    string
	Tried   []string
	Install string
}

func (e *BinaryNotFoundError) Error() string {
	msg := e.Name + " not found; tried " + strings.Join(e.Tried, ", ")
	switch {
	case strings.Contains(e.Install, "`"):
		msg += " (install it with " + e.Install + ")"
	case e.Install != "":
		msg += " (install it with `" + e.Install + "`)"
	}
	return msg
}

func (e *BinaryNotFoundError) Is(target error) bool {
	return target == ErrBinaryNotFound || target == ErrUnavailable
}

// FindBinary resolves b's executable, in this order: b.Explicit (a path,
// or a name on PATH), then $EnvVar, then Name on PATH, then
// ./node_modules/.bin/Name, then node_modules/.bin/Name in the directories
// above the running executable (so a checkout's bin/harness finds the
// agents its `make cli` pinned, from any directory). An explicit or
// configured path that does not exist is an error, never a silent
// fallback. Errors are *BinaryNotFoundError.
func FindBinary(b Binary) (string, error) {
	if b.Explicit != "" {
		if p, ok := lookExecutable(b.Explicit); ok {
			return p, nil
		}
		return "", &BinaryNotFoundError{Name: b.Name, Tried: []string{b.Explicit + " (given)"}, Install: b.Install}
	}
	var tried []string
	if b.EnvVar != "" {
		if env := os.Getenv(b.EnvVar); env != "" {
			if p, ok := lookExecutable(env); ok {
				return p, nil
			}
			return "", &BinaryNotFoundError{Name: b.Name, Tried: []string{env + " ($" + b.EnvVar + ")"}, Install: b.Install}
		}
		tried = append(tried, "$"+b.EnvVar+" (unset)")
	}
	if p, err := exec.LookPath(b.Name); err == nil {
		return p, nil
	}
	tried = append(tried, b.Name+" on $PATH")
	local := filepath.Join("node_modules", ".bin", b.Name)
	if abs, err := filepath.Abs(local); err == nil {
		local = abs
	}
	if p, ok := lookExecutable(local); ok {
		return p, nil
	}
	tried = append(tried, local)
	if exe, err := os.Executable(); err == nil {
		// bin/harness → ../node_modules/.bin: the executable's directory
		// and its parent.
		for _, dir := range []string{filepath.Dir(exe), filepath.Dir(filepath.Dir(exe))} {
			p := filepath.Join(dir, "node_modules", ".bin", b.Name)
			if p == local {
				continue
			}
			if found, ok := lookExecutable(p); ok {
				return found, nil
			}
			tried = append(tried, p)
		}
	}
	return "", &BinaryNotFoundError{Name: b.Name, Tried: tried, Install: b.Install}
}

func lookExecutable(p string) (string, bool) {
	if !strings.ContainsRune(p, os.PathSeparator) {
		found, err := exec.LookPath(p)
		return found, err == nil
	}
	st, err := os.Stat(p)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", false
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return p, true
}
