package ipc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Commands of the protocol.
const (
	CmdIRCSend     = "irc_send"     // channel, message
	CmdIRCRead     = "irc_read"     // channel, limit?
	CmdIRCAsk      = "irc_ask"      // channel, message, timeout? (seconds)
	CmdIRCJoin     = "irc_join"     // channel
	CmdIRCPart     = "irc_part"     // channel
	CmdIRCWho      = "irc_who"      // target
	CmdIRCChannels = "irc_channels" //
	CmdIRCTopic    = "irc_topic"    // channel, topic? (sets it when present)
	CmdCompact     = "compact"
	CmdClear       = "clear"
	CmdStatus      = "status"
	CmdPause       = "pause"
	CmdResume      = "resume"
	CmdShutdown    = "shutdown"
)

// Commands lists every command, in the order of the protocol's
// documentation.
var Commands = []string{CmdIRCSend, CmdIRCRead, CmdIRCAsk, CmdIRCJoin, CmdIRCPart, CmdIRCWho,
	CmdIRCChannels, CmdIRCTopic, CmdCompact, CmdClear, CmdStatus, CmdPause, CmdResume, CmdShutdown}

// SkillCommands are the commands of the agent's own skill client
// (`harness channel …`): their responses carry the pending whispers.
var SkillCommands = map[string]bool{CmdIRCSend: true, CmdIRCRead: true, CmdIRCAsk: true, CmdIRCJoin: true,
	CmdIRCPart: true, CmdIRCWho: true, CmdIRCChannels: true, CmdIRCTopic: true, CmdCompact: true, CmdClear: true}

// MaxLine is the longest request line a server reads (1 MiB); a longer
// one gets an error response and is skipped.
const MaxLine = 1 << 20

// Errors of a request, sent back as the response's error.
var (
	ErrBadJSON        = errors.New("bad JSON")
	ErrUnknownCommand = errors.New("unknown command")
	ErrBadRequest     = errors.New("bad request")
	ErrLineTooLong    = errors.New("request line too long")
)

// Request is one JSON line from a client: {"type": CMD, "id": "…", …}.
// Only the fields of its command are set.
type Request struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Channel string `json:"channel,omitempty"`
	Message string `json:"message,omitempty"`
	Target  string `json:"target,omitempty"`
	Limit   int    `json:"limit,omitempty"`
	// Timeout of irc_ask in seconds (0 = the daemon's default).
	Timeout float64 `json:"timeout,omitempty"`
	// Topic of irc_topic: set it when not nil.
	Topic *string `json:"topic,omitempty"`
}

// Response answers the request with the same ID:
// {"type":"response","id","ok":true,"data":…} or {"ok":false,"error":"…"}.
type Response struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	OK    bool            `json:"ok"`
	Data  json.RawMessage `json:"data,omitempty"`
	Error string          `json:"error,omitempty"`
}

// Whisper is a supervisor's note to the agent, sent before the response
// to its next skill-client request:
// {"type":"whisper","whisper_type":"CORRECTION","message":"…"}.
type Whisper struct {
	Type        string `json:"type"`
	WhisperType string `json:"whisper_type"`
	Message     string `json:"message"`
}

// DecodeRequest parses and checks one request line. The error wraps
// ErrBadJSON, ErrUnknownCommand or ErrBadRequest; the returned Request
// carries whatever ID could be read, for the error response.
func DecodeRequest(line []byte) (Request, error) {
	var r Request
	line = bytes.TrimSpace(line)
	d := json.NewDecoder(bytes.NewReader(line))
	if err := d.Decode(&r); err != nil {
		// keep the id if the line had one, so the error can be matched
		var idOnly struct {
			ID any `json:"id"`
		}
		if json.Unmarshal(line, &idOnly) == nil {
			if s, ok := idOnly.ID.(string); ok {
				r = Request{ID: s}
			} else {
				r = Request{}
			}
		} else {
			r = Request{}
		}
		return r, fmt.Errorf("%w: %v", ErrBadJSON, err)
	}
	if d.More() {
		return Request{ID: r.ID}, fmt.Errorf("%w: more than one value on the line", ErrBadJSON)
	}
	return r, r.Check()
}

// Check reports what is missing or wrong in r for its command.
func (r Request) Check() error {
	if r.ID == "" || len(r.ID) > 128 {
		return fmt.Errorf("%w: id must be 1 to 128 characters", ErrBadRequest)
	}
	need := func(field, v string) error {
		if v == "" {
			return fmt.Errorf("%w: %s needs %q", ErrBadRequest, r.Type, field)
		}
		return nil
	}
	switch r.Type {
	case CmdIRCSend:
		return errors.Join(need("channel", r.Channel), need("message", r.Message))
	case CmdIRCAsk:
		if r.Timeout < 0 || r.Timeout > 24*3600 {
			return fmt.Errorf("%w: timeout must be 0 to 86400 seconds", ErrBadRequest)
		}
		return errors.Join(need("channel", r.Channel), need("message", r.Message))
	case CmdIRCRead:
		if r.Limit < 0 {
			return fmt.Errorf("%w: limit must not be negative", ErrBadRequest)
		}
		return need("channel", r.Channel)
	case CmdIRCJoin, CmdIRCPart, CmdIRCTopic:
		return need("channel", r.Channel)
	case CmdIRCWho:
		return need("target", r.Target)
	case CmdIRCChannels, CmdCompact, CmdClear, CmdStatus, CmdPause, CmdResume, CmdShutdown:
		return nil
	case "":
		return fmt.Errorf("%w: no type", ErrBadRequest)
	}
	return fmt.Errorf("%w: %q", ErrUnknownCommand, r.Type)
}
