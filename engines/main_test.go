package engines

import (
	"os"
	"testing"

	"github.com/chirality/harness/acp/acptest"
)

// TestMain lets the test binary serve as the fake ACP agent (acptest).
func TestMain(m *testing.M) {
	if acptest.IsAgent() {
		acptest.Main()
	}
	os.Exit(m.Run())
}
