package persona

import (
	"errors"
	"math"
	"testing"
)

func FuzzParseContent(f *testing.F) {
	f.Add([]byte("---\ntools: Read,Grep\nmax_turns: 3\n---\nbody\n"))
	f.Add([]byte("\ufeff---\r\ntools:\r\n  - Read\r\n---\r\n"))
	f.Add([]byte("no frontmatter"))
	f.Add([]byte("---\ntools: [a, {b: c}]\n---\n"))
	f.Add([]byte("---\n&a [*a]\n---\n"))
	f.Add([]byte("---\nmax_cost_usd: 2.5\nmax_tokens: 400000\n---\n"))
	f.Add([]byte("---\nmax_cost_usd: 1e400\n---\n"))
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
		// A budget is none (0) or a positive, finite limit.
		if p.MaxCostUSD < 0 || math.IsNaN(p.MaxCostUSD) || math.IsInf(p.MaxCostUSD, 0) || p.MaxTokens < 0 {
			t.Fatalf("budget $%v, %d tokens", p.MaxCostUSD, p.MaxTokens)
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
