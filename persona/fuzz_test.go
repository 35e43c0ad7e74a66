package persona

import (
	"errors"
	"testing"
)

func FuzzParseContent(f *testing.F) {
	f.Add([]byte("---\ntools: Read,Grep\nmax_turns: 3\n---\nbody\n"))
	f.Add([]byte("\ufeff---\r\ntools:\r\n  - Read\r\n---\r\n"))
	f.Add([]byte("no frontmatter"))
	f.Add([]byte("---\ntools: [a, {b: c}]\n---\n"))
	f.Add([]byte("---\n&a [*a]\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseContent("F", "AGENT_F.md", data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "AGENT_F.md" {
				t.Fatalf("error %v is not a *ParseError naming the file", err)
			}
			return
		}
		if p.MaxTurns < 0 {
			t.Fatalf("negative MaxTurns %d", p.MaxTurns)
		}
		for _, list := range [][]string{p.Tools, p.DisallowedTools, p.AutoApproveTools} {
			for _, name := range list {
				if name == "" {
					t.Fatal("empty tool name accepted")
				}
			}
		}
	})
}
