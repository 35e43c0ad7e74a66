package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/persona"
	"github.com/chirality/harness/session"
)

// The CLI's one mapping of an error to an exit status: 2 for an argument
// that is malformed (engine.ErrInvalid, of which each of these is a kind),
// 1 for everything else.
func TestFailCode(t *testing.T) {
	for err, want := range map[error]int{
		session.ErrInvalidID:                      2,
		fmt.Errorf("x: %w", harness.ErrInvalidID): 2,
		persona.ErrInvalidID:                      2,
		claudecode.ErrInvalidOptions:              2,
		harness.ErrInvalidEffort:                  2,
		harness.ErrBusy:                           1,
		harness.ErrNotFound:                       1,
		fmt.Errorf("x: %w", harness.ErrClosed):    1,
		errors.New("disk on fire"):                1,
	} {
		if got := failCode(err); got != want {
			t.Errorf("failCode(%v) = %d, want %d", err, got, want)
		}
	}
}
