package engine

import (
	"errors"
	"testing"
)

func TestCheckEffort(t *testing.T) {
	for _, ok := range []string{"", "low", "medium", "high"} {
		if err := CheckEffort(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"max", "LOW", " low", "xhigh", "minimal"} {
		if err := CheckEffort(bad); !errors.Is(err, ErrInvalidEffort) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
