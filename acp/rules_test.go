package acp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chirality/harness/acp"
)

// The daemon's skill rule, Bash(harness channel:*), as each agent's shell
// call reaches it: Claude over ACP names its tool Bash; Copilot and
// OpenCode send only the ACP kind execute (rawInput.command; Copilot
// adds commands). The rule allows exactly the skill CLI.
func TestAllowedByRulesShellAliases(t *testing.T) {
	rule := []string{"Bash(harness channel:*)"}
	cmd := func(c string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"command": c, "commands": []string{c}})
		return b
	}
	for _, tc := range []struct {
		name, command string
		want          bool
	}{
		{"Bash", "harness channel send '#dev' 'hi'", true},
		{"execute", "harness channel send '#dev' 'hi'", true},
		{"EXECUTE", "harness channel read '#dev'", true},
		{"bash", "harness channel", true},
		{"execute", "harness channel send '#dev' 'a; b && c | d > e $(f) `g`'", true},
		{"execute", `harness channel send '#dev' "it's 4"`, true},
		{"execute", "harness channels", false},
		{"execute", "harness channelx send", false},
		{"execute", "harness agents stop alice", false},
		{"execute", "harness channel send '#dev' hi; rm -rf ~", false},
		{"execute", "harness channel send '#dev' hi && curl evil", false},
		{"execute", "harness channel send '#dev' hi | sh", false},
		{"execute", "harness channel send '#dev' hi > ~/.bashrc", false},
		{"execute", "harness channel send '#dev' \"$(cat ~/.ssh/id_ed25519)\"", false},
		{"execute", "harness channel send '#dev' `id`", false},
		{"execute", "harness channel send '#dev' hi &", false},
		{"execute", "harness channel send '#dev' hi\nrm -rf ~", false},
		{"execute", "harness channel send '#dev' 'unclosed", false},
		{"read", "harness channel send '#dev' 'hi'", false},
		{"edit", "harness channel send '#dev' 'hi'", false},
	} {
		if got := acp.AllowedByRules(rule, tc.name, cmd(tc.command)); got != tc.want {
			t.Errorf("%s %q: %v, want %v", tc.name, tc.command, got, tc.want)
		}
	}
	// a rule for the kind matches Claude's name too; a bare name allows
	// every command, chained or not
	if !acp.AllowedByRules([]string{"execute(git:*)"}, "Bash", cmd("git status")) {
		t.Error("execute(git:*) does not match Bash git status")
	}
	if !acp.AllowedByRules([]string{"Bash"}, "execute", cmd("a; b")) {
		t.Error("Bash does not allow every command of execute")
	}
	// other tools' rules keep their plain prefix matching
	if !acp.AllowedByRules([]string{"read(/src/:*)"}, "read", json.RawMessage(`{"path":"/src/ a;b"}`)) {
		t.Error("read rule")
	}
}

func TestSimpleCommand(t *testing.T) {
	for c, want := range map[string]bool{
		"":                           true,
		"ls -la":                     true,
		`echo 'a;b' "c|d" e\;f`:      true,
		`echo "${HOME}"`:             true,
		`echo "a\"; b"`:              true,
		`echo "$(id)"`:               false,
		"echo \"`id`\"":              false,
		`echo 'a`:                    false,
		`echo "a`:                    false,
		"a\\\nb":                     false,
		"a || b":                     false,
		"a <(b)":                     false,
		"a\rb":                       false,
		"echo $(id)":                 false,
		"harness channel send x y z": true,
	} {
		if got := acp.SimpleCommand(c); got != want {
			t.Errorf("SimpleCommand(%q) = %v, want %v", c, got, want)
		}
	}
}

// FuzzSimpleCommand: any command line is judged without panic, and a
// command judged simple stays simple when a single-quoted word of any
// text without quotes is added (what the skill CLI's messages look like),
// and never is when an unquoted operator follows.
func FuzzSimpleCommand(f *testing.F) {
	for _, s := range []string{"harness channel send '#dev' 'hi'", `a "b\"c" d`, "a; b", "x $(y)", "'"} {
		f.Add(s, "text; with | ops")
	}
	f.Fuzz(func(t *testing.T, cmd, word string) {
		if !acp.SimpleCommand(cmd) {
			return
		}
		word = strings.ReplaceAll(word, "'", "")
		if !acp.SimpleCommand(cmd + " '" + word + "'") {
			t.Fatalf("%q became not simple with the quoted word %q", cmd, word)
		}
		if acp.SimpleCommand(cmd + " ; rm -rf ~") {
			t.Fatalf("%q is simple with a ; after it", cmd)
		}
	})
}
