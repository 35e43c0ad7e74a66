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
//   - it parses, is at most MaxCommand bytes and holds no control
//     character but tab and newline;
//   - it is a list of simple commands joined only by ;, newline, &&, ||,
//     | or |& — no &, subshell ( ), block { }, if/for/while/case,
//     function, [[ ]], (( )), let, declare/export/local, time or coproc;
//   - no word holds a command substitution $( ) or ` ` (also inside
//     double quotes), a process substitution <( ) >( ), an arithmetic
//     expansion $(( )), an extended glob @( ) or a parameter expansion
//     other than $X, ${X}, ${#X}, ${X/a/b} and ${X:-word}-style
//     operators (no ${X@P}, ${!X}, ${X[i]}, ${X:i:j}: bash may evaluate
//     a variable's text there, substitutions included), nor a "$"
//     that bash leaves as text but zsh expands ($~X, $=X);
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
// (the caller then asks a person or denies). The judgement is static: a
// rule that names a program which itself runs others (env, xargs, sh -c,
// find -exec) allows what that program runs.
//
// # The rule an "always" stores
//
// Exact(tool, input) is the narrowest rule for one use: Tool(subject),
// with "*" escaped. The core stores it when a person answers "always",
// never an agent's wider suggestion, so an always-allow rule is never
// wider than what the person saw.
package permrule
