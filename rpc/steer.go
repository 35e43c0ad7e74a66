package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chirality/harness"
)

// turn.steer (an extension, issue 32): the text goes into the thread's
// running turn (harness.Steer), where it arrives as a user_message item of
// that turn. No turn running is -32003; an engine that cannot steer is
// -32005 naming the engines that can; the engine still taking a previous
// steer is -32002 (try again).
func (s *Server) turnSteer(ctx context.Context, raw json.RawMessage) (any, *Error) {
	t, err := s.thread(raw)
	if err != nil {
		return nil, err
	}
	var p struct {
		Input []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"input"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	var texts []string
	for _, in := range p.Input {
		if in.Type != "text" {
			return nil, errorf(CodeInvalidParams, fmt.Sprintf("invalid params: input type %q: only text is supported", clip(in.Type)))
		}
		texts = append(texts, in.Text)
	}
	text := strings.Join(texts, "\n\n")
	if len(text) > harness.MaxQueuedMessage {
		return nil, errorf(CodeInvalidParams, fmt.Sprintf("invalid params: input is %d bytes, over the limit of %d", len(text), harness.MaxQueuedMessage))
	}
	if strings.TrimSpace(text) == "" {
		return nil, errorf(CodeInvalidParams, "invalid params: input needs a non-empty text item")
	}
	t.mu.Lock()
	sid := t.meta.SessionID
	t.mu.Unlock()
	if sid == "" {
		return nil, errorf(CodeTurnNotFound, "turn not found: thread "+t.meta.ThreadID+" has no turn running")
	}
	if serr := s.h.Steer(ctx, sid, text); serr != nil {
		return nil, coreError(fmt.Errorf("thread %s: %w", t.meta.ThreadID, serr))
	}
	return map[string]any{"ok": true}, nil
}

// plan.decide (an extension, issue 32): a person's decision on the plan
// the thread's turn waits with (the plan.ready notification): approve
// (mode default or acceptEdits: the agent goes on, the thread's next
// turns run in it) or revise (feedback goes back; the agent keeps
// planning). No plan waiting is -32004; a bad decision -32602.
func (s *Server) planDecide(raw json.RawMessage) (any, *Error) {
	t, err := s.thread(raw)
	if err != nil {
		return nil, err
	}
	var p struct {
		Decision string `json:"decision"`
		Mode     string `json:"mode"`
		Feedback string `json:"feedback"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	if err := firstTooLong(tooLong("decision", p.Decision, MaxNameBytes), tooLong("mode", p.Mode, MaxNameBytes)); err != nil {
		return nil, err
	}
	t.mu.Lock()
	sid := t.meta.SessionID
	t.mu.Unlock()
	if sid == "" {
		return nil, errorf(CodeApprovalMissing, "plan not found: thread "+t.meta.ThreadID+" has no plan waiting")
	}
	if derr := s.h.DecidePlan(sid, harness.PlanDecision{Decision: p.Decision, Mode: p.Mode, Feedback: p.Feedback}); derr != nil {
		return nil, coreError(fmt.Errorf("thread %s: %w", t.meta.ThreadID, derr))
	}
	return map[string]any{"ok": true}, nil
}
