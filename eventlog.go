package harness

import "github.com/chirality/harness/session"

// EventLog returns session id's event log, for a door that reads the
// stored events itself (from a seq, a buffer at a time) rather than
// through Follow. It checks the session as Session does (ErrInvalidID,
// ErrNotFound, ErrRootNotAllowed).
//
// The log is shared and owned by the core: read it, never Append to it
// and do not Close it (Shutdown and deleting the session do).
func (h *Harness) EventLog(id string) (*session.EventLog, error) {
	if _, err := h.Session(id); err != nil {
		return nil, err
	}
	elog, err := h.store.EventLog(id)
	if err != nil {
		return nil, mapStoreErr(err)
	}
	return elog, nil
}
