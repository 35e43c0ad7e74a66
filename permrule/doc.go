// Package permrule owns permission rules: the one answer to "does this
// rule allow this tool use?" for the core's approvals (the session's
// always-allow rules), the ACP engine (Request.AllowedTools answering
// session/request_permission), and so for every door and the IRC daemon
// (its skill rule, Bash(harness channel:*)).
//
// It is a public top-level package, not internal/, because the question
// is asked outside this module too: an engine written elsewhere that
// receives engine.Request.AllowedTools must give the same answer as the
// core, and two implementations of one guard drift apart (this package
// replaced two, one of which let `npm test && touch pwned` through a
// Bash(npm test *) rule). It imports nothing of the harness.
//
// # Grammar (Claude Code's)
//
//	Tool               every use of Tool
//	Tool(exact)        uses whose subject is exactly "exact"
//	Tool(prefix:*)     uses whose subject starts with prefix (for a
//	                   shell: prefix is the whole command or is followed
//	                   by a space, so npm:* does not allow npmx)
//	Tool(glob *)       "*" matches any run of characters; a trailing " *"
//	                   also matches the bare command ("ls *" allows ls
//	                   and ls -la, not lsof)
//	\*                 in content: a literal "*" (Exact writes it so)
//	mcp__server__tool  every use of an MCP server's tool (the one name
//	                   every engine gives it; compared exactly)
//	mcp__server        every tool of that MCP server
//
// The subject of a use is its main input: the first string of command,
// cmd, file_path, filePath, path, notebook_path, url; else the input's
// compact JSON. Tool names are compared in any case (a persona's Read rule
// answers an ACP agent's request of kind read), and the shell's names are
// one: Bash, bash, the ACP kind execute and Codex's shell, so the daemon's
// Bash(harness channel:*) answers Copilot's execute requests.
//
// # Shell commands
//
// For a shell tool a rule with content is applied to the command as the
// shell parses it (mvdan.cc/sh/v3/syntax, bash dialect): the command is
// allowed only if
//
//   - it parses, is at most MaxCommand bytes of valid UTF-8 and holds no
//     control character but tab and newline;
//   - it is a list of simple commands joined only by ;, newline, &&, ||,
//     | or |& — no &, subshell ( ), block { }, if/for/while/case,
//     function, [[ ]], (( )), let, declare/export/local, time or coproc;
//   - no word holds a command substitution $( ) or ` ` (also inside
//     double quotes), a process substitution <( ) >( ) (in any word,
//     assignments included), an arithmetic expansion $(( )) or $[ ], an
//     extended glob @( ), a locale-translated string $"…" (bash expands
//     what the message catalog holds), nor a "$" that bash leaves as
//     text but zsh expands ($~X, $=X);
//   - every parameter expansion is $X, ${X}, ${#X}, or ${X} with one of
//     the operators :- - :+ + # ## % %% / // whose words are inert:
//     letters, digits, _ . , : / @ % + = - * ? # and plain $Y, ${Y}
//     (${X:-default}, ${HOME%/}, ${X//a/b}). The parser reads an
//     operator's word as text where bash expands it (bash runs the <( )
//     of ${X:-<(cmd)}), so a word with anything else — quotes, escapes,
//     spaces, ~, (, <, substitutions — is refused, and so are ${X=w} and
//     ${X:=w} (they assign), ${X?w}, ${X^p}, ${X,p}, ${X@op} (${X@P}
//     expands a prompt string, substitutions included), ${!X}, ${X[i]}
//     and ${X:i:j} (bash evaluates a variable's text as arithmetic
//     there, which can run a command substitution);
//   - no comment holds a backslash (bash ends a comment at the newline;
//     the parser reads "# x \" as continued on the next line, so the
//     command there would be read as arguments);
//   - no redirection but a descriptor copy or close (2>&1, >&2, 3<&-):
//     no >, >>, <, <>, here-document or here-string;
//   - and every simple command is allowed by some rule: its words (and
//     leading assignments, so X=1 cmd needs a rule that names X=1) joined
//     by single spaces match the rule's content.
//
// Quoted text is data: echo "a;b" is one simple command. A command that
// is exactly a rule's literal content (no wildcard) is allowed as it is,
// whatever it holds: that is the use a person saw and answered "always"
// to. A rule without content allows every command of the tool.
//
// Anything else — a parse error, a construct not listed — is not allowed
// (the caller then asks a person or denies). The differential test
// TestShellAgainstBash holds the attack corpus (testdata/bash-corpus.txt)
// and runs every command this package allows with the real bash under
// strace: it fails if bash executes a program the rule does not name or
// changes a file; FuzzShellAgainstBash mutates the corpus. The verdict is
// bash's in a UTF-8 (or C) locale: in one whose multibyte characters may
// end in an ASCII byte (Big5, GBK, Shift JIS) bash reads some lines
// otherwise.
//
// # What a rule permits
//
// The judgement is static and ends at the program's name: a rule allows
// its program with any further arguments the pattern lets through, and
// what the program then does with them is the program's. So
//
//   - a prefix rule allows ANY further arguments: Bash(git status:*)
//     allows git status --porcelain, git status -- any paths and also
//     git status -c core.pager=… (this package lets it through; git
//     status answers "unknown switch", since git reads -c only before
//     the subcommand, and git -c core.pager=… status does not start with
//     "git status"); whatever options the program reads after the
//     words the rule names are the rule's. Bash(npm test *) allows
//     npm test -- --config=./evil.js, which the test runner loads. A
//     program may also read settings from the environment or from files
//     in the project, which the command does not show;
//   - a word may expand to arguments the text does not show: globs
//     (* matches a file named --output=x), brace expansion
//     ({--exec=x,y}), $X and ${X:-…}: all are arguments of the same
//     program, never a second command;
//   - a rule naming a program that runs others allows what it runs:
//     env, xargs, sh -c, bash -c, find -exec, nohup, timeout, git (its
//     -c alias.x=!cmd and hooks), npm/make (scripts the project holds),
//     and bash's builtins eval, exec, command, builtin, source, ., trap,
//     and those that evaluate a variable name's subscript as arithmetic
//     (test -v, read, printf -v, unset, mapfile, wait -p);
//   - a glob in the program's word (Bash(git* x)) names every program it
//     matches.
//
// Write the narrowest rule that does the work; a rule on a program that
// runs others is as wide as the tool.
//
// # The rule an "always" stores
//
// Exact(tool, input) is the narrowest rule for one use: Tool(subject),
// with "*" escaped. The core stores it when a person answers "always",
// never an agent's wider suggestion, so an always-allow rule is never
// wider than what the person saw.
package permrule
