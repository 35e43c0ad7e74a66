package acp_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/chirality/harness/acp/acptest"
	"github.com/chirality/harness/sandbox"
)

// The test binary is also the fake agent: acptest.IsAgent when started
// with acptest.AgentEnv.
func TestMain(m *testing.M) {
	sandbox.Main() // and the sandbox entry sandboxed agents start through
	if acptest.IsAgent() {
		acptest.Main()
	}
	goleak.VerifyTestMain(m)
}
