package harness

// Hold marks session id busy, as a running turn does, until release is
// called: a turn, a delete or a rewind of it fails with ErrBusy
// meanwhile. It fails with ErrBusy while a turn runs and ErrClosed after
// Shutdown. A cluster node holds a session while it moves it to another
// node (package cluster), so that no turn starts on the way.
//
// Unlike the core's own reservations, its release starts nothing queued
// in the session (RunQueue does).
func (h *Harness) Hold(id string) (release func(), err error) { return h.reserveAnd(id, false) }

// MoveRequest is the body of POST /api/harness/session/{id}/move (a
// cluster node's, serve --node): the node to move the session to.
type MoveRequest struct {
	Node string `json:"node" doc:"the node to move the session to; it must see the session's project root at the same path (shared storage)"`
}

// MoveResult answers a session's move.
type MoveResult struct {
	SessionID string `json:"sessionId" oa:"format=uuid"`
	From      string `json:"from" doc:"the node that owned it"`
	Node      string `json:"node" doc:"the node that owns it now"`
	LastSeq   int64  `json:"lastSeq" doc:"the last seq of its events when it moved; the new owner goes on from the next" oa:"min=0"`
}

// DropEventLog closes this process's open handle on session id's event
// log, so that the next read or append opens the file again (the store
// reopens a closed log on demand): for a session another node appended
// to meanwhile (a cluster move on shared storage), whose handle here
// holds a stale last seq.
func (h *Harness) DropEventLog(id string) {
	if l, err := h.store.EventLog(id); err == nil {
		l.Close()
	}
}
