package engine_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// Every engine ends a turn through TurnEnd: the end event (if the stream
// has not carried it), the release, then process:exit, whose code is 0
// exactly when the turn completed.
func TestTurnEndReport(t *testing.T) {
	te := &engine.TurnError{Kind: event.ErrorProcess, Message: "agent died"}
	tail := func() string { return "boom" }
	seven := 7
	for _, tc := range []struct {
		name  string
		end   engine.TurnEnd
		types []event.Type
		exit  event.ProcessExit
		err   error
	}{
		{"completed", engine.TurnEnd{Complete: &event.SessionComplete{NumTurns: 1}, Code: 3},
			[]event.Type{event.TypeSessionComplete, "release", event.TypeProcessExit}, event.ProcessExit{Code: 0}, nil},
		{"failed", engine.TurnEnd{Error: te.SessionError(7, tail), Err: te, Code: 7},
			[]event.Type{event.TypeSessionError, "release", event.TypeProcessExit}, event.ProcessExit{Code: 7}, te},
		{"killed, the end already on the stream", engine.TurnEnd{Err: te, Code: -1, Signal: "SIGKILL"},
			[]event.Type{"release", event.TypeProcessExit}, event.ProcessExit{Code: -1, Signal: "SIGKILL"}, te},
		{"failed with no process", engine.TurnEnd{Error: &event.SessionError{Kind: event.ErrorAPI}, Err: te},
			[]event.Type{event.TypeSessionError, "release", event.TypeProcessExit}, event.ProcessExit{Code: 1}, te},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []event.Event
			emit := func(ev event.Event) { got = append(got, ev) }
			tc.end.Release = func() { got = append(got, event.Event{Type: "release"}) }
			err := tc.end.Report(emit)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Errorf("Report = %v, want %v", err, tc.err)
			}
			var types []event.Type
			for _, ev := range got {
				types = append(types, ev.Type)
			}
			if !reflect.DeepEqual(types, tc.types) {
				t.Fatalf("events %v, want %v", types, tc.types)
			}
			if last := got[len(got)-1]; *last.Exit != tc.exit {
				t.Errorf("process:exit %+v, want %+v", *last.Exit, tc.exit)
			}
			if tc.name == "failed" {
				se := got[0].Error
				if se.ExitCode == nil || *se.ExitCode != seven || se.StderrTail != "boom" || se.Kind != event.ErrorProcess || se.Error != "agent died" {
					t.Errorf("session:error %+v", se)
				}
			}
		})
	}
	// Kinds the process is not to blame for carry neither its code nor
	// its stderr.
	called := false
	se := (&engine.TurnError{Kind: event.ErrorInterrupted, Message: "interrupted"}).SessionError(-1, func() string { called = true; return "x" })
	if se.ExitCode != nil || se.StderrTail != "" || called {
		t.Errorf("interrupted: %+v (tail read: %v)", se, called)
	}
}
