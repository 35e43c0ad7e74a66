package secrets_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chirality/harness/internal/secrets"
)

// Values the stream tests register: one from the environment filter (a
// withheld variable), two that overlap (one is the other's prefix).
const (
	streamEnvSecret = "pg-stream-secret-value-0042"
	streamShort     = "overlap-secret"
	streamLong      = "overlap-secret-but-longer-7"
	streamPattern   = "sk-ant-api03-StreamPatternKey_0123-xyz" // never registered: its format is enough
)

func registerStreamSecrets() {
	secrets.FilterEnv([]string{"PGPASSWORD=" + streamEnvSecret}, nil)
	secrets.Register(streamShort, streamLong)
}

// feed writes deltas to a fresh Stream, then flushes it, returning every
// output; it checks after each step that what was shown so far is a
// prefix of want (nothing shown is taken back or reordered, so no part
// of a secret that want does not hold is ever shown) and that no more
// than HeldMax is held back.
func feed(t *testing.T, deltas []string, want string) []string {
	t.Helper()
	var s secrets.Stream
	var outs []string
	shown := ""
	for _, d := range deltas {
		o := s.Write(d)
		outs = append(outs, o)
		shown += o
		if !strings.HasPrefix(want, shown) {
			t.Fatalf("deltas %q: shown %q, not a prefix of %q", deltas, shown, want)
		}
		if s.Held() > secrets.HeldMax() {
			t.Fatalf("deltas %q: %d bytes held, more than HeldMax %d", deltas, s.Held(), secrets.HeldMax())
		}
	}
	o := s.Flush()
	outs = append(outs, o)
	if shown += o; shown != want {
		t.Fatalf("deltas %q: shown %q, want %q", deltas, shown, want)
	}
	if s.Held() != 0 {
		t.Fatalf("deltas %q: %d bytes held after Flush", deltas, s.Held())
	}
	return outs
}

// Issue 24: a secret split across two or three deltas, at every
// possible place, is never shown, not even in part; the text around it
// comes out whole and in order.
func TestStreamSecretSplitAnywhere(t *testing.T) {
	registerStreamSecrets()
	for _, c := range []struct{ name, secret string }{
		{"env value", streamEnvSecret},
		{"pattern", streamPattern},
		{"longer of two overlapping values", streamLong},
		{"shorter of two overlapping values", streamShort},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := "key: " + c.secret + " ok"
			want := "key: " + secrets.Redacted + " ok"
			if got := secrets.Scrub(text); got != want {
				t.Fatalf("Scrub(%q) = %q", text, got)
			}
			for i := 0; i <= len(text); i++ {
				feed(t, []string{text[:i], text[i:]}, want)
				for j := i; j <= len(text); j++ {
					feed(t, []string{text[:i], text[i:j], text[j:]}, want)
				}
			}
			// At the very end of the block too: only Flush can release
			// (or redact) it.
			for i := 0; i <= len(c.secret); i++ {
				feed(t, []string{"x " + c.secret[:i], c.secret[i:]}, "x "+secrets.Redacted)
			}
		})
	}
	// A pattern's run longer than a delta: the run is dropped as it
	// comes, its start already shown as [REDACTED].
	outs := feed(t, []string{"a sk-ant-", "ZYXWVUTS", "RQPONMLK", "JIHG", " b"}, "a [REDACTED] b")
	if outs[1] != secrets.Redacted {
		t.Errorf("the run's first full delta showed %q, want %q at once", outs[1], secrets.Redacted)
	}
}

// A stream without a secret comes out byte for byte, whatever its
// deltas; near misses (a prefix of a value, a pattern's prefix with too
// short a run, multi-byte characters) are held at most until the next
// delta or Flush.
func TestStreamNoSecretIsIdentical(t *testing.T) {
	registerStreamSecrets()
	text := strings.Repeat("Plain text — café ☕, sk-ant-short, sk- ghp_ AKIA1234 overlap-secre pg-stream-secret-value- "+
		"npm_abc `code`\n", 10)
	if secrets.Scrub(text) != text {
		t.Fatal("the test text holds a secret")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var deltas []string
		for rest := text; rest != ""; {
			n := min(len(rest), 1+rng.IntN(24))
			deltas = append(deltas, rest[:n])
			rest = rest[n:]
		}
		feed(t, deltas, text)
	}
	// Nothing suspicious at a delta's end: nothing held.
	var s secrets.Stream
	if out := s.Write("hello world. "); out != "hello world. " || s.Held() != 0 {
		t.Errorf("Write = %q, held %d", out, s.Held())
	}
}

// Flush releases what a block's end holds back, and the Stream starts
// the next block afresh (a run of the last block is not continued).
func TestStreamFlush(t *testing.T) {
	registerStreamSecrets()
	var s secrets.Stream
	if out := s.Write("ends with sk-ant-ab"); out != "ends with " {
		t.Errorf("Write = %q, want the suspicious tail held", out)
	}
	if out := s.Flush(); out != "sk-ant-ab" {
		t.Errorf("Flush = %q, want the tail", out)
	}
	if out := s.Write("sk-ant-abcdefghijk"); out != secrets.Redacted {
		t.Errorf("Write = %q", out)
	}
	s.Flush()
	if out := s.Write("abc "); out != "abc " {
		t.Errorf("after Flush, a new block's text = %q (the old run went on)", out)
	}
}

// FuzzStream's property over texts made of the pieces secrets are made
// of (a value's start and end, a pattern's prefix, near misses), cut at
// random: a deterministic attack on the places where the two stages and
// the overlapping values meet.
func TestStreamAgreesWithScrub(t *testing.T) {
	registerStreamSecrets()
	pieces := []string{"sk-ant-", "sk-", "gh", "ghp_", "a", "Z", " ", streamShort, "-but-longer-7", "pg-stream-",
		"secret-value-0042", "AKIA", "0123456789", "xoxb-", "é", "npm_", "[REDACTED]"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		var s secrets.Stream
		var got strings.Builder
		for rest := text; rest != ""; {
			k := min(len(rest), rng.IntN(6))
			got.WriteString(s.Write(rest[:k]))
			rest = rest[k:]
		}
		got.WriteString(s.Flush())
		if want := secrets.Scrub(text); got.String() != want {
			t.Fatalf("%q: streamed %q, Scrub %q", text, got.String(), want)
		}
	}
}

// The property the core relies on: the outputs of a Stream, joined, are
// Scrub of its inputs, joined, however the text is cut.
func FuzzStream(f *testing.F) {
	registerStreamSecrets()
	f.Add("key "+streamEnvSecret+" and "+streamPattern+" end", []byte{3, 9, 1, 30})
	f.Add(streamLong+streamShort+"ghp_abcdefghijklmnopqrstuvwxyz0123 AKIAIOSFODNN7EXAMPLEX", []byte{1, 1, 1, 1, 50})
	f.Add("xoxb-1234567890-abc npm_"+strings.Repeat("a", 40), []byte{0, 5, 0})
	f.Add("plain", []byte{})
	f.Fuzz(func(t *testing.T, text string, cuts []byte) {
		var deltas []string
		rest := text
		for _, c := range cuts {
			n := min(len(rest), int(c))
			deltas = append(deltas, rest[:n])
			rest = rest[n:]
		}
		deltas = append(deltas, rest)
		var s secrets.Stream
		var got strings.Builder
		for _, d := range deltas {
			got.WriteString(s.Write(d))
			if s.Held() > secrets.HeldMax() {
				t.Fatalf("%d bytes held, more than HeldMax %d", s.Held(), secrets.HeldMax())
			}
		}
		got.WriteString(s.Flush())
		if want := secrets.Scrub(text); got.String() != want {
			t.Fatalf("deltas %q:\n got %q\nwant %q", deltas, got.String(), want)
		}
	})
}

// The cost of scrubbing one delta: a typical 20-byte piece of an answer,
// with the values of a typical environment registered.
func BenchmarkStreamDelta(b *testing.B) {
	registerStreamSecrets()
	secrets.Register("another-secret-value-1", "ghp_registeredtoken0123456789abcdefgh", "a-webhook-url-secret-xyz")
	deltas := strings.Fields(strings.Repeat("The function reads the config file, checks each key and returns an error when one is missing. ", 8))
	for i := range deltas {
		deltas[i] += " "
	}
	var s secrets.Stream
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.Write(deltas[i%len(deltas)])
	}
}
