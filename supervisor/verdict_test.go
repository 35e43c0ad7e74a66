package supervisor_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/chirality/harness/supervisor"
)

func TestParseVerdict(t *testing.T) {
	long := strings.Repeat("x", supervisor.MaxMessage+50)
	for _, tc := range []struct {
		in     string
		action supervisor.Action
		msg    string
		bad    bool
	}{
		{"OK", supervisor.ActionOK, "", false},
		{"  ok  \n", supervisor.ActionOK, "", false},
		{"OK the agent is fine", supervisor.ActionOK, "", false},
		{"\n\nCORRECTION stop re-running the same test", supervisor.ActionCorrection, "stop re-running the same test", false},
		{"CORRECTION: read the error first", supervisor.ActionCorrection, "read the error first", false},
		{"correction - use the API you were given", supervisor.ActionCorrection, "use the API you were given", false},
		{"**CORRECTION** check the docs", supervisor.ActionCorrection, "check the docs", false},
		{"`THINK_DEEPER` why would the cache be stale?`", supervisor.ActionThinkDeeper, "why would the cache be stale?", false},
		{"THINK_DEEPER consider\tthe   race", supervisor.ActionThinkDeeper, "consider the race", false},
		{"ESCALATION it deletes files outside the repo\nmore lines are ignored", supervisor.ActionEscalation, "it deletes files outside the repo", false},
		{"CORRECTION", supervisor.ActionOK, "", true},
		{"CORRECTION:   ", supervisor.ActionOK, "", true},
		{"ESCALATION", supervisor.ActionOK, "", true},
		{"", supervisor.ActionOK, "", true},
		{"   \n \n", supervisor.ActionOK, "", true},
		{"I think the agent is doing fine.", supervisor.ActionOK, "", true},
		{"OKAY", supervisor.ActionOK, "", true},
		{"THINK-DEEPER x", supervisor.ActionOK, "", true},
		{"CORRECTIONS x", supervisor.ActionOK, "", true},
		{"CORRECTION a\x00b\x1bc", supervisor.ActionCorrection, "a b c", false},
		{"CORRECTION bad \xff utf8", supervisor.ActionCorrection, "bad \uFFFD utf8", false},
		{"CORRECTION " + long, supervisor.ActionCorrection, strings.Repeat("x", supervisor.MaxMessage) + "…", false},
	} {
		v, err := supervisor.ParseVerdict(tc.in)
		if (err != nil) != tc.bad || (err != nil && !errors.Is(err, supervisor.ErrUnparseable)) {
			t.Errorf("%q: err %v, want unparseable %v", tc.in, err, tc.bad)
		}
		if v.Action != tc.action || v.Message != tc.msg {
			t.Errorf("%q: got %+v, want %s %q", tc.in, v, tc.action, tc.msg)
		}
	}
}

// FuzzParseVerdict: any answer gives a known action; a message only with
// an action that needs one, on one line, valid UTF-8, bounded; never a
// panic.
func FuzzParseVerdict(f *testing.F) {
	for _, s := range []string{"OK", "CORRECTION fix it", "THINK_DEEPER hm", "ESCALATION help", "**CORRECTION**: x", "", "\xff\xfe", "CORRECTION \x00\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, err := supervisor.ParseVerdict(in)
		switch v.Action {
		case supervisor.ActionOK:
			if v.Message != "" {
				t.Fatalf("OK with a message: %+v", v)
			}
		case supervisor.ActionCorrection, supervisor.ActionThinkDeeper, supervisor.ActionEscalation:
			if err != nil || v.Message == "" {
				t.Fatalf("%+v with err %v", v, err)
			}
		default:
			t.Fatalf("unknown action %q", v.Action)
		}
		if err != nil && v.Action != supervisor.ActionOK {
			t.Fatalf("error %v with %+v", err, v)
		}
		if strings.ContainsAny(v.Message, "\n\r\x00") || !utf8.ValidString(v.Message) || utf8.RuneCountInString(v.Message) > supervisor.MaxMessage+1 {
			t.Fatalf("bad message %q", v.Message)
		}
	})
}
