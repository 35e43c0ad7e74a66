package mcpserver

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engine"
)

// The door's one mapping: each sentinel, however wrapped, is still itself
// (errors.Is) after toolError, and its text starts as its kind says.
func TestToolError(t *testing.T) {
	for err, prefix := range map[error]string{
		harness.ErrInvalidID:                         "invalid sessionId",
		harness.ErrNotFound:                          "unknown session",
		harness.ErrRootNotAllowed:                    "projectRoot is outside",
		harness.ErrInvalidRoot:                       "projectRoot must be",
		fmt.Errorf("claudecode: %w", engine.ErrBusy): "busy: ",
		harness.ErrUnknownEngine:                     "unknown engine",
		harness.ErrEmptyMessage:                      "message is required",
		harness.ErrClosed:                            "the server is shutting down",
		harness.ErrInvalidEffort:                     "invalid arguments: ",
		harness.ErrWidens:                            "not allowed by the server's configuration: ",
		harness.ErrPersonaNotFound:                   "not found: ",
		engine.ErrNotRunning:                         "not found: ",
		harness.ErrApprovalResolved:                  "not now: ",
		harness.ErrQueueFull:                         "not now: ",
		harness.ErrUnsupported:                       "this session cannot do that: ",
		engine.ErrUnavailable:                        "unavailable on this server: ",
		errors.New("disk on fire"):                   "disk on fire",
	} {
		got := toolError(err)
		if !errors.Is(got, err) || !strings.HasPrefix(got.Error(), prefix) {
			t.Errorf("toolError(%v) = %q, want it to start with %q and wrap it", err, got, prefix)
		}
	}
}
