// Package sandboxtest is the scene the engines' sandbox tests share: a
// workdir with protected directories and a symlink planted to point
// outside, a scratch HOME with a ~/.bashrc, the shell commands that try
// each way out, and the check that none got through; for the network, a
// loopback listener no agent is given and the command that dials it.
package sandboxtest

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Inside is a shell command (run in the workdir) that writes inside it
// and prints "inside".
const Inside = "echo inside > src/in.txt && cat src/in.txt"

// Scene is a workdir prepared for escape attempts.
type Scene struct {
	Workdir, Outside, Home, Bashrc string
}

// New prepares workdir (.chirality/, agents/, src/, link -> a directory
// outside) and home (a .bashrc).
func New(t testing.TB, workdir, home string) *Scene {
	t.Helper()
	s := &Scene{Workdir: workdir, Outside: t.TempDir(), Home: home, Bashrc: filepath.Join(home, ".bashrc")}
	for _, d := range []string{".chirality", "agents", "src"} {
		if err := os.MkdirAll(filepath.Join(workdir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(s.Outside, filepath.Join(workdir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Bashrc, []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// Escapes are shell commands, run in the workdir, each writing where the
// sandbox forbids: ../ up and out, an absolute path outside, .chirality/,
// agents/, ~/.bashrc (in a form Claude Code's own checks do not stop),
// through the planted symlink (likewise) and by a child shell.
func (s *Scene) Escapes(t testing.TB) []string {
	t.Helper()
	rel, err := filepath.Rel(s.Workdir, filepath.Join(s.Outside, "parent"))
	if err != nil {
		t.Fatal(err)
	}
	return []string{
		"echo x > " + rel,
		"echo x > " + filepath.Join(s.Outside, "abs"),
		"echo x > .chirality/x",
		"echo x > agents/x",
		"p=$(printf %s " + strings.TrimSuffix(s.Bashrc, "rc") + " rc); echo x >> \"$p\"",
		"cd link && echo x > via-link",
		"sh -c 'echo x > " + filepath.Join(s.Outside, "grandchild") + "'",
	}
}

// Denied reports whether a tool result's content is a permission error.
func Denied(content string) bool {
	return strings.Contains(strings.ToLower(content), "permission denied") || strings.Contains(content, "EACCES")
}

// Check fails t when anything got through: a file outside, .chirality/x,
// agents/x, a changed ~/.bashrc.
func (s *Scene) Check(t testing.TB) {
	t.Helper()
	if ents, _ := os.ReadDir(s.Outside); len(ents) != 0 {
		t.Errorf("written outside the workdir: %d entries", len(ents))
	}
	for _, p := range []string{".chirality/x", "agents/x"} {
		if _, err := os.Stat(filepath.Join(s.Workdir, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if b, _ := os.ReadFile(s.Bashrc); string(b) != "# rc\n" {
		t.Errorf(".bashrc = %q", b)
	}
}

// Listen opens a loopback TCP listener that accepts and closes
// connections until the test ends (a port no sandboxed agent is given),
// and returns its port.
func Listen(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// Connect is a shell command that opens a TCP connection to
// 127.0.0.1:port from a child bash and prints "connected".
func Connect(port int) string {
	return "bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(port) + " && echo connected'"
}

// PortOf is the port of the URL u (a fake API's), or fails t.
func PortOf(t testing.TB, u string) int {
	t.Helper()
	p, err := url.Parse(u)
	if err == nil {
		if n, err := strconv.Atoi(p.Port()); err == nil {
			return n
		}
	}
	t.Fatalf("no port in %q", u)
	return 0
}
