package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chirality/harness/engines"
)

// tree returns every command of the CLI by its path without "harness "
// ("sessions show"), help and completion among them.
func tree() map[string]*cobra.Command {
	m := map[string]*cobra.Command{}
	root := (&cli{stdout: io.Discard, stderr: io.Discard}).newRoot()
	root.InitDefaultHelpCmd()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				m[strings.TrimPrefix(sub.CommandPath(), "harness ")] = sub
				walk(sub)
			}
		}
	}
	walk(root)
	return m
}

// The completion script of each shell is generated, names the program
// and completes through `harness __complete`, whose answer names every
// top-level command; bash parses the bash script (bash -n), and a bash
// that sources it completes `harness se<Tab>` to the commands by running
// the real binary.
func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		var out, errOut bytes.Buffer
		if code := run([]string{"completion", sh}, &out, &errOut); code != 0 || errOut.Len() != 0 {
			t.Fatalf("completion %s: exit %d, stderr %q", sh, code, errOut.String())
		}
		script := out.String()
		for _, want := range []string{"harness", "__complete"} {
			if !strings.Contains(script, want) {
				t.Errorf("the %s script lacks %q", sh, want)
			}
		}
		if sh == "bash" {
			cmd := exec.Command("bash", "-n")
			cmd.Stdin = strings.NewReader(script)
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("bash -n: %v\n%s", err, msg)
			}
		}
	}

	var out bytes.Buffer
	if code := run([]string{"__complete", ""}, &out, io.Discard); code != 0 {
		t.Fatalf("__complete: exit %d", code)
	}
	for name, cmd := range tree() {
		if !strings.Contains(name, " ") && cmd.IsAvailableCommand() && !regexp.MustCompile(`(?m)^`+name+`\t`).MatchString(out.String()) {
			t.Errorf("__complete does not offer %s:\n%s", name, out.String())
		}
	}
	out.Reset()
	run([]string{"__complete", "turn", "--engine", ""}, &out, io.Discard)
	for _, name := range engines.Names {
		if !strings.Contains(out.String(), name+"\n") {
			t.Errorf("--engine does not complete to %s:\n%s", name, out.String())
		}
	}

	// A bash that sources the script completes `harness se` to sessions
	// and serve, asking the real binary (the test binary as harness). The
	// stub stands in for bash-completion's _get_comp_words_by_ref, which
	// the script calls where _init_completion is missing.
	bin := t.TempDir()
	exe, _ := os.Executable()
	os.WriteFile(filepath.Join(bin, "harness"), []byte("#!/bin/sh\nHARNESS_TEST_MAIN=1 exec "+exe+" \"$@\"\n"), 0o755)
	var script bytes.Buffer
	run([]string{"completion", "bash"}, &script, io.Discard)
	prog := script.String() + `
compopt() { :; } # a builtin that works only under a real Tab
_get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
COMP_WORDS=(harness se); COMP_CWORD=1; COMP_LINE="harness se"; COMP_POINT=${#COMP_LINE}
__start_harness harness se harness
printf '%s\n' "${COMPREPLY[@]}"
`
	cmd := exec.Command("bash", "-c", prog)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash completion: %v\n%s", err, got)
	}
	words := strings.Fields(string(got))
	slices.Sort(words)
	if strings.Join(words, " ") != "serve sessions" {
		t.Errorf("harness se<Tab> completes to %q, want serve and sessions", got)
	}
}

// usedArgs are the arguments a command's Use says it needs: the words
// after its name outside brackets ("show ID [--json]" → ID).
func usedArgs(use string) []string {
	depth := 0
	var b strings.Builder
	for _, r := range use {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return strings.Fields(b.String())[1:]
}

// On every command, an unknown flag and a missing argument are usage
// errors: exit 2, nothing on stdout, and stderr names the flag or the
// argument that is missing.
func TestEveryCommandUsageErrorsNameTheProblem(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("HARNESS_NICK", "")
	needArgs := 0
	for name, cmd := range tree() {
		args := append(strings.Fields(name), "--no-such-flag")
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "unknown flag: --no-such-flag") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
		want := usedArgs(cmd.Use)
		if cmd.HasSubCommands() || len(want) == 0 {
			continue
		}
		needArgs++
		out.Reset()
		errOut.Reset()
		args = strings.Fields(name)
		if code := run(args, &out, &errOut); code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), want[0]) {
			t.Errorf("%v without %s: exit %d, stdout %q, stderr %q", args, want[0], code, out.String(), errOut.String())
		}
	}
	if needArgs < 10 {
		t.Errorf("only %d commands take arguments; the Use lines changed?", needArgs)
	}
	// a command made of subcommands, given none or an unknown one
	for _, args := range [][]string{{"sessions"}, {"agents", "skills"}, {"completion"}, {"completion", "tcsh"}, {"bogus"}, {"help", "bogus"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 || out.Len() != 0 || errOut.Len() == 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
}

// The package doc names every command: each path (agents skills install)
// has a line "harness agents start|…|skills install".
func TestPackageDocNamesEveryCommand(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil || f.Doc == nil {
		t.Fatalf("doc.go: %v", err)
	}
	var lines [][]string
	for _, l := range strings.Split(f.Doc.Text(), "\n") {
		if fields := strings.Fields(l); len(fields) > 1 && fields[0] == "harness" {
			lines = append(lines, fields[1:])
		}
	}
	names := func(path string) bool {
		words := strings.Fields(path)
		for _, fields := range lines {
			ok := len(fields) >= len(words)
			for i := 0; ok && i < len(words); i++ {
				ok = slices.Contains(strings.Split(fields[i], "|"), words[i])
			}
			if ok {
				return true
			}
		}
		return false
	}
	for path := range tree() {
		if !names(path) {
			t.Errorf("the package doc does not name harness %s", path)
		}
	}
	if names("bogus") || names("sessions bogus") {
		t.Error("the check names commands that do not exist")
	}
}

// `harness turn --engine` takes every built-in engine by its name and by
// each alias, in any case; an unknown name is refused, naming --engine.
func TestTurnEngineTakesEveryName(t *testing.T) {
	names := append([]string{}, engines.Names...)
	for a := range engines.Aliases {
		names = append(names, a, strings.ToUpper(a))
	}
	for _, name := range names {
		var out, errOut bytes.Buffer
		// a valid engine passes on to the next check, which fails
		code := run([]string{"turn", "--engine", name, "--permission-mode", "yolo", "hi"}, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), "--permission-mode") || strings.Contains(errOut.String(), "--engine") {
			t.Errorf("--engine %s: exit %d, stderr %q", name, code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"turn", "--engine", "nope", "hi"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `--engine "nope"`) {
		t.Errorf("--engine nope: exit %d, stderr %q", code, errOut.String())
	}
}

// Command lines written for Go's flag package keep working: a long flag
// with one dash, -help; and "--" ends the flags.
func TestSingleDashLongFlagsAndDoubleDash(t *testing.T) {
	root := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run([]string{"sessions", "list", "-json", "-project-root", root}, &out, &errOut); code != 0 || strings.TrimSpace(out.String()) != "[]" {
		t.Errorf("sessions list -json -project-root: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run([]string{"personas", "show", "-help"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "usage: harness personas show") {
		t.Errorf("personas show -help: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	if got := normalizeArgs([]string{"-v", "-json=x", "--", "-json", "-3"}); strings.Join(got, " ") != "-v --json=x -- -json -3" {
		t.Errorf("normalizeArgs: %q", got)
	}
	out.Reset()
	errOut.Reset()
	// after "--", a dash is the message's, not a flag
	if code := run([]string{"turn", "--permission-mode", "yolo", "--", "--json"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--permission-mode") {
		t.Errorf("turn -- --json: exit %d, stderr %q", code, errOut.String())
	}
}

// `harness help COMMAND…` is the command's --help, for a subcommand too.
func TestHelpCommand(t *testing.T) {
	for _, path := range []string{"sessions show", "agents skills install", "completion bash", "turn"} {
		var help, flag, errOut bytes.Buffer
		c1 := run(append([]string{"help"}, strings.Fields(path)...), &help, &errOut)
		c2 := run(append(strings.Fields(path), "--help"), &flag, &errOut)
		if c1 != 0 || c2 != 0 || errOut.Len() != 0 || help.String() != flag.String() || !strings.HasPrefix(help.String(), "usage: harness "+path) {
			t.Errorf("help %s: exit %d/%d, stderr %q\n%s\n---\n%s", path, c1, c2, errOut.String(), help.String(), flag.String())
		}
	}
}

// A flag several commands take is declared once, in flags.go: no command
// file declares a flag of its own under a name another command also has,
// or under a name flags.go declares.
func TestSharedFlagsDeclaredOnce(t *testing.T) {
	declared := regexp.MustCompile(`\.(?:String|Bool|Int|Int64|Float64|Duration)?VarP?\([^,]+,\s*"([a-z][a-z-]*)"`)
	names := func(file string) []string {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range declared.FindAllStringSubmatch(string(src), -1) {
			out = append(out, m[1])
		}
		return out
	}
	shared := map[string]bool{}
	for _, n := range names("flags.go") {
		shared[n] = true
	}
	if len(shared) < 15 {
		t.Fatalf("flags.go declares only %d flags: the pattern is stale", len(shared))
	}
	// how many commands take each flag
	takers := map[string]int{}
	for _, cmd := range tree() {
		cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) { takers[f.Name]++ })
		cmd.PersistentFlags().VisitAll(func(f *pflag.Flag) { takers[f.Name]++ })
	}
	files, _ := filepath.Glob("*.go")
	own := map[string]string{}
	for _, file := range files {
		if file == "flags.go" || strings.HasSuffix(file, "_test.go") {
			continue
		}
		for _, n := range names(file) {
			switch {
			case shared[n]:
				t.Errorf("%s declares --%s, which flags.go declares", file, n)
			case own[n] != "":
				t.Errorf("--%s is declared in %s and in %s", n, own[n], file)
			case takers[n] > 1:
				t.Errorf("--%s, declared in %s, is taken by %d commands: declare it in flags.go", n, file, takers[n])
			}
			own[n] = file
		}
	}
}

// The servers and the JSON-RPC door take --no-checkpoints (their one
// harness.Config gets Checkpoints.Off from it).
func TestNoCheckpointsFlag(t *testing.T) {
	c := &cli{}
	for _, cmd := range []*cobra.Command{c.serveCmd(), c.agentServeCmd(), c.rpcCmd()} {
		if err := cmd.ParseFlags([]string{"--no-checkpoints"}); err != nil {
			t.Fatalf("%s: %v", cmd.Name(), err)
		}
		if off, err := cmd.Flags().GetBool("no-checkpoints"); err != nil || !off {
			t.Errorf("%s --no-checkpoints = %v, %v", cmd.Name(), off, err)
		}
	}
}
