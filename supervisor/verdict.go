package supervisor

import (
	"errors"
	"strings"
	"unicode"
)

// Action is a verdict's kind.
type Action string

// The four verdicts an evaluation may answer.
const (
	ActionOK          Action = "OK"
	ActionCorrection  Action = "CORRECTION"
	ActionThinkDeeper Action = "THINK_DEEPER"
	ActionEscalation  Action = "ESCALATION"
)

// MaxMessage bounds a verdict's message, in runes; a longer one is cut
// with "…".
const MaxMessage = 1000

// ErrUnparseable is returned by ParseVerdict for an answer that is not a
// verdict. The supervisor then counts it as OK and logs it.
var ErrUnparseable = errors.New("supervisor: unparseable verdict")

// Verdict is one parsed evaluation: Action, and for every action but OK
// a one-line Message (no control characters, at most MaxMessage runes).
type Verdict struct {
	Action  Action
	Message string
}

// ParseVerdict reads an evaluator's answer. The verdict is the first
// non-blank line; later lines are ignored. It must start with a keyword —
// OK, CORRECTION, THINK_DEEPER or ESCALATION, in any case, optionally
// wrapped in Markdown emphasis or backticks — followed by the end of the
// line, a space, ':' or '-', then (for all but OK) a non-empty message.
// Anything else is ErrUnparseable, with Verdict{Action: ActionOK}.
func ParseVerdict(answer string) (Verdict, error) {
	answer = strings.ToValidUTF8(answer, "\uFFFD")
	line := ""
	for l := range strings.SplitSeq(answer, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	line = strings.TrimLeft(line, "*`_> ")
	word, rest := line, ""
	if i := strings.IndexFunc(line, func(r rune) bool { return r == ':' || r == '-' || r == '*' || r == '`' || unicode.IsSpace(r) }); i >= 0 {
		word, rest = line[:i], line[i:]
	}
	act := Action(strings.ToUpper(word))
	switch act {
	case ActionOK:
		return Verdict{Action: ActionOK}, nil
	case ActionCorrection, ActionThinkDeeper, ActionEscalation:
	default:
		return Verdict{Action: ActionOK}, ErrUnparseable
	}
	msg := clean(strings.TrimLeft(rest, "*`: -\t"))
	msg = strings.TrimRight(msg, "*` ")
	if msg == "" {
		return Verdict{Action: ActionOK}, ErrUnparseable
	}
	return Verdict{Action: act, Message: msg}, nil
}

// clean removes control characters, collapses runs of spaces and bounds
// the length.
func clean(s string) string {
	var b strings.Builder
	space := false
	n := 0
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		if n == MaxMessage {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}
