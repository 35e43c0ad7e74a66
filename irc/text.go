package irc

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxPayload is the most bytes of message text sent in one PRIVMSG. A
// line is at most 512 bytes with its CRLF, and the server prefixes what it
// relays with the sender's nick!user@host: 350 bytes of text leaves room
// for a long target and a long prefix.
const MaxPayload = 350

// ErrInvalidNick is returned for a nick IRC would refuse.
var ErrInvalidNick = errors.New("irc: invalid nick")

// ErrInvalidChannel is returned for a channel name that does not start
// with # or & or holds a space, a comma or a control character.
var ErrInvalidChannel = errors.New("irc: invalid channel name")

// ValidateNick checks a nick against RFC 2812's grammar (letters, digits,
// and []\`_^{|}- after a first letter or special character), with
// maxLen bytes at most (0 = 30).
func ValidateNick(nick string, maxLen int) error {
	if maxLen <= 0 {
		maxLen = 30
	}
	if nick == "" {
		return fmt.Errorf("%w: empty", ErrInvalidNick)
	}
	if len(nick) > maxLen {
		return fmt.Errorf("%w: %q is longer than %d characters", ErrInvalidNick, nick, maxLen)
	}
	for i, r := range nick {
		special := strings.ContainsRune("[]\\`_^{|}", r)
		switch {
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || special):
		case i > 0 && r < utf8.RuneSelf && (unicode.IsDigit(r) || r == '-'):
		default:
			return fmt.Errorf("%w: %q: character %q at %d", ErrInvalidNick, nick, r, i)
		}
	}
	return nil
}

// PrefixNick is the IRC nick of agent name on the server called server:
// "<server>-<name>", or name alone when server is empty.
func PrefixNick(server, name string) string {
	if server == "" {
		return name
	}
	return server + "-" + name
}

// ValidateChannel checks a channel name: # or & first, then no space,
// comma, BEL or other control character, 50 bytes at most.
func ValidateChannel(name string) error {
	if len(name) < 2 || len(name) > 50 || (name[0] != '#' && name[0] != '&') {
		return fmt.Errorf("%w: %q", ErrInvalidChannel, name)
	}
	for _, r := range name {
		if r <= ' ' || r == ',' || r == 0x7f {
			return fmt.Errorf("%w: %q", ErrInvalidChannel, name)
		}
	}
	return nil
}

// SplitText turns a message into the lines of text to send as PRIVMSGs:
// one per line of the message (CR, LF and CRLF all end a line; empty
// lines are dropped, as IRC cannot carry them), each cut into pieces of at
// most max bytes (0 = MaxPayload) at a space where one is near, never
// inside a UTF-8 sequence. NUL and other control characters except tab
// and IRC formatting codes are removed, so no text can inject a raw
// command.
func SplitText(text string, max int) []string {
	if max <= 0 {
		max = MaxPayload
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	var out []string
	for _, line := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' }) {
		line = strings.Map(func(r rune) rune {
			switch {
			case r == '\t' || r == 0x02 || r == 0x03 || r == 0x0f || r == 0x16 || r == 0x1d || r == 0x1f:
				return r
			case r < ' ' || r == 0x7f || r == 0x2028 || r == 0x2029 || r == 0x85:
				return -1
			}
			return r
		}, line)
		for len(line) > max {
			cut := max
			for cut > 0 && !utf8.RuneStart(line[cut]) {
				cut--
			}
			if cut == 0 { // max is shorter than the first character
				_, cut = utf8.DecodeRuneInString(line)
			}
			if sp := strings.LastIndexByte(line[:cut], ' '); sp > max/2 {
				cut = sp
			}
			if piece := strings.TrimRight(line[:cut], " "); piece != "" {
				out = append(out, piece)
			}
			line = strings.TrimLeft(line[cut:], " ")
		}
		if strings.TrimSpace(line) != "" {
			out = append(out, line)
		}
	}
	return out
}

// Mentions reports whether text mentions nick as "@nick" (ASCII case
// folded as IRC does), not followed by another nick character, so "@bob"
// does not match "@bobby".
func Mentions(text, nick string) bool {
	if nick == "" {
		return false
	}
	lt, ln := foldIRC(text), "@"+foldIRC(nick)
	for i := 0; ; {
		j := strings.Index(lt[i:], ln)
		if j < 0 {
			return false
		}
		end := i + j + len(ln)
		if end >= len(lt) || !isNickChar(lt[end]) {
			return true
		}
		i = i + j + 1
	}
}

// addressedTo reports whether text is addressed to nick: "nick: …",
// "nick, …" or a mention.
func addressedTo(text, nick string) bool {
	lt, ln := foldIRC(text), foldIRC(nick)
	if strings.HasPrefix(lt, ln) && len(lt) > len(ln) && (lt[len(ln)] == ':' || lt[len(ln)] == ',') {
		return true
	}
	return Mentions(text, nick)
}

func isNickChar(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' ||
		strings.IndexByte("[]\\`_^{|}-", b) >= 0
}

// foldIRC lowercases ASCII and maps []\~ to {}|^ (the rfc1459 casemapping).
func foldIRC(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'A' && r <= 'Z':
			return r + 32
		case r == '[':
			return '{'
		case r == ']':
			return '}'
		case r == '\\':
			return '|'
		case r == '~':
			return '^'
		}
		return r
	}, s)
}
