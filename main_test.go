package harness

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a Harness starts (turn runners, live readers) has ended
// once its tests shut it down.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
