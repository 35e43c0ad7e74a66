package irc

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPlainText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain words, nothing to do", "plain words, nothing to do"},
		{"# Title\n\nSome **bold** and *em* and __also__ and _this_.", "Title\n\nSome bold and em and also and this."},
		{"### Steps ###\n1. one\n2. two", "Steps\n1. one\n2. two"},
		{"* a\n+ b\n  - nested", "- a\n- b\n  - nested"},
		{"run `go test ./...` now", "run go test ./... now"},
		{"``a `tick` b``", "a `tick` b"},
		{"```go\nfunc main() {\n\tfmt.Println(\"**x**\")\n}\n```\nafter", "func main() {\n\tfmt.Println(\"**x**\")\n}\nafter"},
		{"~~~\n# not a heading\n~~~", "# not a heading"},
		{"see [the docs](https://example.com/d) or https://x.y", "see the docs (https://example.com/d) or https://x.y"},
		{"[https://a.b](https://a.b)", "https://a.b"},
		{"![diagram](https://x/d.png)", "diagram (https://x/d.png)"},
		{"snake_case_name and 2*3*4 and a * b * c", "snake_case_name and 2*3*4 and a * b * c"},
		{"~~old~~ new", "old new"},
		{"a\n\n---\n\nb", "a\n\nb"},
		{"| file | lines |\n|------|------:|\n| a.go | 12 |", "file | lines\na.go | 12"},
		{"x <!-- hidden --> y", "x  y"},
		{"**a** **b**", "a b"},
		{"a\n\n\n\nb", "a\n\nb"},
		{"> quoted **text**", "> quoted text"},
	}
	for _, c := range cases {
		if got := PlainText(c.in); got != c.want {
			t.Errorf("PlainText(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestPlainTextDemoAnswer: the demo model's markdown answer (the one
// `harness serve --demo` streams) as an IRC channel gets it.
func TestPlainTextDemoAnswer(t *testing.T) {
	in, err := os.ReadFile("testdata/demo-answer.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/demo-answer.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := PlainText(string(in)); got != strings.TrimRight(string(want), "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func FuzzPlainText(f *testing.F) {
	f.Add("# h\n**b** *e* `c` [l](u) ![i](p)\n```\ncode\n```\n| a | b |\n|---|---|")
	f.Add("``` unterminated\n**")
	f.Fuzz(func(t *testing.T, s string) {
		got := PlainText(s)
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("PlainText(%q) = %q: not UTF-8", s, got)
		}
	})
}
