package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// ListDir is the list_dir tool: {path} → {"entries": "<ls -al output>"},
// the raw, unmodified output of `ls -al PATH` (run with argv, no shell;
// hidden files included).
type ListDir struct {
	Root string
}

func (ListDir) Name() string { return "list_dir" }
func (ListDir) Description() string {
	return "List a directory with `ls -al` (hidden files included, raw output)."
}
func (ListDir) InputSchema() json.RawMessage {
	return schema(`{"type":"object","properties":{"path":{"type":"string","description":"Directory to list"}},"required":["path"]}`)
}

// Execute implements Tool.
func (t ListDir) Execute(ctx context.Context, input json.RawMessage) (string, error) {
	var in struct {
		Path string `json:"path"`
	}
	if err := decode(input, &in); err != nil {
		return fail(err.Error())
	}
	p, err := resolve(t.Root, in.Path)
	if err != nil {
		return fail(fsMessage(err))
	}
	fi, err := statPath(p)
	if err != nil {
		return fail(fsMessage(err))
	}
	if !fi.IsDir() {
		return fail("not a directory")
	}
	ls, err := lookSystem("ls")
	if err != nil {
		return fail(err.Error())
	}
	out, errOut, code, err := run(ctx, ls, "-al", "--", p)
	if err != nil {
		return fail(err.Error())
	}
	if code != 0 {
		return fail(commandMessage(errOut))
	}
	return ok("entries", out)
}

// Grep is the grep tool: {pattern, path, recursive?} → {"matches": "…"},
// the system grep with Basic Regular Expressions (`grep -G -n`, `-r` when
// recursive), case-sensitive. One file gives `line:content` lines; a
// directory gives `file:line:content` lines (001's multi-file format):
// with recursive its whole tree, without it only the regular files
// directly in it (its subdirectories, and links, are not searched). No
// match is success with "".
type Grep struct {
	Root string
}

func (Grep) Name() string { return "grep" }
func (Grep) Description() string {
	return "Search files with grep's Basic Regular Expressions (case-sensitive). A directory: its files; recursive: its whole tree."
}
func (Grep) InputSchema() json.RawMessage {
	return schema(`{"type":"object","properties":{"pattern":{"type":"string","description":"Basic Regular Expression"},"path":{"type":"string","description":"File or directory (a directory: the files directly in it, or its whole tree with recursive)"},"recursive":{"type":"boolean","description":"Search directories recursively (default: false)"}},"required":["pattern","path"]}`)
}

// grepBatch is how many files of a directory one grep is given.
const grepBatch = 256

// Execute implements Tool.
func (t Grep) Execute(ctx context.Context, input json.RawMessage) (string, error) {
	var in struct {
		Pattern   string `json:"pattern"`
		Path      string `json:"path"`
		Recursive bool   `json:"recursive"`
	}
	if err := decode(input, &in); err != nil {
		return fail(err.Error())
	}
	if in.Pattern == "" {
		return fail("pattern is required")
	}
	p, err := resolve(t.Root, in.Path)
	if err != nil {
		return fail(fsMessage(err))
	}
	fi, err := statPath(p)
	if err != nil {
		return fail(fsMessage(err))
	}
	grep, err := lookSystem("grep")
	if err != nil {
		return fail(err.Error())
	}
	args := []string{"-G", "-n"}
	files := []string{p}
	switch {
	case in.Recursive:
		args = append(args, "-r")
	case fi.IsDir():
		// Not recursive: the regular files directly in the directory, each
		// line with its file's name. Links are left out (a link could lead
		// out of the project; -r does not follow them either).
		entries, err := os.ReadDir(p)
		if err != nil {
			return fail(fsMessage(err))
		}
		files = files[:0]
		for _, e := range entries {
			if e.Type().IsRegular() {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
		if len(files) == 0 {
			return ok("matches", "")
		}
		args = append(args, "-H")
	default:
		args = append(args, "-h") // one file: line:content, never a name
	}
	args = append(args, "-e", in.Pattern, "--")
	var out strings.Builder
	for len(files) > 0 {
		n := min(len(files), grepBatch)
		got, errOut, code, err := run(ctx, grep, append(slices.Clip(args), files[:n]...)...)
		files = files[n:]
		switch {
		case err != nil:
			return fail(err.Error())
		case code == 0:
			out.WriteString(got)
		case code == 1 && strings.TrimSpace(errOut) == "":
			// no match in this batch
		default:
			return fail(grepMessage(errOut))
		}
		if out.Len() >= outputLimit {
			break
		}
	}
	if res := out.String(); len(res) > outputLimit+64 {
		return ok("matches", strings.ToValidUTF8(res[:outputLimit], "")+"\n... (output truncated)")
	}
	return ok("matches", out.String())
}

// grepMessage is what a failed grep said: "permission denied", "file not
// found", or (what else grep refuses is its pattern) "invalid pattern: …".
func grepMessage(stderr string) string {
	msg := commandMessage(stderr)
	if msg != "permission denied" && msg != "file not found" {
		msg = "invalid pattern: " + msg
	}
	return msg
}

// lookSystem finds a system command on PATH, then in /usr/bin and /bin.
func lookSystem(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/bin", "/bin"} {
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New(name + " not found on PATH, /usr/bin or /bin")
}

// outputLimit bounds what one tool call can put in the conversation.
const outputLimit = 1 << 20

// run runs argv (no shell) and returns its stdout, stderr and exit code.
func run(ctx context.Context, prog string, args ...string) (string, string, int, error) {
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var out, errOut limited
	out.max, errOut.max = outputLimit, 16<<10
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0, nil
	case errors.As(err, &ee) && ctx.Err() == nil:
		return out.String(), errOut.String(), ee.ExitCode(), nil
	case ctx.Err() != nil:
		return "", "", -1, ctx.Err()
	}
	return "", "", -1, err
}

// commandMessage is the gist of a failed command's stderr: "permission
// denied", "file not found", or the message itself.
func commandMessage(stderr string) string {
	s := strings.TrimSpace(stderr)
	low := strings.ToLower(s)
	switch {
	case strings.Contains(low, "permission denied"):
		return "permission denied"
	case strings.Contains(low, "no such file or directory"):
		return "file not found"
	case s == "":
		return "the command failed"
	}
	// "/usr/bin/grep: Unmatched \{" → "Unmatched \{"
	if prog, rest, ok := strings.Cut(s, ": "); ok && !strings.ContainsRune(prog, ' ') {
		return rest
	}
	return s
}

// limited keeps the first max bytes written to it.
type limited struct {
	b         bytes.Buffer
	max       int
	truncated bool
}

func (l *limited) Write(p []byte) (int, error) {
	room := l.max - l.b.Len()
	if room < len(p) {
		l.truncated = true
	}
	if room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (l *limited) String() string {
	if l.truncated {
		return l.b.String() + "\n... (output truncated)"
	}
	return l.b.String()
}
