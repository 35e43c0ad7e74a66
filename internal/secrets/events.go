package secrets

import (
	"encoding/json"

	"github.com/chirality/harness/event"
)

// Events scrubs one turn's events in their order, for an event path that
// does not scrub them itself (an engine's driver read directly, a turn
// run outside any session): every secret the process's scrubber knows,
// and every credential in a known format, is Redacted.
//
// Deltas (chat:delta, thinking:delta) go through a Stream, so a secret
// split across two deltas is scrubbed as in the whole text: the end of a
// delta that could be the start of a secret is held back and given with
// the next delta of its block. A block ends at a delta of another type or
// parent and at any other event: what is held is given first, as a delta
// of its block, so no text is lost or reordered within its block. A delta
// held whole is not given at all. Any other event is scrubbed in every
// string of its JSON form (ScrubJSON).
//
// An Events is not safe for concurrent use; the zero value is ready.
type Events struct {
	stream Stream
	last   event.Event // the last delta of the current block (its type, parent, session)
	buf    []byte
}

// Add appends to out what ev becomes: the held end of the block ev ends
// (if any), then ev scrubbed (unless it is a delta held back whole).
func (s *Events) Add(out []event.Event, ev event.Event) []event.Event {
	if ev.Type == event.TypeChatDelta || ev.Type == event.TypeThinkingDelta {
		if ev.Type != s.last.Type || ev.ParentToolUseID != s.last.ParentToolUseID || ev.SessionID != s.last.SessionID {
			out = s.Flush(out)
		}
		s.last = ev
		if ev.Text = s.stream.Write(ev.Text); ev.Text == "" {
			return out
		}
		return append(out, ev)
	}
	out = s.Flush(out)
	return append(out, s.Scrub(ev))
}

// Flush appends to out what the current block holds back, as a delta of
// that block, and ends the block. Call it when the events end.
func (s *Events) Flush(out []event.Event) []event.Event {
	if tail := s.stream.Flush(); tail != "" {
		ev := s.last
		ev.Text = tail
		out = append(out, ev)
	}
	s.last = event.Event{}
	return out
}

// Scrub returns ev with every string of its JSON form scrubbed: ev itself
// when it holds no secret (the common case, without decoding anything).
func (s *Events) Scrub(ev event.Event) event.Event {
	s.buf = ev.AppendJSON(s.buf[:0])
	clean := ScrubJSON(s.buf)
	if len(clean) == len(s.buf) && (len(clean) == 0 || &clean[0] == &s.buf[0]) {
		return ev
	}
	var scrubbed event.Event
	if json.Unmarshal(clean, &scrubbed) != nil {
		// Not expected (ScrubJSON keeps valid JSON valid); never give
		// the unscrubbed event.
		return event.Event{Type: ev.Type, SessionID: ev.SessionID, ParentToolUseID: ev.ParentToolUseID, Text: Redacted}
	}
	return scrubbed
}
