package codex_test

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite testdata/methods.golden")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
