package main

import (
	"bytes"
	"strings"
	"testing"
)

// Issue 34.6: a demo session can be continued from a terminal. The demo
// keeps its session index in a scratch state directory, so the banner
// says how (--project-root), a turn on the session without it says where
// to look instead of a bare "not found", and with it the turn runs.
func TestDemoSessionContinuesFromTheCLI(t *testing.T) {
	url, errOut := startDemoServe(t)
	root := demoRoot(t, url)
	if want := "continue a session from a terminal: harness turn --demo --project-root " + root + " --session ID"; !strings.Contains(errOut.String(), want) {
		t.Errorf("no %q in:\n%s", want, errOut.String())
	}
	id := demoSession(t, url, "anthropic")

	var out, stderr bytes.Buffer
	if code := run([]string{"turn", "--demo", "--session", id, "hello again"}, &out, &stderr); code == 0 || !strings.Contains(stderr.String(), "--project-root") {
		t.Fatalf("without --project-root: exit %d, stderr %q (want a failure naming --project-root)", code, stderr.String())
	}
	out.Reset()
	stderr.Reset()
	if code := run([]string{"turn", "--demo", "--project-root", root, "--session", id, "hello again"}, &out, &stderr); code != 0 || strings.TrimSpace(out.String()) == "" {
		t.Fatalf("with --project-root: exit %d\nstdout %q\nstderr %q", code, out.String(), stderr.String())
	}
}
