package codex

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/lazyre"
)

// Tool names the UI sees for Codex's items.
const (
	ToolShell      = "shell"       // commandExecution
	ToolApplyPatch = "apply_patch" // fileChange
)

// mapper turns the app-server's notifications into UI events and its
// approval requests into Approver calls. It runs on the turn's goroutine.
type mapper struct {
	t       *Turn
	started map[string]bool
	inputs  map[string]json.RawMessage
	names   map[string]string
	output  map[string]*strings.Builder
	usage   usage
	calls   int
	retries int // the turn's error notifications with willRetry

	plan       *planItem // the current Codex turn's proposed plan (plan.go)
	lastTurn   string    // the last completed Codex turn's id
	durationMS int64     // the Codex turns' durations, summed
}

type usage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
	TotalTokens           int64 `json:"total_tokens"`
}

func newMapper(t *Turn) *mapper {
	return &mapper{t: t, started: map[string]bool{}, inputs: map[string]json.RawMessage{}, names: map[string]string{}, output: map[string]*strings.Builder{}}
}

// itemParams is the part of item/started and item/completed we read.
type itemParams struct {
	Item struct {
		Type             string          `json:"type"`
		ID               string          `json:"id"`
		Text             string          `json:"text"`
		Command          string          `json:"command"`
		Cwd              string          `json:"cwd"`
		Status           string          `json:"status"`
		AggregatedOutput *string         `json:"aggregatedOutput"`
		ExitCode         *int            `json:"exitCode"`
		Changes          json.RawMessage `json:"changes"`
		Server           string          `json:"server"`
		Tool             string          `json:"tool"`
		Arguments        json.RawMessage `json:"arguments"`
		Result           json.RawMessage `json:"result"`
		Error            json.RawMessage `json:"error"`
	} `json:"item"`
}

type deltaParams struct {
	ItemID string `json:"itemId"`
	Delta  string `json:"delta"`
}

// handle maps one message; done is true when the turn ended (err nil when
// it completed).
func (m *mapper) handle(msg Message) (done bool, err error) {
	t := m.t
	if msg.IsRequest() {
		m.request(msg)
		return false, nil
	}
	switch msg.Method {
	case "item/agentMessage/delta":
		var p deltaParams
		if json.Unmarshal(msg.Params, &p) == nil && p.Delta != "" {
			t.emit(event.Event{Type: event.TypeChatDelta, Text: p.Delta})
		}
	case "item/reasoning/summaryTextDelta", "item/reasoning/textDelta":
		var p deltaParams
		if json.Unmarshal(msg.Params, &p) == nil && p.Delta != "" {
			t.emit(event.Event{Type: event.TypeThinkingDelta, Text: p.Delta})
		}
	case "item/commandExecution/outputDelta", "item/fileChange/outputDelta":
		var p deltaParams
		if json.Unmarshal(msg.Params, &p) == nil {
			b := m.output[p.ItemID]
			if b == nil {
				b = &strings.Builder{}
				m.output[p.ItemID] = b
			}
			b.WriteString(p.Delta)
		}
	case "item/started":
		var p itemParams
		if json.Unmarshal(msg.Params, &p) == nil {
			m.toolStart(&p)
		}
	case "item/completed":
		var p itemParams
		if json.Unmarshal(msg.Params, &p) != nil {
			break
		}
		switch p.Item.Type {
		case "agentMessage":
			t.emit(event.Event{Type: event.TypeChatComplete, Text: p.Item.Text})
		case "plan":
			// Codex's proposed plan (plan collaboration mode): reviewed
			// once the turn completed (plan.go).
			m.plan = &planItem{ID: p.Item.ID, Text: p.Item.Text}
		case "commandExecution", "fileChange", "mcpToolCall":
			m.toolStart(&p)
			m.toolResult(&p)
		}
	case "thread/tokenUsage/updated":
		var p struct {
			TokenUsage struct {
				Last struct {
					TotalTokens, InputTokens, CachedInputTokens, OutputTokens, ReasoningOutputTokens int64
				} `json:"last"`
			} `json:"tokenUsage"`
		}
		if json.Unmarshal(msg.Params, &p) == nil {
			l := p.TokenUsage.Last
			m.usage.InputTokens += l.InputTokens
			m.usage.CachedInputTokens += l.CachedInputTokens
			m.usage.OutputTokens += l.OutputTokens
			m.usage.ReasoningOutputTokens += l.ReasoningOutputTokens
			m.usage.TotalTokens += l.TotalTokens
			m.calls++
			// OpenAI counts cached input within the input tokens.
			t.emit(event.Event{Type: event.TypeUsageUpdate, Usage: &event.UsageUpdate{InputTokens: max(l.InputTokens-l.CachedInputTokens, 0),
				CacheReadTokens: l.CachedInputTokens, OutputTokens: l.OutputTokens}})
		}
	case "account/rateLimits/updated":
		var p struct {
			RateLimits rateLimitSnapshot `json:"rateLimits"`
		}
		if json.Unmarshal(msg.Params, &p) == nil {
			for _, rl := range p.RateLimits.events() {
				t.emit(event.Event{Type: event.TypeRateLimit, RateLimit: rl})
			}
		}
	case "error":
		t.log.Warn().RawJSON("params", msg.Params).Msg("codex: error notification")
		m.retry(msg.Params)
	case "turn/completed":
		var p struct {
			Turn struct {
				ID         string `json:"id"`
				Status     string `json:"status"`
				DurationMS int64  `json:"durationMs"`
				Error      *struct {
					Message string `json:"message"`
				} `json:"error"`
			} `json:"turn"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		switch p.Turn.Status {
		case "completed":
			m.lastTurn = p.Turn.ID
			m.durationMS += p.Turn.DurationMS
			return true, nil
		case "interrupted":
			return true, &engine.TurnError{Kind: event.ErrorInterrupted, Message: "the turn was interrupted"}
		default:
			msg := "the turn failed"
			if p.Turn.Error != nil && p.Turn.Error.Message != "" {
				msg = p.Turn.Error.Message
			}
			return true, t.fail(event.ErrorAPI, msg)
		}
	}
	return false, nil
}

// complete emits session:complete once the harness turn's last Codex
// turn completed (one, or more after a plan review: plan.go).
func (m *mapper) complete() {
	u, _ := json.Marshal(m.usage)
	// The last Codex turn's id is the checkpoint: thread/fork's
	// lastTurnId (Request.ResumeAt) keeps the thread up to it.
	m.t.emit(event.Event{Type: event.TypeSessionComplete, Complete: &event.SessionComplete{Usage: u, NumTurns: m.calls, DurationMS: m.durationMS, Checkpoint: m.lastTurn}})
}

// reconnectCount reads "3/5" in Codex's "Reconnecting... 3/5 (…)".
var reconnectCount = lazyre.New(`(\d+)/(\d+)`)

// retry maps an error notification that Codex will retry
// ({"error":{"message":"Reconnecting... waiting for network",
// "codexErrorInfo":{"responseStreamDisconnected":{"httpStatusCode":null}},
// "additionalDetails":"Connection failed: error sending request"},
// "willRetry":true}, seen on codex 0.x against a closed port) to
// session:retry. Codex says neither the delay (DelayMS 0) nor, always, the
// attempt: the attempt is then this turn's count of retries and the
// maximum 0 (unknown).
func (m *mapper) retry(raw json.RawMessage) {
	var p struct {
		Error struct {
			Message           string                     `json:"message"`
			AdditionalDetails *string                    `json:"additionalDetails"`
			CodexErrorInfo    map[string]json.RawMessage `json:"codexErrorInfo"`
		} `json:"error"`
		WillRetry bool `json:"willRetry"`
	}
	if json.Unmarshal(raw, &p) != nil || !p.WillRetry {
		return
	}
	m.retries++
	r := &event.SessionRetry{Attempt: m.retries}
	if c := reconnectCount.FindStringSubmatch(p.Error.Message); c != nil {
		r.Attempt, _ = strconv.Atoi(c[1])
		r.MaxRetries, _ = strconv.Atoi(c[2])
	}
	for _, v := range p.Error.CodexErrorInfo {
		var st struct {
			HTTPStatusCode *int `json:"httpStatusCode"`
		}
		if json.Unmarshal(v, &st) == nil && st.HTTPStatusCode != nil {
			r.APIErrorStatus = *st.HTTPStatusCode
		}
	}
	text := p.Error.Message
	if p.Error.AdditionalDetails != nil && *p.Error.AdditionalDetails != "" {
		text = *p.Error.AdditionalDetails
	}
	if m.t.scrub != nil {
		text = m.t.scrub(text) // the child's secret values
	}
	r.Error = event.RetryErrorText(text)
	m.t.emit(event.Event{Type: event.TypeSessionRetry, Retry: r})
}

// toolStart emits tool:start once per tool item.
func (m *mapper) toolStart(p *itemParams) {
	it := &p.Item
	var name string
	var input any
	switch it.Type {
	case "commandExecution":
		name, input = ToolShell, map[string]any{"command": it.Command, "cwd": it.Cwd}
	case "fileChange":
		name, input = ToolApplyPatch, map[string]any{"changes": it.Changes}
	case "mcpToolCall":
		name, input = "mcp__"+it.Server+"__"+it.Tool, it.Arguments
	default:
		return
	}
	if m.started[it.ID] {
		return
	}
	m.started[it.ID] = true
	in, _ := json.Marshal(input)
	if string(in) == "null" {
		in = json.RawMessage("{}")
	}
	m.inputs[it.ID], m.names[it.ID] = in, name
	m.t.emit(event.Event{Type: event.TypeToolStart, ToolStart: &event.ToolStart{ToolUseID: it.ID, Name: name, Input: in}})
}

func (m *mapper) toolResult(p *itemParams) {
	it := &p.Item
	var content string
	switch {
	case it.AggregatedOutput != nil:
		content = *it.AggregatedOutput
	case m.output[it.ID] != nil:
		content = m.output[it.ID].String()
	case it.Type == "mcpToolCall" && len(it.Result) > 0 && string(it.Result) != "null":
		content = string(it.Result)
	case len(it.Error) > 0 && string(it.Error) != "null":
		content = string(it.Error)
	}
	delete(m.output, it.ID)
	isErr := it.Status != "completed" || (it.ExitCode != nil && *it.ExitCode != 0)
	m.t.emit(event.Event{Type: event.TypeToolResult, ToolResult: &event.ToolResult{ToolUseID: it.ID, Content: content, IsError: isErr}})
}

// request answers a server→client request: approvals through the
// Approver (from a goroutine of their own, started once the events before
// the question were read), anything else with an error.
func (m *mapper) request(msg Message) {
	t := m.t
	switch msg.Method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
	default:
		_ = t.peer.replyError(msg.ID, -32601, "method not supported by the harness: "+msg.Method)
		return
	}
	req := approvalRequest(msg.Method, msg.Params, m.inputs)
	id := msg.ID
	approver := t.req.Approver
	t.approvals.Add(1)
	queued := t.s.Defer(func() {
		go func() {
			defer t.approvals.Done()
			dec := engine.ApprovalDecision{Message: "no approver"}
			if approver != nil && t.ctx.Err() == nil {
				dec = approver.Ask(t.ctx, req)
			}
			// never acceptForSession (dec.Always): Codex would remember
			// the approval by a rule of its own; the core remembers the
			// exact use (permrule) and answers Codex's next request by it
			answer := "decline"
			if dec.Allow {
				answer = "accept"
			}
			_ = t.peer.reply(id, map[string]any{"decision": answer})
		}()
	})
	if !queued { // the stream already ended: nobody is left to ask
		t.approvals.Done()
		_ = t.peer.reply(id, map[string]any{"decision": "decline"})
	}
}

// rateLimitSnapshot is Codex's RateLimitSnapshot (account/rateLimits/updated,
// account/rateLimits/read): a limit's primary and secondary windows.
type rateLimitSnapshot struct {
	LimitID   *string          `json:"limitId"`
	LimitName *string          `json:"limitName"`
	Primary   *rateLimitWindow `json:"primary"`
	Secondary *rateLimitWindow `json:"secondary"`
}

type rateLimitWindow struct {
	UsedPercent        float64 `json:"usedPercent"`
	WindowDurationMins *int64  `json:"windowDurationMins"`
	ResetsAt           *int64  `json:"resetsAt"`
}

// events is one rate_limit per window the snapshot has, named
// primary/secondary (after the limit's name or id when it has one).
func (s rateLimitSnapshot) events() []*event.RateLimit {
	name := ""
	if s.LimitName != nil && *s.LimitName != "" {
		name = *s.LimitName + " "
	} else if s.LimitID != nil && *s.LimitID != "" && *s.LimitID != "codex" {
		name = *s.LimitID + " "
	}
	var out []*event.RateLimit
	for _, w := range []struct {
		which string
		w     *rateLimitWindow
	}{{"primary", s.Primary}, {"secondary", s.Secondary}} {
		if w.w == nil {
			continue
		}
		rl := &event.RateLimit{Limit: name + w.which, UsedPercent: w.w.UsedPercent}
		if w.w.ResetsAt != nil {
			rl.ResetsAt = *w.w.ResetsAt
		}
		if w.w.WindowDurationMins != nil {
			rl.WindowMinutes = *w.w.WindowDurationMins
		}
		out = append(out, rl)
	}
	return out
}

// widensPatch reports whether a Codex file change approval request asks
// for more than its patch: a grantRoot (writes under that root for the
// rest of the session) or a reason (e.g. extra write access).
func widensPatch(reason, grantRoot string) bool {
	return strings.TrimSpace(reason) != "" || strings.TrimSpace(grantRoot) != ""
}

// approvalRequest is what a Codex approval request (method, params) asks
// the Approver; inputs are the tool items' inputs by item id.
//
// Every command approval request of Codex (0.169, untrusted) is marked
// engine.ApprovalRequest.Unsandboxed: once accepted, Codex may run the
// command outside its sandbox, and the request does not always say so.
// What can say so: a reason (the model's justification with
// sandbox_permissions require_escalated; Codex's own "command failed;
// retry without sandbox?"; the network's reason), additional
// permissions, a networkApprovalContext (a host to reach). But
// an escalation the model asks for without a justification comes as a
// request that looks exactly like a plain command's (verified on 0.169:
// no reason, no additional permissions), and an accepted one runs outside
// the sandbox, where it can write anything the profile does not deny
// (a user config of Codex's, ~/.bashrc). A kind other than "command"
// (writeStdin) carries only the command, not the input it would send;
// it is shown (kind), and so is the host a network request would reach.
// So no rule and no earlier "always" may allow a Codex command: a person
// answers each one (none is asked under never: Codex runs only what its
// own execpolicy allows, inside the sandbox, and refuses escalations).
func approvalRequest(method string, params json.RawMessage, inputs map[string]json.RawMessage) engine.ApprovalRequest {
	var p struct {
		ItemID                 string `json:"itemId"`
		Command                string `json:"command"`
		Cwd                    string `json:"cwd"`
		Reason                 string `json:"reason"`
		Kind                   string `json:"kind"`
		NetworkApprovalContext *struct {
			Host string `json:"host"`
		} `json:"networkApprovalContext"`
		GrantRoot string `json:"grantRoot"`
	}
	_ = json.Unmarshal(params, &p)
	req := engine.ApprovalRequest{ToolUseID: p.ItemID}
	if method == "item/commandExecution/requestApproval" {
		req.ToolName = ToolShell
		req.Unsandboxed = true // Codex may run it outside the sandbox (above)
		in := map[string]any{"command": p.Command, "cwd": p.Cwd, "reason": p.Reason}
		if p.NetworkApprovalContext != nil && p.NetworkApprovalContext.Host != "" {
			in["host"] = p.NetworkApprovalContext.Host // what the command would reach
		}
		if p.Kind != "" && p.Kind != "command" {
			in["kind"] = p.Kind // e.g. writeStdin: input to a running command, not the command
		}
		req.Input, _ = json.Marshal(in)
	} else {
		req.ToolName = ToolApplyPatch
		req.Input = inputs[p.ItemID]
		if req.Input == nil {
			req.Input = json.RawMessage("{}")
		}
		// A grant of a root (writes under it for the rest of the
		// session) or a reason (more write access) is more than this
		// patch: marked, and what it asks for is shown.
		if req.Unsandboxed = widensPatch(p.Reason, p.GrantRoot); req.Unsandboxed {
			in := map[string]any{}
			_ = json.Unmarshal(req.Input, &in)
			if in == nil {
				in = map[string]any{}
			}
			if strings.TrimSpace(p.GrantRoot) != "" {
				in["grantRoot"] = p.GrantRoot
			}
			if strings.TrimSpace(p.Reason) != "" {
				in["reason"] = p.Reason
			}
			req.Input, _ = json.Marshal(in)
		}
	}
	return req
}
