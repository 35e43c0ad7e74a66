package claudecode_test

import (
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// Issue 29.5: the driver's own events never carry a secret, whoever reads
// them (harness turn, harness replay, a Go program on the Manager). The
// real CLI runs `echo $ANTHROPIC_API_KEY` and `env` through Bash with a
// key in no known format (only its registration can scrub it), then the
// model repeats the key and a withheld token in an answer streamed three
// characters a delta, so each secret is split across deltas.
func TestRealCLIEventsCarryNoSecret(t *testing.T) {
	const key = "plain-api-key-for-the-driver-test"    // the agent's own key: it gets it
	const token = "withheld-token-for-the-driver-test" // withheld from the agent
	r := newRealCLI(t, "ANTHROPIC_API_KEY="+key, "MY_SERVICE_TOKEN="+token)
	r.api.Script(
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("toolu_env", "Bash",
			map[string]any{"command": "echo $ANTHROPIC_API_KEY; env", "description": "show the key"})}},
		claudetest.Reply{Blocks: []claudetest.Block{
			claudetest.Thinking("the key is " + key + " and the token " + token),
			claudetest.Text("your key is " + key + " and your token is " + token + "."),
		}, ChunkSize: 3},
	)
	evs, err := r.turn("s-secrets", "what is my key?", claudecode.TurnOpts{AllowedTools: []string{"Bash"}})
	if err != nil {
		t.Fatal(err)
	}
	// The spy: the key reached the agent (or the test proves nothing).
	var sent string
	for _, req := range r.api.Requests() {
		for _, tr := range req.ToolResults() {
			sent += tr.Content
		}
	}
	if !strings.Contains(sent, key) {
		t.Fatalf("the agent's Bash did not print the key: %q", sent)
	}
	for _, e := range evs {
		j := string(e.AppendJSON(nil))
		for _, s := range []string{key, token} {
			if strings.Contains(j, s) {
				t.Errorf("%s carries the secret %q: %.300s", e.Type, s, j)
			}
		}
	}
	res := ofType(evs, event.TypeToolResult)
	if len(res) != 1 || !strings.Contains(res[0].ToolResult.Content, "ANTHROPIC_API_KEY=[REDACTED]") {
		t.Errorf("tool:result is not the scrubbed output of env: %+v", res)
	}
	want := "your key is [REDACTED] and your token is [REDACTED]."
	if got := joinText(evs, event.TypeChatDelta); got != want {
		t.Errorf("the deltas make %q, want %q (no text lost, the secrets replaced whole)", got, want)
	}
	if got := joinText(evs, event.TypeThinkingDelta); got != "the key is [REDACTED] and the token [REDACTED]" {
		t.Errorf("the thinking deltas make %q", got)
	}
	var complete string
	for _, e := range ofType(evs, event.TypeChatComplete) {
		complete += e.Text
	}
	if !strings.Contains(complete, want) {
		t.Errorf("chat:complete %q", complete)
	}
}
