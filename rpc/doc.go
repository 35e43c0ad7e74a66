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
// So the one store of an RPC thread is to be the core's: for a session the
// RPC door creates, the core keeps the session's one event log at the
// thread's path (a per-session location of the log in the core's session
// store, recorded in the session's file, so every door that opens the
// session reads and appends the same file), with meta.json beside it;
// thread.get renders the notifications from that log with the one fold
// of events (package event's), deterministically (item ids from the seq
// of the record that opens the item, turn ids and where turns start from
// meta.json, times from the events' own timestamps), so the notifications
// replayed after a restart are the ones sent live. A thread stored before
// (a log of notifications) is read as it is. The alternative, writing the
// notifications and deriving the core's log from them, was refused: the
// core's log is what the other doors, fork, rewind and the queue read.
//
// Done: a turn's notifications can be rendered again from the core's log
// alone. The follower names each item after the core record that opens it
// (item_<seq>_<n>), takes a turn's end time from its events' timestamps,
// and meta.json keeps each turn's range of core seqs and start time
// (turnRef); TestTurnsRenderAgainFromTheCoreLog renders every turn of a
// thread again after a restart and gets the stored notifications, byte
// for byte.
//
// Not done yet: the door still writes each notification to events.jsonl
// ({"seq", "method", "params"}, the seq its line) besides the core's log
// of the session named in meta.json, so an RPC turn is stored twice, in
// two formats. What remains, in order: the core takes a session's log
// place from the door (harness.SessionSpec; a place inside the project,
// checked, as an agent can write the session's file), so the session's one
// log is the thread's events.jsonl; meta.json keeps the thread's own
// notifications (thread.created, thread.forked, thread.rolledBack) and
// each turn's last seq, so the next seq is known without a log of
// notifications; thread.get streams the notes and the turns rendered
// again in seq order; thread.fork renders the kept turns from the fork's
// copy of the log; a thread stored before keeps its log of notifications.
package rpc
