package harness

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/chirality/harness/acp/acptest"
	"github.com/chirality/harness/sandbox"
)

// Every goroutine a Harness starts (turn runners, live readers) has ended
// once its tests shut it down. The test binary also serves as the fake
// ACP agent (acptest) for the tests that need one, and its own sandbox
// entry (package sandbox) for the sandboxed real agents.
func TestMain(m *testing.M) {
	sandbox.Main()
	if acptest.IsAgent() {
		acptest.Main()
	}
	goleak.VerifyTestMain(m)
}
