package main

import (
	"os"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
)

// The test binary doubles as a replaying claude (CLAUDETEST_REPLAY) and as
// the harness command itself (HARNESS_TEST_MAIN=1), so tests can run the
// CLI as a real process and signal it.
func TestMain(m *testing.M) {
	claudetest.RunReplayerIfRequested()
	if os.Getenv("HARNESS_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
