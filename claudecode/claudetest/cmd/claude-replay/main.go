// Command claude-replay stands in for the claude CLI: it plays a recorded
// stream-json transcript on stdout, answering the host on stdin the way the
// CLI does (see claudetest.Replayer). It ignores its arguments, so a driver
// can run it with the same argv it gives the real CLI.
//
//	CLAUDETEST_REPLAY=testdata/transcripts/tool.ndjson claude-replay -p ...
//
// Options come from the environment: CLAUDETEST_REPLAY_LINE_DELAY (e.g.
// "5ms"), CLAUDETEST_REPLAY_NO_WAIT=1, CLAUDETEST_REPLAY_EXIT (status).
package main

import (
	"fmt"
	"os"

	"github.com/chirality/harness/claudecode/claudetest"
)

func main() {
	path := os.Getenv(claudetest.EnvReplayTranscript)
	if path == "" {
		fmt.Fprintln(os.Stderr, "claude-replay: set", claudetest.EnvReplayTranscript, "to the transcript to play")
		os.Exit(2)
	}
	os.Exit(claudetest.RunReplayerFromEnv(path))
}
