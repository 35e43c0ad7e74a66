// Package rpc is `harness rpc`: the JSON-RPC 2.0 protocol on stdio of
// specification 002 (threads, turns, approvals, notifications), served
// over the core (harness.Harness) like every other door. PROTOCOL.md is
// its reference; testdata/transcripts holds sessions a test replays
// against a real server.
//
// # Where a thread is stored: the decision
//
// Specification 002 says: a thread "maps to a Session" and its threadId is
// "Same as Session ID"; "Events are persisted to
// .harness/threads/{threadId}/events.jsonl as append-only JSONL. Thread
// metadata is stored in .harness/threads/{threadId}/meta.json. Use
// thread.get to replay the full event history after a restart." It fixes
// the two paths, append-only JSONL and the replay; it does not say that a
// line is a notification (that is PROTOCOL.md's choice, "one notification
// per line"), and it does say that the thread is the session.
//
// So an RPC thread is a core session of the same ID whose one event log
// is the thread's events.jsonl (session.LogThread: the core's session
// store lays the session's log out at that path; every door that opens
// the session reads and appends the same file), with meta.json beside it.
// meta.json keeps the thread's own notifications (thread.created,
// thread.forked, thread.rolledBack: not the session's events) and, per
// turn, its turnId, the seq of its turn.started, its range of records in
// the log, its start time and its last seq. thread.get renders the turns'
// notifications from the log with the one fold (history.go), merged with
// the thread's own by seq. Rendering is deterministic: an item is named
// after the core record that opens it (item_<seq>_<n>), a turn's end time
// is its events' timestamp, and a turn's notifications are numbered from
// its turn.started, skipping the thread's own (two turns' never
// interleave: a turn's follow waits for the previous turn's end). So the
// notifications rendered after a restart are the ones sent live
// (TestATurnIsStoredOnce). The alternative, writing the notifications and
// deriving the core's log from them, was refused: the core's log is what
// the other doors, fork, rewind and the queue read.
//
// A thread stored by an older server (meta.json without "store"; its
// events.jsonl a log of notifications, {"seq", "method", "params"}, the
// seq its line, beside a session log of its own under .chirality) is read
// and goes on as it was.
package rpc
