package logging

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"
)

// Entry is one line of harness.log, spec 004's LogEntry:
//
//	{"timestamp":"2026-11-25T23:19:57.123Z","sessionId":"…","level":"info","event":"turn:start","data":{…}}
//
// SessionID is "" on a line about no session; Data is left out when
// empty.
type Entry struct {
	Timestamp string         `json:"timestamp"` // ISO 8601 with milliseconds, UTC
	SessionID string         `json:"sessionId"`
	Level     string         `json:"level"` // debug, info, warn or error
	Event     string         `json:"event"`
	Data      map[string]any `json:"data,omitempty"`
}

// TimeFormat is Entry.Timestamp's layout: ISO 8601 with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// The events of spec 004's logging table (§2.7), the message of each
// line (zerolog's Msg) and its data's fields:
//
//	turn:start      info   userMessage (first 200 chars), persona, mode
//	process:spawn   info   command (API key redacted), pid
//	session:init    info   claudeSessionId, model, tools
//	tool:start      info   toolName, inputSummary (first 200 chars)
//	tool:result     info   toolName, isError, contentLength
//	turn:complete   info   costUsd, inputTokens, outputTokens, durationMs
//	resume:attempt  info   claudeSessionId
//	resume:fail     warn   claudeSessionId, error
//	process:exit    info   exitCode, signal, durationMs
//	parse:error     warn   line (first 500 chars)
//	stderr          warn   line (first 500 chars)
//	error           error  message, stack (an unhandled error: Unhandled)
const (
	EventTurnStart     = "turn:start"
	EventProcessSpawn  = "process:spawn"
	EventSessionInit   = "session:init"
	EventToolStart     = "tool:start"
	EventToolResult    = "tool:result"
	EventTurnComplete  = "turn:complete"
	EventResumeAttempt = "resume:attempt"
	EventResumeFail    = "resume:fail"
	EventProcessExit   = "process:exit"
	EventParseError    = "parse:error"
	EventStderr        = "stderr"
	EventError         = "error"
)

// Entries returns a writer that turns each zerolog JSON line written to
// it into an Entry line written to w: zerolog's level becomes level
// (trace → debug; fatal and panic → error; none → info), its message the
// event ("log" when empty), the sessionId field (or, without one,
// session) the sessionId, and every other field goes into data, in
// order, except zerolog's time: the timestamp is the writer's clock at
// the write, with milliseconds (zerolog writes synchronously). A line
// that is not one JSON object is kept whole as data's line, event "log".
// Each Write is one line and one Write to w.
func Entries(w io.Writer) io.Writer { return &entries{w: w, now: time.Now} }

type entries struct {
	w   io.Writer
	now func() time.Time
}

func (e *entries) Write(p []byte) (int, error) {
	if _, err := e.w.Write(entryLine(p, e.now())); err != nil {
		return 0, err
	}
	return len(p), nil
}

// entryLine reshapes one zerolog line into an Entry's JSON line. The
// data's fields keep zerolog's order and their bytes. A key zerolog
// writes itself may also be a field's: zerolog writes level first and
// the message last, so the first level and the last message are
// zerolog's, and another of the same name is data's (Unhandled's
// message).
func entryLine(p []byte, now time.Time) []byte {
	type field struct {
		key string
		val json.RawMessage
	}
	var fields []field
	d := json.NewDecoder(bytes.NewReader(p))
	ok := func() bool {
		if t, err := d.Token(); err != nil || t != json.Delim('{') {
			return false
		}
		for d.More() {
			t, err := d.Token()
			if err != nil {
				return false
			}
			k, _ := t.(string)
			var v json.RawMessage
			if err := d.Decode(&v); err != nil {
				return false
			}
			fields = append(fields, field{k, v})
		}
		t, err := d.Token()
		return err == nil && t == json.Delim('}')
	}()
	str := func(v json.RawMessage) (string, bool) {
		var s string
		return s, json.Unmarshal(v, &s) == nil
	}
	level, event, session := "info", "log", ""
	if !ok {
		fields = []field{{"line", mustJSON(string(bytes.TrimRight(p, "\n")))}}
	} else {
		levelAt, msgAt, sessAt, sessKey := -1, -1, -1, ""
		for i, f := range fields {
			switch f.key {
			case zerolog.LevelFieldName:
				if levelAt < 0 {
					levelAt = i
				}
			case zerolog.MessageFieldName:
				msgAt = i
			case "sessionId", "session": // a string; sessionId first
				if _, isStr := str(f.val); isStr && sessKey != "sessionId" && (sessKey == "" || f.key == "sessionId") {
					sessAt, sessKey = i, f.key
				}
			}
		}
		kept := fields[:0:0]
		for i, f := range fields {
			switch {
			case i == levelAt:
				if s, ok := str(f.val); ok {
					level = specLevel(s)
				}
			case i == msgAt:
				if s, ok := str(f.val); ok && s != "" {
					event = s
				}
			case i == sessAt:
				session, _ = str(f.val)
			case f.key == zerolog.TimestampFieldName:
			default:
				kept = append(kept, f)
			}
		}
		fields = kept
	}
	var b bytes.Buffer
	b.WriteString(`{"timestamp":`)
	b.Write(mustJSON(now.UTC().Format(TimeFormat)))
	b.WriteString(`,"sessionId":`)
	b.Write(mustJSON(session))
	b.WriteString(`,"level":`)
	b.Write(mustJSON(level))
	b.WriteString(`,"event":`)
	b.Write(mustJSON(event))
	if len(fields) > 0 {
		b.WriteString(`,"data":{`)
		for i, f := range fields {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(mustJSON(f.key))
			b.WriteByte(':')
			b.Write(f.val)
		}
		b.WriteByte('}')
	}
	b.WriteString("}\n")
	return b.Bytes()
}

func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// specLevel maps zerolog's levels to the spec's four.
func specLevel(l string) string {
	switch l {
	case "trace", "debug":
		return "debug"
	case "info", "":
		return "info"
	case "warn":
		return "warn"
	}
	return "error" // error, fatal, panic
}

// Unhandled logs a recovered panic value as spec 004's unhandled error:
// level error, event "error", data {message, stack}, the stack being the
// calling goroutine's (call it in the deferred function that recovered).
func Unhandled(log *zerolog.Logger, sessionID string, recovered any) {
	if log == nil {
		return
	}
	ev := log.Error()
	if sessionID != "" {
		ev = ev.Str("sessionId", sessionID)
	}
	ev.Str("message", fmt.Sprint(recovered)).Str("stack", string(debug.Stack())).Msg(EventError)
}

// LogPanic, deferred, logs a panic of the goroutine (Unhandled) and
// panics again with the same value: the error is in the log, and it
// stays unhandled.
//
//	defer logging.LogPanic(log, sessionID)
func LogPanic(log *zerolog.Logger, sessionID string) {
	if p := recover(); p != nil {
		Unhandled(log, sessionID, p)
		panic(p)
	}
}
