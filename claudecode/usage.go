package claudecode

import (
	"encoding/json"
	"math"

	"github.com/chirality/harness/event"
)

// usageFields reads the token counts of an API usage object into u: a
// count the object has replaces u's (message_delta's usage is the
// message's so far).
func usageFields(raw []byte, u *event.UsageUpdate) error {
	return eachField(raw, func(key, value []byte) bool {
		var dst *int64
		switch {
		case keyIs(key, "input_tokens"):
			dst = &u.InputTokens
		case keyIs(key, "output_tokens"):
			dst = &u.OutputTokens
		case keyIs(key, "cache_read_input_tokens"):
			dst = &u.CacheReadTokens
		case keyIs(key, "cache_creation_input_tokens"):
			dst = &u.CacheWriteTokens
		default:
			return true
		}
		if n, err := intValue(value); err == nil {
			*dst = int64(n)
		}
		return true
	})
}

// callStart begins a model call's usage from its message_start's message
// (model and usage).
func (m *mapper) callStart(parent string, message []byte) error {
	u := &event.UsageUpdate{}
	err := eachField(message, func(key, value []byte) bool {
		switch {
		case keyIs(key, "model"):
			u.Model, _ = stringValue(value)
		case keyIs(key, "usage"):
			if len(value) > 0 && value[0] == '{' {
				_ = usageFields(value, u)
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	m.calls[parent] = u
	return nil
}

// callEnd completes the model call parent is streaming with its
// message_delta's usage and reports it as a usage:update. The CLI's
// result reports the cost of the whole conversation, resumed turns
// included, so the call is priced by the core's table.
func (m *mapper) callEnd(parent string, usage []byte, emit func(event.Event)) error {
	u := m.calls[parent]
	if u == nil {
		return nil
	}
	delete(m.calls, parent)
	if len(usage) > 0 && usage[0] == '{' {
		if err := usageFields(usage, u); err != nil {
			return err
		}
	}
	e := m.event(event.TypeUsageUpdate, parent)
	e.Usage = u
	emit(e)
	return nil
}

// rateLimit maps a rate_limit_event (claude.ai subscriptions): its
// rate_limit_info's type, utilization (0-1), status and reset time.
func (m *mapper) rateLimit(line []byte, emit func(event.Event)) error {
	var f struct {
		Info *struct {
			Status      string   `json:"status"`
			ResetsAt    *float64 `json:"resetsAt"`
			Type        string   `json:"rateLimitType"`
			Utilization *float64 `json:"utilization"`
		} `json:"rate_limit_info"`
	}
	if err := json.Unmarshal(line, &f); err != nil {
		return err
	}
	if f.Info == nil {
		return nil
	}
	rl := &event.RateLimit{Limit: f.Info.Type, Status: f.Info.Status, UsedPercent: -1}
	if rl.Limit == "" {
		rl.Limit = "claude"
	}
	if u := f.Info.Utilization; u != nil && !math.IsNaN(*u) {
		rl.UsedPercent = math.Round(*u*1000) / 10
	}
	if r := f.Info.ResetsAt; r != nil && *r > 0 && *r < math.MaxInt64 {
		rl.ResetsAt = int64(*r)
	}
	e := m.event(event.TypeRateLimit, "")
	e.RateLimit = rl
	emit(e)
	return nil
}
