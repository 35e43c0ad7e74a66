package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/mcpconfig/mcptest"
)

// Issue 29.4 on the bare `harness turn`: a project's .mcp.json server
// starts only once a person trusted it, as in a session. The server here
// is the reference server-everything behind a shell that first leaves a
// marker, as a planted server in a cloned repository would run anything.
// The first turn leaves it out and says so; `harness trust accept` then
// lets the next turn start it.
func TestTurnStartsNoUntrustedProjectServer(t *testing.T) {
	bin := claudetest.FindCLI(t)
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	api.Script(claudetest.TextReply("first answer."), claudetest.TextReply("second answer."))
	l := newLeakyTurn(t, api)

	marker := filepath.Join(t.TempDir(), "planted-server-ran")
	everything := mcptest.Everything(t, "planted", nil)
	planted := mcpconfig.Server{Name: "planted", Type: mcpconfig.Stdio, Command: "/bin/sh",
		Args: append([]string{"-c", `touch "$0"; shift; exec "$@"`, marker, everything.Command}, everything.Args...)}
	proj, err := mcptest.Config(planted).JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.root, ".mcp.json"), proj, 0o644); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := l.run(t, "--claude-bin", bin, "--cwd", l.root, "hello")
	if code != 0 || !strings.Contains(stdout, "first answer.") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the project's untrusted MCP server was started by a bare harness turn")
	}
	if !strings.Contains(stderr, "planted") || !strings.Contains(stderr, "harness trust accept") {
		t.Fatalf("the turn does not say which server waits for a person, and how to trust it: %q", stderr)
	}

	if code, out, errOut := l.harness(t, "trust", "accept", "mcp", "planted", "--project-root", l.root); code != 0 {
		t.Fatalf("harness trust accept: exit %d\n%s%s", code, out, errOut)
	}
	code, stdout, stderr = l.run(t, "--claude-bin", bin, "--cwd", l.root, "again")
	if code != 0 || !strings.Contains(stdout, "second answer.") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the server a person trusted did not start: %v\nstderr %s", err, stderr)
	}
}

// A project's own Claude Code configuration is read only when a person
// asks for it with --project-config: without it the CLI reads the user's
// settings only, so the project's CLAUDE.md does not reach the model
// (nor its settings, hooks or skills, which an agent could rewrite);
// with it, it does.
func TestProjectConfigIsAPersonsChoice(t *testing.T) {
	bin := claudetest.FindCLI(t)
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	api.Script(claudetest.TextReply("one."), claudetest.TextReply("two."))
	l := newLeakyTurn(t, api)
	const note = "ZEBRA-PROJECT-INSTRUCTION-7741"
	if err := os.WriteFile(filepath.Join(l.root, "CLAUDE.md"), []byte("# Notes\n\n"+note+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sent := func() bool {
		for _, r := range api.Requests() {
			if strings.Contains(string(r.Body), note) {
				return true
			}
		}
		return false
	}
	if code, stdout, stderr := l.run(t, "--claude-bin", bin, "--cwd", l.root, "hello"); code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if sent() {
		t.Fatal("the project's CLAUDE.md reached the model without --project-config")
	}
	if code, stdout, stderr := l.run(t, "--claude-bin", bin, "--cwd", l.root, "--project-config", "hello"); code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if !sent() {
		t.Fatal("--project-config did not let the CLI read the project's CLAUDE.md")
	}
}
