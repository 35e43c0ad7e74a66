package daemon

import (
	"github.com/chirality/harness/acp/acptest"
)

// dispatchFakeChild lets the test binary stand in for child programs (the
// fake ACP agent); -1 means "run the tests".
func dispatchFakeChild() int {
	if acptest.IsAgent() {
		acptest.Main()
		return 0
	}
	return -1
}
