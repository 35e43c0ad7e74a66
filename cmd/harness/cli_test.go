package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
)

// `harness version --help` is help about the command, not the version; a
// stray argument or flag is a usage error.
func TestVersionHelp(t *testing.T) {
	for _, args := range [][]string{{"version", "--help"}, {"version", "-h"}, {"help", "version"}} {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		if code != 0 || !strings.HasPrefix(out.String(), "usage: harness version") || strings.Contains(out.String(), "pinned, tested") || errOut.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
	for _, args := range [][]string{{"version", "extra"}, {"version", "--bogus"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 || out.Len() != 0 || errOut.Len() == 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
}

// A bad --engine or --root of serve is a usage error said once, without a
// library's package name ("harness serve: harness: …" was printed).
func TestServeBadEngineOrRootSaysSoOnce(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for args, want := range map[string]string{
		"--engine foo":   `"foo": unknown engine (have claude-code`,
		"--root /nope/x": "--root /nope/x: the directory does not exist",
	} {
		var out, errOut bytes.Buffer
		code := serve(append([]string{"--addr", "127.0.0.1:0"}, strings.Fields(args)...), &out, &errOut, nil)
		msg := errOut.String()
		if code != 2 || !strings.Contains(msg, want) || strings.Count(msg, "harness") != 1 || !strings.HasPrefix(msg, "harness serve: ") {
			t.Errorf("serve %s: exit %d, stderr %q", args, code, msg)
		}
	}
}

// Messages for a person carry no library package names: a bad
// --permission-mode is a usage error naming the flag, and an option the
// engine refuses reads without "claudecode: ".
func TestTurnMessagesWithoutPackageNames(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"turn", "--permission-mode", "yolo", "hi"}, &out, &errOut); code != 2 ||
		!strings.HasPrefix(errOut.String(), `harness turn: --permission-mode "yolo" is not one of default`) {
		t.Errorf("yolo: exit %d, stderr %q", code, errOut.String())
	}
	errOut.Reset()
	script, err := claudetest.WriteReplayerScript(t.TempDir(), "../../claudecode/testdata/transcripts/tool.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"turn", "--claude-bin", script, "--resume", "nope", "hi"}, &out, &errOut); code != 1 ||
		errOut.String() != "harness turn: invalid turn options: resume id \"nope\" is not a UUID\n" {
		t.Errorf("bad resume: exit %d, stderr %q", code, errOut.String())
	}
	for in, want := range map[string]string{
		"claudecode: invalid turn options: x": "invalid turn options: x",
		"harness: engines: bad file":          "bad file",
		"native: a prompt is already running": "a prompt is already running",
		"--engine: harness: y":                "--engine: harness: y",
	} {
		if got := userError(errors.New(in)); got != want {
			t.Errorf("userError(%q) = %q, want %q", in, got, want)
		}
	}
}
