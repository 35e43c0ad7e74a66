package permrule_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/chirality/harness/permrule"
)

func cmdInput(c string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"command": c, "description": "x"})
	return b
}

// npmTest is the rule Claude Code suggests for `npm test`, the one the
// core used to store on "always".
var npmTest = []string{"Bash(npm test *)"}

// TestShellRules is the attack table: each row a command a prompt-injected
// agent might send after a person allowed one command "always".
func TestShellRules(t *testing.T) {
	skill := []string{"Bash(harness channel:*)"}
	for _, c := range []struct {
		rules []string
		cmd   string
		want  bool
	}{
		// the rule's own uses
		{npmTest, "npm test", true},
		{npmTest, "npm test --watch", true},
		{npmTest, "npm  test   -- --grep x", true}, // blanks between words are not the command's
		{npmTest, "npm testx", false},
		{npmTest, "npm run test", false},
		// the injections of issue 19
		{npmTest, "npm test $(touch pwned)", false},
		{npmTest, "npm test `touch pwned`", false},
		{npmTest, "npm test | touch pwned", false},
		{npmTest, "npm test > pwned", false},
		{npmTest, "npm test && touch pwned", false},
		// every other separator and construct
		{npmTest, "npm test; touch pwned", false},
		{npmTest, "npm test || touch pwned", false},
		{npmTest, "npm test & touch pwned", false},
		{npmTest, "npm test &", false},
		{npmTest, "npm test\ntouch pwned", false},
		{npmTest, "npm test |& touch pwned", false},
		{npmTest, "npm test >> pwned", false},
		{npmTest, "npm test < /etc/passwd", false},
		{npmTest, "npm test <> pwned", false},
		{npmTest, "npm test &> pwned", false},
		{npmTest, "npm test >&pwned", false}, // >&word names a file
		{npmTest, "npm test <<EOF\nx\nEOF", false},
		{npmTest, "npm test <<< x", false},
		{npmTest, "npm test <(touch pwned)", false},
		{npmTest, "npm test >(touch pwned)", false},
		{npmTest, "(npm test)", false},
		{npmTest, "(touch pwned)", false},
		{npmTest, "{ npm test; }", false},
		{npmTest, "if true; then npm test; fi", false},
		{npmTest, "for f in a; do npm test; done", false},
		{npmTest, "f() { touch pwned; }; npm test", false},
		{npmTest, "npm test $((1+1))", false},
		{npmTest, "time npm test", false},
		{npmTest, "coproc npm test", false},
		{npmTest, "export X=1; npm test", false},
		{npmTest, "[[ -f x ]] && npm test", false},
		// substitution inside double quotes is substitution
		{npmTest, `npm test "$(touch pwned)"`, false},
		{npmTest, "npm test \"`touch pwned`\"", false},
		{npmTest, `npm test "${X:-$(touch pwned)}"`, false},
		// single quotes, escapes and double quotes without substitution are data
		{npmTest, `npm test '$(touch pwned)'`, true},
		{npmTest, "npm test '`touch pwned`; rm -rf ~ | sh > x'", true},
		{npmTest, `npm test "a;b" "c && d" "e | f"`, true},
		{npmTest, `npm test a\;b a\|c a\>d \$\(x\)`, true},
		{npmTest, `npm test "a\"; touch pwned"`, true},
		{npmTest, `npm test "a\"; touch pwned`, false}, // unclosed quote: parse error
		{npmTest, "npm test 'unclosed", false},
		{npmTest, "npm test \\\n  --watch", true},   // a line continuation is one command
		{npmTest, "npm test # ; touch pwned", true}, // a comment runs nothing
		// variables, globs and expansions that only make words
		{npmTest, "npm test $X ${HOME} ${X:-default} ${#X} ${X/a/b}", true},
		{npmTest, "npm test *.js src/**/x? {a,b}", true},
		{npmTest, "npm test ~/x", true},
		{npmTest, "npm test ${X@P}", false}, // expands $(…) held in X
		{npmTest, "npm test ${!X}", false},
		{npmTest, "npm test ${a[$i]}", false},
		{npmTest, "npm test ${X:1:2}", false},
		{npmTest, "npm test @(a|b)", false},
		// issue 29: bash runs <( ) >( ) in an operator's word, which the
		// parser reads as text; only inert words are allowed
		{npmTest, "npm test ${X:-<(touch pwned)}", false},
		{npmTest, "npm test ${X-<(touch pwned)} ", false},
		{npmTest, "npm test ${X:+>(touch pwned)}", false},
		{npmTest, "npm test ${X%<(touch pwned)}", false},
		{npmTest, "npm test ${X##<(touch pwned)}", false},
		{npmTest, "npm test ${X/#x/<(touch pwned)}", false},
		{npmTest, "npm test ${X//<(touch pwned)}", false},
		{npmTest, "npm test ${X:-${Y:-<(touch pwned)}}", false},
		{npmTest, "npm test ${X:-'a'} ${X:-\a} ${X:-a b} ${X:-~} ${X:-$((1))}", false},
		{npmTest, "npm test ${X:=a}", false}, // assigns
		{npmTest, "npm test ${X=a}", false},
		{npmTest, "npm test ${X:?a}", false},
		{npmTest, "npm test ${X^a} ${X,,}", false},
		{npmTest, "npm test ${X@Q}", false},
		{npmTest, "npm test ${#X:-a}", false},
		{npmTest, "npm test ${X:-a.b/c,d:e@f%g+h=i-j*k?l#m} ${X-} ${X:+$Y} ${X%%*/} ${X//a/${Y}}", true},
		{npmTest, "npm test $\"hello\"", false}, // the message catalog's text is expanded
		{npmTest, "npm test $[1+1]", false},
		// bash ends a comment at the newline; the parser reads a trailing
		// backslash there as a continuation
		{npmTest, "npm test # x \\\ntouch pwned", false},
		{npmTest, "npm test | # x \\\ntouch pwned", false},
		{npmTest, "npm test # a comment\nnpm test # another", true},
		{npmTest, "$X test", false},
		// the environment is part of the command
		{npmTest, "X=1 npm test", false},
		{npmTest, "NODE_OPTIONS='--require ./evil.js' npm test", false},
		{npmTest, "env X=1 npm test", false},
		{npmTest, "env npm test", false},
		{[]string{"Bash(X=1 npm test)"}, "X=1 npm test", true},
		{[]string{"Bash(env X=1 npm test)"}, "env X=1 npm test", true},
		{npmTest, "PATH=.; npm test", false},
		// lists where every command is allowed
		{npmTest, "npm test && npm test -- a", true},
		{npmTest, "npm test; npm test\nnpm test || npm test", true},
		{[]string{"Bash(npm test *)", "Bash(git status)"}, "git status && npm test | npm test", true},
		{[]string{"Bash(npm test *)", "Bash(git status)"}, "git status && npm test | touch pwned", false},
		{npmTest, "! npm test", true},
		{npmTest, "npm test 2>&1", true},
		{npmTest, "npm test >&2 3<&-", true},
		{npmTest, "npm test 2>/dev/null", false},
		{npmTest, "", false},
		{npmTest, "# only a comment", false},
		// control characters that a terminal would hide
		{npmTest, "npm test\rtouch pwned", false},
		{npmTest, "npm test \x1b[2K", false},
		// prefix rules (Claude Code's :*) end at a word
		{[]string{"Bash(npm run:*)"}, "npm run test", true},
		{[]string{"Bash(npm run:*)"}, "npm run", true},
		{[]string{"Bash(npm run:*)"}, "npm runx", false},
		{[]string{"Bash(npm run:*)"}, "npm run test; touch pwned", false},
		// globs in the middle
		{[]string{"Bash(git * main)"}, "git push origin main", true},
		{[]string{"Bash(git * main)"}, "git push origin dev", false},
		{[]string{"Bash(git * main)"}, "git push origin main; touch main", false},
		// exact rules
		{[]string{"Bash(touch marker)"}, "touch marker", true},
		{[]string{"Bash(touch marker)"}, "touch marker2", false},
		{[]string{"Bash(touch marker)"}, "touch marker && touch marker", true},
		{[]string{"Bash(touch marker)"}, "touch marker; touch pwned", false},
		{[]string{`Bash(cd /x && make > log)`}, "cd /x && make > log", true}, // the very line a person allowed
		{[]string{`Bash(cd /x && make > log)`}, "cd /x && make > log2", false},
		{[]string{`Bash(ls \*.go)`}, "ls *.go", true},
		{[]string{`Bash(ls \*.go)`}, "ls main.go", false},
		// a rule without content allows every command, chained or not
		{[]string{"Bash"}, "npm test && touch pwned", true},
		{[]string{"Bash"}, "npm test $(", true},
		// rules that do not parse allow nothing
		{[]string{"Bash(npm test *"}, "npm test", false},
		{[]string{"Bash()"}, "npm test", false},
		{[]string{"(npm test)"}, "npm test", false},
		{nil, "ls", false},
		// the daemon's skill rule
		{skill, "harness channel send '#dev' 'hi'", true},
		{skill, "harness channel send '#dev' 'a; b && c | d > e $(f) `g`'", true},
		{skill, `harness channel send '#dev' "it's 4"`, true},
		{skill, "harness channel", true},
		{skill, "harness channels", false},
		{skill, "harness agents stop alice", false},
		{skill, "harness channel send '#dev' hi; rm -rf ~", false},
		{skill, "harness channel send '#dev' \"$(cat ~/.ssh/id_ed25519)\"", false},
		{skill, "harness channel send '#dev' hi\nrm -rf ~", false},
		// zsh constructs that run code are refused (bash does not parse them)
		{npmTest, "npm test *(e:'touch pwned':)", false},
		{npmTest, "npm test =(touch pwned)", false},
		{npmTest, "npm test ${(e)X}", false},
		{npmTest, "npm test $~X", false}, // zsh: X's text as a pattern, qualifiers and all
		{npmTest, "npm test $=X", false},
		{npmTest, "npm test x(e:'touch pwned':)", false},
		{npmTest, "npm test $'a;b\n'", true}, // ANSI-C quoting is data
	} {
		if got := permrule.Allowed(c.rules, "Bash", cmdInput(c.cmd)); got != c.want {
			t.Errorf("%v on %q: %v, want %v", c.rules, c.cmd, got, c.want)
		}
	}
}

// TestShellNames: the shell's names are one tool; other names match in
// any case.
func TestShellNames(t *testing.T) {
	in := cmdInput("harness channel send '#dev' hi")
	for _, c := range []struct {
		rule, tool string
		want       bool
	}{
		{"Bash(harness channel:*)", "execute", true},
		{"Bash(harness channel:*)", "EXECUTE", true},
		{"Bash(harness channel:*)", "bash", true},
		{"Bash(harness channel:*)", "shell", true},
		{"execute(harness:*)", "Bash", true},
		{"shell", "Bash", true},
		{"Bash(harness channel:*)", "read", false},
		{"Bash(harness channel:*)", "Edit", false},
		{"Read", "read", true}, // a persona's rule answers the ACP kind
		{"Read", "Reader", false},
		{"Read", "Read", true},
		{"Execute(git:*)", "execute", false}, // the command is harness…
	} {
		if got := permrule.Allowed([]string{c.rule}, c.tool, in); got != c.want {
			t.Errorf("%s on %s: %v, want %v", c.rule, c.tool, got, c.want)
		}
	}
	git := cmdInput("git status -s")
	for rule, want := range map[string]bool{
		"execute": true, "Execute(git:*)": true, "execute(git status*)": true, "execute(ls:*)": false, "read": false, "": false,
	} {
		if got := permrule.Allowed([]string{rule}, "execute", git); got != want {
			t.Errorf("%q on execute git status -s: %v, want %v", rule, got, want)
		}
	}
	if permrule.Allowed([]string{"execute(harness channel:*)"}, "execute", cmdInput("harness channel x; id")) {
		t.Error("a chained execute command was allowed")
	}
}

// TestOtherTools: non-shell tools keep plain content matching on their
// main input: prefix, glob, exact.
func TestOtherTools(t *testing.T) {
	path := func(k, p string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{k: p})
		return b
	}
	for _, c := range []struct {
		rule, tool string
		in         json.RawMessage
		want       bool
	}{
		{"Read(/src/:*)", "Read", path("file_path", "/src/a.go"), true},
		{"Read(/src/:*)", "Read", path("file_path", "/srcx/a.go"), false},
		{"read(/src/:*)", "read", path("path", "/src/ a;b"), true}, // no shell: ; is a character
		{"Edit(/src/*.go)", "Edit", path("file_path", "/src/a.go"), true},
		{"Edit(/src/*.go)", "Edit", path("file_path", "/src/a.js"), false},
		{"Write(/tmp/x)", "Write", path("file_path", "/tmp/x"), true},
		{"Write(/tmp/x)", "Write", path("file_path", "/tmp/xy"), false},
		{"WebFetch(https://go.dev/*)", "WebFetch", path("url", "https://go.dev/doc"), true},
		{"NotebookEdit(/n.ipynb)", "NotebookEdit", path("notebook_path", "/n.ipynb"), true},
		{"edit(/src/a.go)", "edit", path("filePath", "/src/a.go"), true},
		{"mcp__srv__tool", "mcp__srv__tool", json.RawMessage(`{"a":1}`), true},
		{"mcp__srv__tool", "mcp__srv__other", json.RawMessage(`{"a":1}`), false},
		{`mcp__srv__tool({"a":1})`, "mcp__srv__tool", json.RawMessage(`{ "a": 1 }`), true},
		{`mcp__srv__tool({"a":1})`, "mcp__srv__tool", json.RawMessage(`{"a":2}`), false},
		{"mcp__srv__tool", "mcp__srv__toolx", json.RawMessage(`{}`), false},
		{"mcp__srv__tool", "mcp__srv__Tool", json.RawMessage(`{}`), false}, // MCP names are exact
		{"MCP__srv__tool", "mcp__srv__tool", json.RawMessage(`{}`), false},
		{"mcp__srv", "mcp__srv__tool", json.RawMessage(`{"a":1}`), true}, // the whole server (Claude Code's form)
		{"mcp__srv", "mcp__srvx__tool", json.RawMessage(`{}`), false},
		{"mcp__sr", "mcp__srv__tool", json.RawMessage(`{}`), false},
		{"mcp__srv__tool", "mcp__srv", json.RawMessage(`{}`), false},
		{"mcp__everything__echo", "mcp__everything__echo", json.RawMessage(`{"message":"hi"}`), true},
		{"mcp__everything__echo", "Bash", cmdInput("echo hi"), false},
		{"Edit", "Bash", cmdInput("ls"), false},
	} {
		if got := permrule.Allowed([]string{c.rule}, c.tool, c.in); got != c.want {
			t.Errorf("%s on %s %s: %v, want %v", c.rule, c.tool, c.in, got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{"Bash", "Bash(npm test *)", "Bash(echo ))", "mcp__a-b__c.d", `Bash(ls \*)`} {
		r, err := permrule.Parse(s)
		if err != nil || r.String() != s {
			t.Errorf("Parse(%q) = %v, %v", s, r, err)
		}
	}
	for _, s := range []string{"", "(x)", "Bash(", "Bash()", "Bash(x", "Ba sh", "Bash x)", "Bash\n(x)"} {
		if _, err := permrule.Parse(s); !errors.Is(err, permrule.ErrSyntax) {
			t.Errorf("Parse(%q): %v, want ErrSyntax", s, err)
		}
	}
}

// TestExact: the rule an "always" stores allows the use a person saw and
// no other.
func TestExact(t *testing.T) {
	for _, c := range []struct {
		tool, cmd   string
		want        string
		notAllowed  []string
		alsoAllowed []string
	}{
		{"Bash", "npm test", "Bash(npm test)", []string{"npm test $(touch pwned)", "npm test && touch pwned", "npm test x", "npm testx"}, []string{"npm  test", "npm test; npm test"}},
		{"Bash", "ls *.go", `Bash(ls \*.go)`, []string{"ls main.go", "ls x.go; id"}, nil},
		{"Bash", `find . -name \*.go`, `Bash(find . -name \\*.go)`, []string{`find . -name \x.go`}, nil},
		{"Bash", "npm run:*", `Bash(npm run:\*)`, []string{"npm run x"}, nil},
		{"Bash", "make *", `Bash(make \*)`, []string{"make", "make all"}, nil},
		{"Bash", "cd /x && make > log", "Bash(cd /x && make > log)", []string{"cd /x && make > log2", "cd /x"}, nil},
		{"execute", "echo (", "execute(echo ()", []string{"echo"}, nil},
	} {
		in := cmdInput(c.cmd)
		got := permrule.Exact(c.tool, in)
		if got != c.want {
			t.Errorf("Exact(%q) = %q, want %q", c.cmd, got, c.want)
		}
		if !permrule.Allowed([]string{got}, c.tool, in) {
			t.Errorf("%s does not allow %q", got, c.cmd)
		}
		for _, o := range c.notAllowed {
			if permrule.Allowed([]string{got}, c.tool, cmdInput(o)) {
				t.Errorf("%s allows %q", got, o)
			}
		}
		for _, o := range c.alsoAllowed {
			if !permrule.Allowed([]string{got}, c.tool, cmdInput(o)) {
				t.Errorf("%s does not allow %q", got, o)
			}
		}
	}
	if r := permrule.Exact("Read", json.RawMessage(`{"file_path":"/a*b"}`)); r != `Read(/a\*b)` || permrule.Allowed([]string{r}, "Read", json.RawMessage(`{"file_path":"/aXb"}`)) {
		t.Errorf("Exact Read: %q", r)
	}
}

func TestSimpleCommands(t *testing.T) {
	got, ok := permrule.SimpleCommands("A=1  npm test 'a b' 2>&1 | grep -v \"x\" && ls")
	if !ok || strings.Join(got, "|") != `A=1 npm test 'a b'|grep -v "x"|ls` {
		t.Fatalf("SimpleCommands = %q, %v", got, ok)
	}
	if _, ok := permrule.SimpleCommands(strings.Repeat("a", permrule.MaxCommand+1)); ok {
		t.Error("a command over MaxCommand was parsed")
	}
	if _, ok := permrule.SimpleCommands("npm test \xff"); ok {
		t.Error("a command that is not UTF-8 was parsed")
	}
}

// BenchmarkAllowed: the cost a session's rules add to each approval
// question: a shell command parsed and matched against three rules.
func BenchmarkAllowed(b *testing.B) {
	rules := []string{"Read", "Bash(git status)", "Bash(npm test *)"}
	in := cmdInput(`npm test -- --grep "a b" 2>&1 | npm test && git status`)
	for b.Loop() {
		if !permrule.Allowed(rules, "Bash", in) {
			b.Fatal("not allowed")
		}
	}
}
