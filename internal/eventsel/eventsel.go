// Package eventsel is which event types a gateway event stream sends: the
// specification's UIEvent union by default (004 §1.3: chat:delta,
// chat:complete, tool:start, tool:result, session:init,
// session:complete, session:error, process:exit), and the extension
// types a request asks for with the query parameter events (Param). The
// gateway's two streams (POST /turn, GET /session/{id}/events) and a
// cluster node that streams another node's session read it the same way.
//
// A record left out keeps its place: the records sent keep their seq (the
// SSE id), so Last-Event-ID resumes a filtered stream across the gap.
package eventsel

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/chirality/harness/event"
)

// Param is the query parameter that opts in to extension events:
// "all", or a comma-separated list of groups (Groups) and event types.
const Param = "events"

// All is Param's value for every event type, extensions and any later
// type included.
const All = "all"

// Spec are the types of 004's UIEvent union: what a stream sends when
// the request does not ask for more.
var Spec = []event.Type{
	event.TypeChatDelta, event.TypeChatComplete, event.TypeToolStart, event.TypeToolResult,
	event.TypeSessionInit, event.TypeSessionComplete, event.TypeSessionError, event.TypeProcessExit,
}

// Groups are the names Param takes for the extension types, each for the
// types that belong together (a request answering approvals wants both
// of theirs). usage is also `harness agent serve`'s name (?usage=1) for
// the same two events.
var Groups = map[string][]event.Type{
	"user":         {event.TypeUserMessage},
	"thinking":     {event.TypeThinkingDelta},
	"retry":        {event.TypeSessionRetry},
	"approval":     {event.TypeApprovalRequested, event.TypeApprovalResolved},
	"conversation": {event.TypeSessionForked, event.TypeSessionRewound},
	"trust":        {event.TypeTrustRequired},
	"queue":        {event.TypePromptQueued, event.TypePromptDequeued},
	"plan":         {event.TypePlanReady, event.TypePlanResolved},
	"usage":        {event.TypeUsageUpdate, event.TypeRateLimit},
}

// GroupNames are the names of Groups, sorted (for documentation).
func GroupNames() []string {
	names := make([]string, 0, len(Groups))
	for g := range Groups {
		names = append(names, g)
	}
	slices.Sort(names)
	return names
}

// ErrBadEvents is Parse's error for a value it does not know: the door
// answers 400 (a misspelt group must not look like a quiet stream).
var ErrBadEvents = errors.New("bad events parameter")

// MaxParam bounds the parameter's length (every group and type named
// once is well under it).
const MaxParam = 1024

// Set is the event types a stream sends. The zero value is Default.
type Set struct {
	all   bool
	extra []string // extension types asked for, besides Spec
}

// Default is the set of a request without Param: the Spec types only.
var Default = Set{}

// Everything is the set of Param all.
var Everything = Set{all: true}

// Parse reads Param's value: "" is Default, "all" Everything, else a
// comma-separated list of group names and event types (spaces around
// each are ignored), added to Spec. Anything else is ErrBadEvents.
func Parse(v string) (Set, error) {
	if len(v) > MaxParam {
		return Set{}, fmt.Errorf("%w: over %d bytes", ErrBadEvents, MaxParam)
	}
	var s Set
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
		case item == All:
			s.all = true
		case Groups[item] != nil:
			for _, t := range Groups[item] {
				s.add(string(t))
			}
		case slices.Contains(event.Types, event.Type(item)):
			s.add(item)
		default:
			return Set{}, fmt.Errorf("%w: %q is neither %q, a group (%s) nor an event type", ErrBadEvents, item, All, strings.Join(GroupNames(), ", "))
		}
	}
	if s.all {
		s.extra = nil
	}
	return s, nil
}

func (s *Set) add(t string) {
	if !slices.Contains(Spec, event.Type(t)) && !slices.Contains(s.extra, t) {
		s.extra = append(s.extra, t)
	}
}

// FromRequest is Parse of r's Param (each of its values, when it is
// given more than once).
func FromRequest(r *http.Request) (Set, error) {
	vs := r.URL.Query()[Param]
	return Parse(strings.Join(vs, ","))
}

// All reports whether s sends every type (nothing to filter).
func (s Set) All() bool { return s.all }

// Has reports whether s sends events of type t.
func (s Set) Has(t string) bool {
	return s.all || slices.Contains(Spec, event.Type(t)) || slices.Contains(s.extra, t)
}

// HasLine reports whether s sends the stored record line ({"seq":N,
// "type":"…", …}, or the event object without seq). A line whose type
// it cannot read is sent only by Everything.
func (s Set) HasLine(line []byte) bool {
	if s.all {
		return true
	}
	t, ok := TypeOf(line)
	return ok && s.Has(t)
}

// TypeOf reads the type of a record line from its first bytes: the
// event log writes every record as {"seq":N,"type":"…",…} (and an event
// alone starts {"type":"…"), so the type is read without decoding what
// may be megabytes of payload. ok is false for any other shape.
func TypeOf(line []byte) (t string, ok bool) {
	rest, found := bytes.CutPrefix(line, []byte(`{"seq":`))
	if found {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i >= len(rest) || rest[i] != ',' {
			return "", false
		}
		rest = rest[i+1:]
	} else if rest, found = bytes.CutPrefix(line, []byte{'{'}); !found {
		return "", false
	}
	rest, found = bytes.CutPrefix(rest, []byte(`"type":"`))
	if !found {
		return "", false
	}
	end := bytes.IndexByte(rest, '"')
	if end <= 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return string(rest[:end]), true
}

// peekLen is how much of a stored line Peek reads: {"seq": and any int64,
// then "type": and the longest type name, with room to spare.
const peekLen = 96

// Peek reads the start of a stored line to report whether s sends it, and
// returns a reader of the whole line (the bytes read, then the rest of r)
// to copy to the client. It reads at most peekLen bytes of r; with
// Everything it reads nothing.
func (s Set) Peek(r io.Reader) (send bool, line io.Reader, err error) {
	if s.all {
		return true, r, nil
	}
	buf := make([]byte, peekLen)
	n, err := io.ReadFull(r, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, nil, err
	}
	buf = buf[:n]
	if !s.HasLine(buf) {
		return false, nil, nil
	}
	return true, &prefixed{head: buf, rest: r}, nil
}

// prefixed reads head, then rest. It is an io.WriterTo when rest is one,
// so that a copy goes straight from rest's buffer.
type prefixed struct {
	head []byte
	rest io.Reader
}

func (p *prefixed) Read(b []byte) (int, error) {
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	return p.rest.Read(b)
}

func (p *prefixed) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(p.head)
	p.head = p.head[n:]
	total := int64(n)
	if err != nil {
		return total, err
	}
	var m int64
	if wt, ok := p.rest.(io.WriterTo); ok {
		m, err = wt.WriteTo(w)
	} else {
		m, err = io.Copy(w, p.rest)
	}
	return total + m, err
}

// Writer is what Send writes to (an *sse.Stream).
type Writer interface {
	Event(id int64, data []byte, flush bool) error
	Flush() error
}

// Send writes the record line of seq to w as one event when s sends its
// type. more says another record follows at once (the writer holds its
// flush for it); a record left out that ends a burst flushes what the
// burst sent before it, which would otherwise wait for the next write.
func (s Set) Send(w Writer, seq int64, line []byte, more bool) error {
	switch {
	case s.HasLine(line):
		return w.Event(seq, line, !more)
	case !more:
		return w.Flush()
	}
	return nil
}
