package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/chirality/harness/event"
)

// A thread stored in its session's log (meta.Store storeSession; see the
// package doc): its history is its own notifications (meta.Notes) and its
// turns' notifications rendered again from the session's log, merged by
// seq. A turn's notifications have consecutive seqs from its turn.started
// (meta.Turns' Seq), skipping those of the thread's own notifications
// sent meanwhile; two turns' never interleave (a turn's follow waits for
// the previous turn's end).

// noteLine is a stored notification: {"seq", "method", "params"}.
func noteLine(seq int64, method string, p map[string]any) json.RawMessage {
	p["seq"] = seq
	b, _ := json.Marshal(map[string]any{"seq": seq, "method": method, "params": p})
	return b
}

// seqOf is the seq of a stored notification.
func seqOf(line json.RawMessage) int64 {
	var h struct {
		Seq int64 `json:"seq"`
	}
	_ = json.Unmarshal(line, &h)
	return h.Seq
}

// noteSeqs are the seqs of t's own notifications. The caller holds t.mu.
func noteSeqs(t *thread) map[int64]bool {
	out := make(map[int64]bool, len(t.meta.Notes))
	for _, n := range t.meta.Notes {
		out[seqOf(n)] = true
	}
	return out
}

// renderTurn sends ref's notifications, rendered from the session's log,
// to emit (each with its seq and its line {"seq", "method", "params"}). It
// reads only what is stored, up to ref.To, so a running turn renders as
// far as its notifications were sent. The caller holds t.mu.
func (s *Server) renderTurn(t *thread, ref turnRef, notes map[int64]bool, emit func(seq int64, line []byte)) error {
	if ref.From == 0 && ref.To == 0 {
		return fmt.Errorf("turn %s: meta.json does not say where it is in the session's log", ref.TurnID)
	}
	seq := ref.Seq
	f := &follower{s: s, t: t, turn: Turn{TurnID: ref.TurnID, ThreadID: t.meta.ThreadID, Status: "running", Time: turnTime{Started: ref.Started}},
		tools: map[string]toolItem{}, approvals: map[string]string{}}
	f.emit = func(method string, p map[string]any) int64 {
		for notes[seq] {
			seq++
		}
		emit(seq, noteLine(seq, method, p))
		seq++
		return seq - 1
	}
	f.notify("turn.started", map[string]any{"turn": f.turn})
	elog, err := s.h.EventLog(t.meta.SessionID)
	if err != nil {
		return err
	}
	var ev event.Event
	for rec, err := range elog.Records(ref.From) {
		if err != nil {
			return err
		}
		if rec.Seq > ref.To {
			break
		}
		if ev = (event.Event{}); ev.UnmarshalJSON(rec.Event) != nil {
			continue
		}
		f.record(rec.Seq, &ev)
	}
	return nil
}

// lastSeq is the seq of t's last notification: of its last note or its
// last turn's end (rendering the turn when the server stopped before it
// ended). The caller holds t.mu or owns t.
func (s *Server) lastSeq(t *thread) int64 {
	last := int64(0)
	notes := noteSeqs(t)
	for seq := range notes {
		last = max(last, seq)
	}
	for _, ref := range t.meta.Turns {
		end := ref.End
		if end == 0 {
			if err := s.renderTurn(t, ref, notes, func(seq int64, _ []byte) { end = seq }); err != nil {
				s.log.Warn().Err(err).Str("thread", t.meta.ThreadID).Msg("a turn could not be rendered from its session's log")
			}
		}
		last = max(last, end, ref.Seq)
	}
	return last
}

// writeHistory writes thread.get's answer {"thread", "events"}: the
// events are what body writes, one at a time. The caller holds t.mu.
func writeHistory(w *bufio.Writer, t *thread, body func(write func(line []byte))) {
	head, _ := json.Marshal(t.meta.Thread)
	w.WriteString(`{"thread":`)
	w.Write(head)
	w.WriteString(`,"events":[`)
	first := true
	body(func(line []byte) {
		if !first {
			w.WriteByte(',')
		}
		first = false
		w.Write(line)
	})
	w.WriteString("]}")
}

// history is thread.get's answer for t: {thread, events}, written one
// notification at a time (the thread held meanwhile, so none is sent
// while it is written).
func (s *Server) history(t *thread) streamer {
	return func(w *bufio.Writer) {
		t.rec.Lock() // no turn's record half applied
		defer t.rec.Unlock()
		t.mu.Lock()
		defer t.mu.Unlock()
		writeHistory(w, t, func(write func([]byte)) { s.renderHistory(t, write) })
	}
}

// renderHistory writes t's notifications in seq order: its notes and its
// turns rendered from the session's log. The caller holds t.mu.
func (s *Server) renderHistory(t *thread, write func([]byte)) {
	notes, next := t.meta.Notes, 0
	// The notes before seq, then the line.
	var compact bytes.Buffer
	writeNote := func(i int) { // meta.json holds it indented
		compact.Reset()
		if json.Compact(&compact, notes[i]) == nil {
			write(compact.Bytes())
		}
	}
	emit := func(seq int64, line []byte) {
		for next < len(notes) && seqOf(notes[next]) < seq {
			writeNote(next)
			next++
		}
		write(line)
	}
	seqs := noteSeqs(t)
	for _, ref := range t.meta.Turns {
		if err := s.renderTurn(t, ref, seqs, emit); err != nil {
			s.log.Error().Err(err).Str("thread", t.meta.ThreadID).Msg("thread.get: a turn could not be rendered; the answer lacks it")
		}
	}
	for ; next < len(notes); next++ {
		writeNote(next)
	}
}
