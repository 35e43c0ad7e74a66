package logging

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestLogEntryShape: harness.log's lines are spec 004's LogEntry:
// exactly timestamp (ISO 8601 with milliseconds), sessionId, level, event
// and data (the other fields, numbers exact), nothing else at the top.
func TestLogEntryShape(t *testing.T) {
	root := t.TempDir()
	log, c, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Str("sessionId", "s-1").Str("command", "claude -p").Int("pid", 4242).Int64("big", 1<<62).
		Strs("tools", []string{"Bash", "Read"}).Msg(EventProcessSpawn)
	log.Warn().Str("session", "s-2").Str("line", "oops").Msg(EventStderr)
	log.Debug().Msg("")
	log.Error().Err(os.ErrNotExist).Msg("boom")
	c.Close()
	lines := readLines(t, Path(root))
	if len(lines) != 4 {
		t.Fatalf("%d lines: %q", len(lines), lines)
	}
	ts := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	var entries []Entry
	for _, l := range lines {
		var top map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &top); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		for k := range top {
			switch k {
			case "timestamp", "sessionId", "level", "event", "data":
			default:
				t.Errorf("key %q is not LogEntry's: %s", k, l)
			}
		}
		if _, has := top["sessionId"]; !has {
			t.Errorf("no sessionId: %s", l)
		}
		var e Entry
		d := json.NewDecoder(strings.NewReader(l))
		d.UseNumber()
		if err := d.Decode(&e); err != nil {
			t.Fatal(err)
		}
		if !ts.MatchString(e.Timestamp) {
			t.Errorf("timestamp %q is not ISO 8601 with milliseconds", e.Timestamp)
		}
		if _, err := time.Parse(TimeFormat, e.Timestamp); err != nil {
			t.Error(err)
		}
		entries = append(entries, e)
	}
	spawn := entries[0]
	if spawn.SessionID != "s-1" || spawn.Level != "info" || spawn.Event != "process:spawn" || spawn.Data["command"] != "claude -p" ||
		spawn.Data["pid"] != json.Number("4242") || spawn.Data["big"] != json.Number("4611686018427387904") || len(spawn.Data["tools"].([]any)) != 2 {
		t.Errorf("spawn: %+v", spawn)
	}
	if _, has := spawn.Data["sessionId"]; has {
		t.Error("sessionId repeated in data")
	}
	if e := entries[1]; e.SessionID != "s-2" || e.Level != "warn" || e.Event != "stderr" || e.Data["line"] != "oops" || len(e.Data) != 1 {
		t.Errorf("stderr: %+v", e)
	}
	if e := entries[2]; e.SessionID != "" || e.Level != "debug" || e.Event != "log" || e.Data != nil || strings.Contains(lines[2], "data") {
		t.Errorf("bare: %+v %s", e, lines[2])
	}
	if e := entries[3]; e.Level != "error" || e.Event != "boom" || e.Data["error"] != os.ErrNotExist.Error() {
		t.Errorf("error: %+v", e)
	}
}

func TestEntryLevelsAndOddLines(t *testing.T) {
	at := time.Date(2026, 11, 25, 23, 19, 57, 123456789, time.FixedZone("x", 3600))
	for in, want := range map[string]string{
		`{"level":"trace","message":"a"}`:                            `{"timestamp":"2026-11-25T22:19:57.123Z","sessionId":"","level":"debug","event":"a"}`,
		`{"level":"fatal"}`:                                          `{"timestamp":"2026-11-25T22:19:57.123Z","sessionId":"","level":"error","event":"log"}`,
		`{"message":"m","time":"2026-01-01T00:00:00Z","x":null}`:     `{"timestamp":"2026-11-25T22:19:57.123Z","sessionId":"","level":"info","event":"m","data":{"x":null}}`,
		`{"level":"info","sessionId":7,"session":"k","message":"m"}`: `{"timestamp":"2026-11-25T22:19:57.123Z","sessionId":"k","level":"info","event":"m","data":{"sessionId":7}}`,
		"not json\n": `{"timestamp":"2026-11-25T22:19:57.123Z","sessionId":"","level":"info","event":"log","data":{"line":"not json"}}`,
		`{"a":1`:     `{"timestamp":"2026-11-25T22:19:57.123Z","sessionId":"","level":"info","event":"log","data":{"line":"{\"a\":1"}}`,
		// zerolog writes level first and message last: a field of the
		// same name is data's
		`{"level":"error","message":"index out of range","stack":"s","message":"error"}`: `{"timestamp":"2026-11-25T22:19:57.123Z","sessionId":"","level":"error","event":"error","data":{"message":"index out of range","stack":"s"}}`,
	} {
		if got := strings.TrimSuffix(string(entryLine([]byte(in), at)), "\n"); got != want {
			t.Errorf("%s\n got %s\nwant %s", in, got, want)
		}
	}
}

// TestUnhandled: an unhandled error is logged at error level with its
// message and stack, and LogPanic panics on with the same value.
func TestUnhandled(t *testing.T) {
	var buf bytes.Buffer
	log := zerolog.New(Entries(&buf))
	func() {
		defer func() {
			if p := recover(); p != "the value" {
				t.Errorf("LogPanic re-panicked with %v", p)
			}
		}()
		defer LogPanic(&log, "s-9")
		panic("the value")
	}()
	var e Entry
	if err := json.Unmarshal(buf.Bytes(), &e); err != nil {
		t.Fatalf("%s: %v", buf.String(), err)
	}
	stack, _ := e.Data["stack"].(string)
	if e.Level != "error" || e.Event != EventError || e.SessionID != "s-9" || e.Data["message"] != "the value" ||
		!strings.Contains(stack, "TestUnhandled") || len(e.Data) != 2 {
		t.Errorf("entry %+v", e)
	}
	buf.Reset()
	func() { defer LogPanic(&log, "") }() // no panic: nothing logged
	Unhandled(nil, "", "x")               // no logger: nothing, no crash
	if buf.Len() != 0 {
		t.Errorf("logged without a panic: %s", buf.String())
	}
}

func FuzzEntryLine(f *testing.F) {
	f.Add([]byte(`{"level":"info","sessionId":"s","message":"m","n":1}`))
	f.Add([]byte(`{"message":"a","message":"b"}`))
	f.Add([]byte("[1,2]"))
	f.Fuzz(func(t *testing.T, p []byte) {
		out := entryLine(p, time.Unix(0, 0))
		if bytes.Count(out, []byte("\n")) != 1 || out[len(out)-1] != '\n' {
			t.Fatalf("not one line: %q", out)
		}
		var e Entry
		if err := json.Unmarshal(out, &e); err != nil {
			t.Fatalf("%q → %q: %v", p, out, err)
		}
		if e.Timestamp != "1970-01-01T00:00:00.000Z" || e.Event == "" || e.Level == "" {
			t.Fatalf("entry %+v", e)
		}
	})
}
