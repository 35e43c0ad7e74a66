package harness

import (
	"errors"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// A door reads a session's stored events through EventLog: the core's
// one shared log (what Follow reads), checked as Session checks.
func TestEventLog(t *testing.T) {
	e := newTestEnv(t, nil)
	if _, err := e.h.EventLog("not-a-uuid"); !errors.Is(err, ErrInvalidID) {
		t.Errorf("a bad id: %v, want ErrInvalidID", err)
	}
	if _, err := e.h.EventLog("5b0e3a52-8a3c-4d6e-9f1a-2b3c4d5e6f70"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown session: %v, want ErrNotFound", err)
	}
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	e.api.Script(claudetest.TextReply("the answer KIWI"))
	evs, tr := e.turn(s.ID, "a question")
	if tr.Err() != nil {
		t.Fatal(tr.Err())
	}
	elog, err := e.h.EventLog(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := e.h.EventLog(s.ID); again != elog {
		t.Error("a second call opened another log: the log is the core's, shared")
	}
	var types []string
	var text strings.Builder
	for rec, err := range elog.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		var ev event.Event
		if err := ev.UnmarshalJSON(rec.Event); err != nil {
			t.Fatal(err)
		}
		types = append(types, string(ev.Type))
		text.Write(rec.Event)
	}
	if len(types) != len(evs) || types[0] != string(event.TypeUserMessage) || !strings.Contains(text.String(), "KIWI") {
		t.Errorf("the log has %d events %v, the turn %d; want the same, from user:message, with the answer", len(types), types, len(evs))
	}

	// A Harness whose roots do not hold the session's project does not
	// hand out its log.
	other := e.cfg
	other.Roots = []string{realDir(t)}
	e.cfg = other
	if _, err := e.open().EventLog(s.ID); !errors.Is(err, ErrRootNotAllowed) {
		t.Errorf("a session outside the roots: %v, want ErrRootNotAllowed", err)
	}
}
