package permrule

import (
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// MaxCommand is the longest command line a rule with content can allow
// (bytes); a longer one is put to a person.
const MaxCommand = 64 << 10

// SimpleCommands parses a shell command line (bash) and returns its
// simple commands, each as its words (leading assignments first) joined
// by single spaces, in order. ok is false when the line does not parse or
// holds anything but simple commands joined by ;, newline, &&, || and
// pipes, or a substitution, redirection or other construct that runs or
// redirects something not written as a simple command (the package doc
// lists them). It never panics.
func SimpleCommands(cmd string) (cmds []string, ok bool) {
	if len(cmd) > MaxCommand || !utf8.ValidString(cmd) {
		return nil, false
	}
	for _, c := range cmd {
		if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
			return nil, false
		}
	}
	defer func() {
		if recover() != nil {
			cmds, ok = nil, false
		}
	}()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(cmd), "")
	if err != nil {
		return nil, false
	}
	ok = true
	syntax.Walk(f, func(n syntax.Node) bool {
		if !ok || n == nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.File, *syntax.Word, *syntax.SglQuoted, *syntax.BraceExp:
		case *syntax.DblQuoted:
			// $"…" is translated by the locale's message catalog, and
			// bash expands what the catalog holds, substitutions included
			ok = !n.Dollar
		case *syntax.Comment:
			// bash ends a comment at the newline, backslash or not; the
			// parser reads a trailing backslash as a line continuation
			// and joins the next line to the commented command
			ok = !strings.Contains(n.Text, `\`)
		case *syntax.Lit:
			// a "$" bash leaves as text ($~X, $=X) is an expansion in
			// zsh, a shell agents run commands in too
			ok = !bareDollar(n.Value)
		case *syntax.Stmt:
			ok = !n.Background && !n.Coprocess && !n.Disown && n.Cmd != nil
		case *syntax.BinaryCmd:
			switch n.Op {
			case syntax.AndStmt, syntax.OrStmt, syntax.Pipe, syntax.PipeAll:
			default:
				ok = false
			}
		case *syntax.CallExpr:
			words := make([]string, 0, len(n.Assigns)+len(n.Args))
			for _, a := range n.Assigns {
				words = append(words, source(cmd, a))
			}
			for _, w := range n.Args {
				words = append(words, source(cmd, w))
			}
			cmds = append(cmds, strings.Join(words, " "))
		case *syntax.Assign:
			ok = n.Name != nil && n.Index == nil && n.Array == nil && !n.Naked
		case *syntax.Redirect:
			ok = fdCopy(n)
			return false // its word is a number or "-": nothing to walk
		case *syntax.ParamExp:
			ok = plainParam(n)
		default:
			// CmdSubst, ProcSubst, ArithmExp, ExtGlob, Subshell, Block,
			// IfClause, WhileClause, ForClause, CaseClause, FuncDecl,
			// ArithmCmd, TestClause, DeclClause, LetClause, TimeClause,
			// CoprocClause, TestDecl, and whatever a later parser adds.
			ok = false
		}
		return ok
	})
	if !ok {
		return nil, false
	}
	return cmds, true
}

// source is n's text in cmd.
func source(cmd string, n syntax.Node) string {
	s, e := n.Pos().Offset(), n.End().Offset()
	if s > e || int(e) > len(cmd) {
		panic("permrule: node outside the command") // recovered: not allowed
	}
	return cmd[s:e]
}

// fdCopy reports whether r only copies or closes a file descriptor
// (2>&1, >&2, 3<&-): no file is named, nothing is read from the line.
func fdCopy(r *syntax.Redirect) bool {
	if r.Op != syntax.DplOut && r.Op != syntax.DplIn || r.Hdoc != nil || r.Word == nil {
		return false
	}
	if r.N != nil && !digits(r.N.Value) {
		return false
	}
	w := r.Word.Lit()
	return len(r.Word.Parts) == 1 && (w == "-" || digits(w))
}

// bareDollar reports whether a literal holds a "$" not escaped by a
// backslash.
func bareDollar(lit string) bool {
	for i := 0; i < len(lit); i++ {
		switch lit[i] {
		case '\\':
			i++
		case '$':
			return true
		}
	}
	return false
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// plainParam reports whether p only reads a variable: $X, ${X}, ${#X},
// or ${X} with an operator whose words are inert (inertWord):
// ${X:-word}, ${X-word}, ${X:+word}, ${X+word}, ${X#pat}, ${X##pat},
// ${X%pat}, ${X%%pat}, ${X/pat/word} and ${X//pat/word}. The parser reads
// an operator's word as text where bash expands it, process substitution
// <( ) >( ) included, so a word that holds anything but inert characters
// and plain variables is refused. Refused too: ${X=word} and ${X:=word}
// (they assign), ${X?word}, the case operators ^ and , and the @
// operators (${X@P} expands a prompt string, command substitutions
// included), ${!X}, subscripts and slices (bash evaluates a variable's
// text as arithmetic there, which can run a command substitution).
func plainParam(p *syntax.ParamExp) bool {
	if p.Param == nil || p.Flags != nil || p.NestedParam != nil || p.Index != nil || p.Slice != nil ||
		p.Excl || p.Width || p.IsSet || p.Names != 0 || len(p.Modifiers) != 0 ||
		p.Split != syntax.OptUnset || p.GlobSubst != syntax.OptUnset || p.RcExpand != syntax.OptUnset {
		return false
	}
	if p.Repl != nil {
		return !p.Length && p.Exp == nil && inertWord(p.Repl.Orig) && inertWord(p.Repl.With)
	}
	if p.Exp == nil {
		return true
	}
	switch p.Exp.Op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AlternateUnset, syntax.AlternateUnsetOrNull,
		syntax.RemSmallPrefix, syntax.RemLargePrefix, syntax.RemSmallSuffix, syntax.RemLargeSuffix:
		return !p.Length && inertWord(p.Exp.Word)
	}
	return false
}

// inertWord reports whether w (nil: none) is made only of letters,
// digits, _ . , : / @ % + = - * ? # and plain variables: nothing bash
// could run, redirect, quote or escape. Extended globs need a "(",
// tildes a "~", escapes a "\", and none of those is here.
func inertWord(w *syntax.Word) bool {
	if w == nil {
		return true
	}
	for _, part := range w.Parts {
		switch part := part.(type) {
		case *syntax.Lit:
			for _, c := range part.Value {
				if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_.,:/@%+=-*?#", c)) {
					return false
				}
			}
		case *syntax.ParamExp:
			if !plainParam(part) {
				return false
			}
		default:
			return false
		}
	}
	return true
}
