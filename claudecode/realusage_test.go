package claudecode_test

import (
	"testing"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// TestRealCLIUsage: the pinned CLI on the fake API reports each model
// call's usage as a usage:update with the fake's tokens. (Its
// rate_limit_event is for claude.ai subscriptions only: the CLI sends none
// with an API key, whatever the API's unified rate-limit headers say, so
// the decoder's test covers that event.)
func TestRealCLIUsage(t *testing.T) {
	r := newRealCLI(t)
	r.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("hi")}, InputTokens: 321, OutputTokens: 12})
	evs, err := r.turn("s1", "hello", claudecode.TurnOpts{})
	if err != nil {
		t.Fatal(err)
	}
	var in, out int64
	for _, e := range evs {
		if e.Type == event.TypeUsageUpdate {
			in += e.Usage.InputTokens
			out += e.Usage.OutputTokens
			if e.Usage.Model == "" {
				t.Errorf("usage:update without its model: %+v", e.Usage)
			}
		}
	}
	if in != 321 || out != 12 {
		t.Errorf("usage:update sums to %d in, %d out; the fake reported 321, 12", in, out)
	}
}
