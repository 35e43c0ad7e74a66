package irc

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidateNick(t *testing.T) {
	for nick, ok := range map[string]bool{
		"alice": true, "lab-alice": true, "a[1]": true, "_x": true, "`^{|}": true,
		"": false, "1abc": false, "-x": false, "a b": false, "a\r\nQUIT": false, "é": false,
		strings.Repeat("a", 31): false, strings.Repeat("a", 30): true, "a,b": false, "#chan": false,
	} {
		if err := ValidateNick(nick, 0); (err == nil) != ok {
			t.Errorf("ValidateNick(%q) = %v, want ok=%v", nick, err, ok)
		}
	}
}

func TestValidateChannel(t *testing.T) {
	for ch, ok := range map[string]bool{
		"#dev": true, "&x": true, "#a-b_c": true, "#": false, "dev": false, "#a b": false,
		"#a,b": false, "#a\x07": false, "#a\r\n": false, "#" + strings.Repeat("x", 50): false,
	} {
		if err := ValidateChannel(ch); (err == nil) != ok {
			t.Errorf("ValidateChannel(%q) = %v, want ok=%v", ch, err, ok)
		}
	}
}

func TestPrefixNick(t *testing.T) {
	if got := PrefixNick("lab", "alice"); got != "lab-alice" {
		t.Errorf("got %q", got)
	}
	if got := PrefixNick("", "alice"); got != "alice" {
		t.Errorf("got %q", got)
	}
}

func TestSplitText(t *testing.T) {
	cases := []struct {
		in   string
		max  int
		want []string
	}{
		{"hello", 0, []string{"hello"}},
		{"a\nb\r\nc\rd", 0, []string{"a", "b", "c", "d"}},
		{"a\n\n\nb", 0, []string{"a", "b"}},
		{"x\r\nQUIT :bye", 0, []string{"x", "QUIT :bye"}},
		{"nul\x00byte", 0, []string{"nulbyte"}},
		{"one two three four", 9, []string{"one two", "three", "four"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"   ", 0, nil},
		{"", 0, nil},
	}
	for _, c := range cases {
		got := SplitText(c.in, c.max)
		if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("SplitText(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
	// multi-byte characters are never cut
	long := strings.Repeat("é", 300)
	for _, l := range SplitText(long, 0) {
		if !utf8.ValidString(l) || len(l) > MaxPayload {
			t.Fatalf("bad piece %q", l)
		}
	}
	if strings.Join(SplitText(long, 0), "") != long {
		t.Error("text lost in splitting")
	}
}

func FuzzSplitText(f *testing.F) {
	f.Add("hello\r\nPRIVMSG #x :owned", 10)
	f.Add(strings.Repeat("日本語 ", 200), 0)
	f.Add("\x00\x01\x02", 3)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max > 1000 || max < -1 {
			return
		}
		limit := max
		if limit <= 0 {
			limit = MaxPayload
		}
		for _, l := range SplitText(s, max) {
			if l == "" || strings.ContainsAny(l, "\r\n\x00") || !utf8.ValidString(l) {
				t.Fatalf("unsafe piece %q", l)
			}
			if len(l) > limit && limit >= utf8.UTFMax {
				t.Fatalf("piece of %d bytes > %d", len(l), limit)
			}
		}
	})
}

func TestMentions(t *testing.T) {
	for _, c := range []struct {
		text, nick string
		want       bool
	}{
		{"@lab-alice hi", "lab-alice", true},
		{"hi @LAB-Alice", "lab-alice", true},
		{"hi @lab-alice, please", "lab-alice", true},
		{"hi @lab-alice2", "lab-alice", false},
		{"hi lab-alice", "lab-alice", false},
		{"email x@lab-alice.org", "lab-alice", true},
		{"@bob @alice", "alice", true},
		{"@alicex @alice", "alice", true},
		{"@[x]", "{x}", true},
		{"", "alice", false},
		{"@alice", "", false},
	} {
		if got := Mentions(c.text, c.nick); got != c.want {
			t.Errorf("Mentions(%q, %q) = %v", c.text, c.nick, got)
		}
	}
	if !addressedTo("alice: yes", "alice") || !addressedTo("Alice, no", "alice") || addressedTo("aliceb: x", "alice") {
		t.Error("addressedTo")
	}
}

func FuzzMentions(f *testing.F) {
	f.Add("@alice hi", "alice")
	f.Fuzz(func(t *testing.T, text, nick string) {
		got := Mentions(text, nick)
		if got && nick == "" {
			t.Fatal("empty nick mentioned")
		}
		if nick != "" && !strings.Contains(foldIRC(text), "@"+foldIRC(nick)) && got {
			t.Fatal("mention without @nick")
		}
	})
}

func TestBuffer(t *testing.T) {
	b := NewBuffer(3)
	for i := range 5 {
		b.Add(Message{Channel: "#A", Text: string(rune('a' + i))})
	}
	got := b.Read("#a", 0)
	if len(got) != 3 || got[0].Text != "c" || got[2].Text != "e" {
		t.Fatalf("got %+v", got)
	}
	if got := b.Read("#a", 2); len(got) != 2 || got[0].Text != "d" {
		t.Fatalf("limit: %+v", got)
	}
	if got := b.Read("#none", 5); len(got) != 0 {
		t.Fatalf("empty: %+v", got)
	}
}
