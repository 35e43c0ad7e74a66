// Package logging writes the harness's structured log: spec 004's
// LogEntry JSON lines in <projectRoot>/.chirality/logs/harness.log,
// rotated at a size limit.
//
// The flow:
//
//	log, closer, err := logging.New(root)   // opens or creates harness.log
//	if err != nil { ... }
//	defer closer.Close()
//	log.Info().Str("sessionId", id).Str("persona", "REVIEWER").
//		Str("userMessage", logging.Truncate(msg, 200)).Msg(logging.EventTurnStart)
//
// writes
//
//	{"timestamp":"2026-11-25T23:19:57.123Z","sessionId":"…","level":"info","event":"turn:start","data":{"persona":"REVIEWER","userMessage":"…"}}
//
// The logger is zerolog's; Entries reshapes its lines: the message is the
// event, sessionId is lifted out, every other field goes into data. The
// events and data fields of the spec's table are the Event constants.
// LogPanic and Unhandled log an unhandled error with its message and
// stack.
//
// When a write would take the file past its limit (DefaultMaxSize, 10 MB),
// harness.log is renamed to harness.log.1 (replacing the previous one, so
// one old file is kept) and a new harness.log is started. A log line is
// never split between the two files.
//
// What goes into the log is the caller's business: callers must redact
// secrets (the API key, filtered environment values) before logging; this
// package does not inspect fields. Truncate cuts long strings (messages,
// tool inputs, stderr lines) to a bounded prefix.
package logging
