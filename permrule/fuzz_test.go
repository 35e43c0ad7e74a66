package permrule_test

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/chirality/harness/permrule"
)

// FuzzRuleNamesProgram's property: no rule allows a command that runs a
// program the rule does not name. For a rule whose content starts with
// a literal word (the program it names: "npm" of "npm test *"), every
// simple command the shell would run for an allowed line — found by
// walking the whole syntax tree, inside substitutions, subshells and
// functions too — starts with that word, and no redirection names a file.
// The one exception is the line that is exactly the rule's content (what
// a person allowed "always"). Any input is judged without panic. The
// seed corpus is in testdata/fuzz/FuzzRuleNamesProgram.
func FuzzRuleNamesProgram(f *testing.F) {
	for _, cmd := range []string{
		"npm test", "npm test $(touch pwned)", "npm test `touch pwned`", "npm test | touch pwned",
		"npm test > pwned", "npm test && touch pwned", "npm test 'a;b' \"c|d\"", "npm test <(touch pwned)",
		"npm test \"$(touch pwned)\"", "(touch pwned)", "npm test\ntouch pwned", "npm test <<EOF\n$(touch pwned)\nEOF",
	} {
		f.Add("npm test *", cmd)
	}
	f.Add("npm:*", "npm x; npm y")
	f.Add("git * main", "git push origin main | git x main")
	f.Fuzz(func(t *testing.T, content, cmd string) {
		rule := "Bash(" + content + ")"
		in := cmdInput(cmd)
		cmd = permrule.Subject(in) // as the JSON carries it (valid UTF-8)
		allowed := permrule.Allowed([]string{rule}, "Bash", in)
		if !allowed || strings.ReplaceAll(content, `\*`, "*") == cmd && !strings.Contains(strings.ReplaceAll(content, `\*`, ""), "*") {
			return
		}
		program := content
		if i := strings.IndexAny(content, " \t"); i >= 0 {
			program = content[:i]
		}
		program = strings.TrimSuffix(program, ":*")
		if program == "" || strings.ContainsAny(program, `*\`) {
			return // the rule names no program: it allows what it says
		}
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
		if err != nil {
			t.Fatalf("%s allows %q, which does not parse: %v", rule, cmd, err)
		}
		syntax.Walk(f, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.CallExpr:
				var w syntax.Node
				if len(n.Assigns) > 0 {
					w = n.Assigns[0]
				} else {
					w = n.Args[0]
				}
				if first := cmd[w.Pos().Offset():w.End().Offset()]; first != program {
					t.Fatalf("%s allows %q, which runs %q", rule, cmd, first)
				}
			case *syntax.Redirect:
				if n.Op != syntax.DplOut && n.Op != syntax.DplIn {
					t.Fatalf("%s allows %q, which redirects to or from a file", rule, cmd)
				}
			case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.Subshell, *syntax.FuncDecl:
				t.Fatalf("%s allows %q, which runs a command the rule does not see", rule, cmd)
			case *syntax.Stmt:
				if n.Background {
					t.Fatalf("%s allows %q, which runs in the background", rule, cmd)
				}
			}
			return true
		})
	})
}
