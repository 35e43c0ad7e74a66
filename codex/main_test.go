package codex_test

import (
	"flag"
	"testing"

	"go.uber.org/goleak"

	"github.com/chirality/harness/sandbox"
)

var update = flag.Bool("update", false, "rewrite testdata/methods.golden")

// The test binary is also the sandbox entry sandboxed turns start.
func TestMain(m *testing.M) {
	sandbox.Main()
	goleak.VerifyTestMain(m)
}
