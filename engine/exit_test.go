package engine

import "testing"

func TestTurnExit(t *testing.T) {
	for _, c := range []struct {
		completed  bool
		code       int
		signal     string
		wantCode   int
		wantSignal string
	}{
		{true, 0, "", 0, ""},
		{true, 1, "", 0, ""},                // completed, whatever the process said after
		{true, -1, "SIGTERM", 0, "SIGTERM"}, // stopped after its result
		{false, 0, "", 1, ""},               // failed, interrupted or not started, process fine or none
		{false, 3, "", 3, ""},
		{false, -1, "SIGKILL", -1, "SIGKILL"},
	} {
		got := TurnExit(c.completed, c.code, c.signal)
		if got.Code != c.wantCode || got.Signal != c.wantSignal {
			t.Errorf("TurnExit(%v, %d, %q) = %+v, want code %d signal %q", c.completed, c.code, c.signal, got, c.wantCode, c.wantSignal)
		}
	}
}
