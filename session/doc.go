// Package session stores harness sessions and their event logs on disk.
//
// A session is a small JSON file in its project,
// <projectRoot>/.chirality/sessions/<id>.json, where id is a UUIDv4. Next
// to it, <id>.events.jsonl holds every UI event of the session, one JSON
// object per line with an increasing "seq".
//
// The flow:
//
//	st, err := session.Open(session.Config{})         // state dir for the ID index
//	s, err := st.Create(root, "REVIEWER", "workbench") // file + index entry
//	log, err := st.EventLog(s.ID)                       // shared, store-owned
//	seq, err := log.Append([]byte(`{"type":"chat:delta","text":"hi"}`))
//	s.ConversationID = "…"; err = st.Save(s)            // atomic replace
//	s, err = st.Get(id)                                 // by ID alone, after a restart too
//	recs, err := log.ReadAfter(lastSeen)                // history for a reloaded GUI
//	err = st.Delete(id)                                 // file, event log, prompt file
//
// # Finding a session by ID alone
//
// The gateway serves GET /api/harness/session/:id without a project root,
// so the store keeps an index in its state directory ($XDG_STATE_HOME/harness
// or ~/.local/state/harness): one small file per session,
// <stateDir>/session-index/<id>.json, holding the project root. One file per
// entry means no read-modify-write of a shared file, so two processes (the
// gateway and the CLI) never lose each other's updates and need no lock.
// The index is a cache of where sessions live, never the truth: a session
// file that is gone drops its entry (self-healing); a missing or broken
// entry is rebuilt by GetIn, Save, or by Get scanning the project roots the
// index already knows.
//
// # Durability
//
// Session files are written atomically (temporary file in the same
// directory, fsync, rename), 0600 in 0700 directories: a crash leaves the
// old or the new file, never a torn one. The event log is appended without
// fsync (Sync on demand); after a crash a torn last line is cut off when
// the log is next opened and seq continues from the last whole line.
//
// A Store and an EventLog are safe for concurrent use.
package session
