package engine_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/chirality/harness/engine"
)

// A sentinel made with NewError is itself, its kind and what its kind
// is, through any wrapping; it is no other sentinel, not even one of the
// same text.
func TestNewError(t *testing.T) {
	errX := engine.NewError(engine.ErrBusy, "x")
	err := fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", errX))
	for _, target := range []error{errX, engine.ErrBusy, engine.ErrConflict} {
		if !errors.Is(err, target) {
			t.Errorf("%v is not %v", err, target)
		}
	}
	for _, target := range []error{engine.NewError(engine.ErrBusy, "x"), engine.ErrInvalid, engine.ErrNotFound, engine.ErrClosed} {
		if errors.Is(err, target) {
			t.Errorf("%v is %v", err, target)
		}
	}
	if err.Error() != "outer: inner: x" {
		t.Errorf("text %q", err.Error())
	}
}

// Each sentinel of the set is of exactly the kind a door maps it by.
func TestKinds(t *testing.T) {
	kinds := []error{engine.ErrInvalid, engine.ErrRefused, engine.ErrNotFound, engine.ErrConflict, engine.ErrFull, engine.ErrCannot,
		engine.ErrUnavailable, engine.ErrClosed, engine.ErrNotRunning}
	for err, kind := range map[error]error{
		engine.ErrBusy:             engine.ErrConflict,
		engine.ErrApprovalResolved: engine.ErrConflict,
		engine.ErrApprovalNotFound: engine.ErrNotFound,
		engine.ErrUnsupported:      engine.ErrCannot,
		engine.ErrInvalidEffort:    engine.ErrInvalid,
		engine.ErrBinaryNotFound:   engine.ErrUnavailable,
		engine.ErrClosed:           engine.ErrClosed,
		engine.ErrNotRunning:       engine.ErrNotRunning,
	} {
		for _, k := range kinds {
			if got := errors.Is(err, k); got != (k == kind) {
				t.Errorf("errors.Is(%v, %v) = %v", err, k, got)
			}
		}
	}
}
