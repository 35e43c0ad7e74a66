package event

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every type survives AppendJSON → UnmarshalJSON, and the wire form is
// flat: payload fields beside type and sessionId.
func TestRoundTrip(t *testing.T) {
	code := 3
	for _, ev := range []Event{
		{Type: TypeUserMessage, SessionID: "s", Text: "hi <there> & \u2028"},
		{Type: TypeSessionInit, SessionID: "s", Init: &SessionInit{ConversationID: "conv", Model: "m", Tools: []string{"Bash"}, Engine: "anthropic"}},
		{Type: TypeChatDelta, SessionID: "s", Text: "tok"},
		{Type: TypeToolStart, SessionID: "s", ParentToolUseID: "p", ToolStart: &ToolStart{ToolUseID: "t", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}},
		{Type: TypeApprovalRequested, SessionID: "s", Approval: &ApprovalRequested{RequestID: "apr_1", ToolUseID: "t", ToolName: "Bash",
			Input: json.RawMessage(`{"command":"touch x"}`), Suggestions: json.RawMessage(`null`), ExpiresAt: "2026-11-22T00:00:00Z"}},
		{Type: TypeApprovalResolved, SessionID: "s", Resolved: &ApprovalResolved{RequestID: "apr_1", Decision: DecisionDeny, By: ByTimeout, Message: "late"}},
		{Type: TypeSessionError, SessionID: "s", Error: &SessionError{Error: "x", Kind: ErrorProcess, ExitCode: &code}},
		{Type: TypeSessionRetry, SessionID: "s", Retry: &SessionRetry{Attempt: 3, MaxRetries: 10, DelayMS: 4000, Error: "connection refused", APIErrorStatus: 529}},
		{Type: TypeProcessExit, SessionID: "s", Exit: &ProcessExit{Code: -1, Signal: "SIGKILL"}},
		{Type: TypeProcessExit, SessionID: "s", Exit: &ProcessExit{Code: 0}, Time: 1764100000123},
		{Type: TypeChatComplete, SessionID: "s", Text: "done", Time: 1764100000124},
		{Type: TypeSessionComplete, SessionID: "s", Complete: &SessionComplete{CostUSD: 0.5, Usage: json.RawMessage(`{}`), NumTurns: 2, Checkpoint: "uuid-1"}},
		{Type: TypeSessionForked, SessionID: "s", Forked: &SessionForked{From: "o", AtSeq: 7}},
		{Type: TypeSessionRewound, SessionID: "s", Rewound: &SessionRewound{ToTurn: 3, Files: []string{"a.go"}, Conversation: true}},
		{Type: TypeTrustRequired, SessionID: "s", Trust: &TrustRequired{Kind: "persona", Name: "helper", Path: "/p/agents/AGENT_helper.md", Hash: "sha256:ab",
			Changes: []TrustChange{{Field: "auto_approve_tools", Trusted: "Read", Now: "Read, Bash"}}, Message: "m"}},
		{Type: TypeTrustRequired, SessionID: "s", Trust: &TrustRequired{Kind: "rules", Rules: []string{"Bash"}, Message: "m"}},
		{Type: TypePromptQueued, SessionID: "s", Queued: &PromptQueued{PromptID: "p1", Position: 2, Message: "next <one>"}},
		{Type: TypePromptDequeued, SessionID: "s", Dequeued: &PromptDequeued{PromptID: "p1", Reason: DequeuedStarted}},
		{Type: TypePlanReady, SessionID: "s", PlanReady: &PlanReady{PlanID: "pln_1", Plan: "# Plan\n1. edit", ToolUseID: "t1", ExpiresAt: "2026-11-26T03:00:00Z"}},
		{Type: TypePlanResolved, SessionID: "s", PlanResolved: &PlanResolved{PlanID: "pln_1", Decision: PlanApprove, Mode: "acceptEdits", By: "user"}},
		{Type: TypePromptDequeued, SessionID: "s", Dequeued: &PromptDequeued{PromptID: "p2", Reason: DequeuedFailed, Error: "no engine"}},
	} {
		b := ev.AppendJSON(nil)
		if !json.Valid(b) {
			t.Fatalf("%s: invalid JSON %s", ev.Type, b)
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
		if !reflect.DeepEqual(back, ev) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v\nwire %s", ev.Type, back, ev, b)
		}
	}
}

// process:exit always has its signal, null when no signal ended the
// process (004: signal: string | null); a stored event's time is
// "timestamp" (Unix ms), left out when unknown.
func TestProcessExitSignalAndTimestamp(t *testing.T) {
	for _, c := range []struct {
		ev   Event
		want string
	}{
		{Event{Type: TypeProcessExit, SessionID: "s", Exit: &ProcessExit{Code: 0}}, `{"type":"process:exit","sessionId":"s","code":0,"signal":null}`},
		{Event{Type: TypeProcessExit, SessionID: "s", Exit: &ProcessExit{Code: -1, Signal: "SIGINT"}, Time: 5}, `{"type":"process:exit","sessionId":"s","code":-1,"signal":"SIGINT","timestamp":5}`},
		{Event{Type: TypeChatDelta, SessionID: "s", Text: "x"}, `{"type":"chat:delta","sessionId":"s","text":"x"}`},
	} {
		if got := string(c.ev.AppendJSON(nil)); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

// A type this package does not know is kept, not an error.
func TestUnknownTypeKept(t *testing.T) {
	var ev Event
	if err := json.Unmarshal([]byte(`{"type":"future:thing","sessionId":"s","x":1}`), &ev); err != nil || ev.Type != "future:thing" || ev.SessionID != "s" {
		t.Fatalf("%+v %v", ev, err)
	}
}

// One name: ConversationID is written as the specification's
// claudeSessionId for every engine, and a session:init stored before the
// one name (engineSessionId for an engine other than Claude Code) reads
// the same.
func TestConversationID(t *testing.T) {
	b, err := json.Marshal(Event{Type: TypeSessionInit, SessionID: "s", Init: &SessionInit{ConversationID: "thr", Engine: "codex", Model: "m"}})
	if err != nil || !strings.Contains(string(b), `"claudeSessionId":"thr"`) || strings.Contains(string(b), "engineSessionId") {
		t.Fatalf("%s %v", b, err)
	}
	for in, want := range map[string]string{
		`{"type":"session:init","sessionId":"s","claudeSessionId":"","engine":"codex","engineSessionId":"thr","model":"m","tools":[]}`: "thr",
		`{"type":"session:init","sessionId":"s","claudeSessionId":"cl","model":"m","tools":["Bash"]}`:                                  "cl",
		`{"type":"session:init","sessionId":"s","claudeSessionId":"thr","engine":"codex","model":"m","tools":[]}`:                      "thr",
	} {
		var ev Event
		if err := json.Unmarshal([]byte(in), &ev); err != nil || ev.Init == nil || ev.Init.ConversationID != want || ev.Init.Model != "m" {
			t.Errorf("%s: %+v %v", in, ev.Init, err)
		}
	}
}

func TestRetrySummary(t *testing.T) {
	for _, c := range []struct {
		r    SessionRetry
		want string
	}{
		{SessionRetry{Attempt: 3, MaxRetries: 10, DelayMS: 4045, Error: "API unreachable"}, "Retrying 3/10 in 4 s — API unreachable"},
		{SessionRetry{Attempt: 1, MaxRetries: 10, DelayMS: 583, Error: "overloaded", APIErrorStatus: 529}, "Retrying 1/10 in 0.6 s — overloaded (HTTP 529)"},
		{SessionRetry{Attempt: 2, DelayMS: 1500, Error: "x"}, "Retrying 2 in 2 s — x"},
		{SessionRetry{Attempt: 4, Error: "Connection failed"}, "Retrying 4 — Connection failed"},
	} {
		if got := c.r.Summary(); got != c.want {
			t.Errorf("got %q want %q", got, c.want)
		}
	}
}

// A retry's error text never carries a secret, a newline or more than
// MaxRetryError bytes, whatever the engine hands it.
func TestRetryErrorText(t *testing.T) {
	got := RetryErrorText("dial tcp: key sk-ant-SECRET1234\nrefused", "sk-ant-SECRET1234", "ab")
	if got != "dial tcp: key [REDACTED] refused" {
		t.Errorf("%q", got)
	}
	long := RetryErrorText(strings.Repeat("é", 300))
	if len(long) > MaxRetryError+len("…") || !utf8.ValidString(long) || !strings.HasSuffix(long, "…") {
		t.Errorf("%d bytes %q", len(long), long)
	}
	if RetryErrorText(" \n") != "unknown error" {
		t.Error("empty text")
	}
}
