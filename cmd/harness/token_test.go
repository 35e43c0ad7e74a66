package main

import (
	"bytes"
	"strings"
	"testing"
)

// Issue 24.7: a blank or short token is refused at start by every door
// that takes --token (before, `--addr 0.0.0.0 --token ' '` served the
// network behind a one-space password).
func TestWeakTokenRefused(t *testing.T) {
	for _, tok := range []string{" ", "        ", "s3cret", "fifteen-chars!!", " sixteen-chars-ok"} {
		for _, cmd := range [][]string{
			{"serve", "--addr", "0.0.0.0:0", "--token", tok},
			{"agent", "serve", "--addr", "0.0.0.0:0", "--token", tok},
		} {
			var out, errOut bytes.Buffer
			code := run(cmd, &out, &errOut)
			if code != 2 || !strings.Contains(errOut.String(), "at least 16 characters") {
				t.Errorf("%s --token %q: exit %d, stderr %q", strings.Join(cmd[:len(cmd)-4], " "), tok, code, errOut.String())
			}
		}
	}
	t.Setenv("HARNESS_TOKEN", "short")
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--addr", "0.0.0.0:0"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "HARNESS_TOKEN") {
		t.Errorf("HARNESS_TOKEN=short: exit %d, stderr %q", code, errOut.String())
	}
}
