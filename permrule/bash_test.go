package permrule_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/permrule"
)

// The differential tests of this file take the real bash as the judge of
// what a command does: a (rule, command) pair the matcher allows is run
// by /bin/bash -c under strace, and fails if bash executed any program
// but the ones the rules name or changed any file. See bashJudge.

// corpusFile is the attack corpus: one case a line, comments (#) naming
// the families. A case is one or more quoted rules and the quoted command
// last (Go syntax, so newlines and unicode are written \n, \u00a0);
// "allow" before it says the matcher must allow it (a use the rule is
// for: the corpus cannot pass by refusing everything).
const corpusFile = "testdata/bash-corpus.txt"

type corpusCase struct {
	line  int
	rules []string
	cmd   string
	allow bool
}

func readCorpus(tb testing.TB) []corpusCase {
	tb.Helper()
	b, err := os.ReadFile(corpusFile)
	if err != nil {
		tb.Fatal(err)
	}
	var cases []corpusCase
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		c := corpusCase{line: i + 1}
		if rest, ok := strings.CutPrefix(line, "allow "); ok {
			c.allow, line = true, strings.TrimSpace(rest)
		}
		var quoted []string
		for line != "" {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				tb.Fatalf("%s:%d: %v", corpusFile, i+1, err)
			}
			s, _ := strconv.Unquote(q)
			quoted = append(quoted, s)
			line = strings.TrimSpace(line[len(q):])
		}
		if len(quoted) < 2 {
			tb.Fatalf("%s:%d: want rules and a command", corpusFile, i+1)
		}
		c.rules, c.cmd = quoted[:len(quoted)-1], quoted[len(quoted)-1]
		cases = append(cases, c)
	}
	return cases
}

// TestShellAgainstBash runs the corpus: every pair the matcher allows is
// judged by bash. It is the test that failed on the matcher of issue 29
// (Bash(git status:*) allowed git status ${X:-<(touch pwned)}).
func TestShellAgainstBash(t *testing.T) {
	needJudge(t)
	cases := readCorpus(t)
	var run int
	for _, c := range cases {
		allowed := permrule.Allowed(c.rules, "Bash", cmdInput(c.cmd))
		if c.allow && !allowed {
			t.Errorf("%s:%d: %v does not allow %q, a use it is for", corpusFile, c.line, c.rules, c.cmd)
		}
		if !allowed {
			continue
		}
		programs, why := namedPrograms(c.rules)
		if why != "" {
			t.Fatalf("%s:%d: %s", corpusFile, c.line, why)
		}
		run++
		t.Run(strconv.Itoa(c.line), func(t *testing.T) {
			t.Parallel()
			if v := bashJudge(t, programs, c.cmd); len(v) > 0 {
				t.Errorf("%s:%d: %v allows %q, and bash did what they do not name:\n\t%s",
					corpusFile, c.line, c.rules, c.cmd, strings.Join(v, "\n\t"))
			}
		})
	}
	if run == 0 {
		t.Fatal("the corpus has no allowed command: bash judged nothing")
	}
	t.Logf("bash judged the %d of %d cases the matcher allows", run, len(cases))
}

// TestBashJudge: the judge can fail. Commands that run an unnamed program
// (directly, in a process substitution bash hides in a parameter
// expansion) or write a file with no program at all are caught; the rule's
// own use is not.
func TestBashJudge(t *testing.T) {
	needJudge(t)
	git := []string{"git"}
	for _, c := range []struct {
		cmd, want string
	}{
		{"git status; touch pwned", "touch"},
		{"git status ${X:-<(touch pwned)}", "touch"},
		{"git status >(env >&2)", "env"},
		{"git status; echo x > pwned", "pwned"},
		{"git status; : >> ~/.bashrc", ".bashrc"},
		{"git status; cd /tmp; echo >permrule-judge-$$", "permrule-judge"},
		{"git status; /bin/bash -c :", "bash"},
	} {
		v := bashJudge(t, git, c.cmd)
		if len(v) == 0 || !strings.Contains(strings.Join(v, "\n"), c.want) {
			t.Errorf("the judge on %q: %q, want a violation naming %q", c.cmd, v, c.want)
		}
	}
	if v := bashJudge(t, git, "git status -s ${X:-x} \"$HOME\" 2>&1 | git status && echo ok >&2"); len(v) > 0 {
		t.Errorf("the judge on the rule's own use: %q", v)
	}
}

// FuzzShellAgainstBash: mutations of the corpus; whatever the matcher
// allows under a rule that names a program the judge can stand in for is
// judged by bash. Found cases go to testdata/fuzz/FuzzShellAgainstBash.
func FuzzShellAgainstBash(f *testing.F) {
	needJudge(f)
	for _, c := range readCorpus(f) {
		if len(c.rules) == 1 {
			f.Add(c.rules[0], c.cmd)
		}
	}
	f.Fuzz(func(t *testing.T, rule, cmd string) {
		in := cmdInput(cmd)
		cmd = permrule.Subject(in) // as the JSON carries it (valid UTF-8)
		if !permrule.Allowed([]string{rule}, "Bash", in) {
			return
		}
		r, err := permrule.Parse(rule)
		if err != nil || strings.ReplaceAll(r.Content, `\*`, "*") == cmd {
			return // the very line a person allowed: it is allowed as it is
		}
		programs, why := namedPrograms([]string{rule})
		if why != "" {
			return
		}
		if v := bashJudge(t, programs, cmd); len(v) > 0 {
			t.Fatalf("%s allows %q, and bash did what it does not name:\n\t%s", rule, cmd, strings.Join(v, "\n\t"))
		}
	})
}

// needJudge fails without strace where CI runs (.ci/run installs it) and
// skips a developer's run without it.
func needJudge(tb testing.TB) {
	tb.Helper()
	if _, err := os.Stat(bashPath); err != nil {
		tb.Fatalf("bash: %v", err)
	}
	if stracePath() == "" {
		if os.Getenv("CI") != "" {
			tb.Fatal("strace is needed (Debian: strace; .ci/run installs it)")
		}
		tb.Skip("strace is not installed (Debian: apt-get install strace); CI runs this test")
	}
}

const bashPath = "/bin/bash"

// stracePath is strace's path, found where Debian puts it (not by the
// host's PATH), or "".
func stracePath() string {
	for _, p := range []string{"/usr/bin/strace", "/bin/strace", "/usr/local/bin/strace"} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

var (
	builtinsOnce sync.Once
	builtins     map[string]bool
)

// bashBuiltins are the builtins and reserved words of the judge's bash:
// a rule naming one names no program a stand-in could replace.
func bashBuiltins() map[string]bool {
	builtinsOnce.Do(func() {
		out, err := exec.Command(bashPath, "-c", "compgen -b; compgen -k").Output()
		builtins = map[string]bool{}
		if err != nil {
			panic(fmt.Sprintf("bash compgen: %v", err))
		}
		for _, w := range strings.Fields(string(out)) {
			builtins[w] = true
		}
	})
	return builtins
}

var programName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.+-]*$`)

// namedPrograms are the programs rules name: each rule's first word (git
// of Bash(git status:*)). why says why the rules cannot be judged: a
// rule without content, or whose first word is a pattern, a path or a
// builtin of bash (eval, exec, source, trap: what they run is theirs).
func namedPrograms(rules []string) (programs []string, why string) {
	for _, s := range rules {
		r, err := permrule.Parse(s)
		if err != nil || r.Content == "" {
			return nil, fmt.Sprintf("rule %q does not name a program", s)
		}
		p := strings.TrimSuffix(strings.FieldsFunc(r.Content, func(c rune) bool { return c == ' ' || c == '\t' })[0], ":*")
		if !programName.MatchString(p) || bashBuiltins()[p] {
			return nil, fmt.Sprintf("rule %q: %q is no program a stand-in can replace", s, p)
		}
		programs = append(programs, p)
	}
	return programs, ""
}

// judgeTimeout bounds one command's run; none of the corpus's runs for
// more than a moment, so reaching it means something ran that should not.
const judgeTimeout = 60 * time.Second

// nobody is the user the judge runs bash as when the test runs as root.
const nobody = 65534

// bashJudge runs cmd with /bin/bash -c under strace -f in a fresh scratch
// directory (its cwd, HOME and TMPDIR), with an environment of its own
// (PATH: a directory of stand-ins for programs, which run /bin/true,
// then /usr/bin:/bin, so that an attack's touch or env really runs), as
// nobody when the test is root. It returns what bash did that programs
// do not name: an executed program other than bash itself and the
// stand-ins, a file opened for writing or created, removed, renamed,
// linked, its mode or times changed (anywhere: strace sees every
// process), a change in the scratch directory, or a run that did not end.
func bashJudge(tb testing.TB, programs []string, cmd string) (violations []string) {
	tb.Helper()
	root, err := os.MkdirTemp("", "permrule-bash-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(root)
	work, bin, tmp, trace := filepath.Join(root, "work"), filepath.Join(root, "bin"), filepath.Join(root, "tmp"), filepath.Join(root, "trace")
	stand := map[string]bool{}
	for _, d := range []string{work, bin, tmp, trace} {
		if err := os.Mkdir(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	for _, p := range programs {
		if err := os.Symlink("/bin/true", filepath.Join(bin, p)); err != nil && !os.IsExist(err) {
			tb.Fatal(err)
		}
		stand[filepath.Join(bin, p)] = true
	}
	attr := &syscall.SysProcAttr{Setpgid: true}
	if os.Geteuid() == 0 {
		for _, d := range []string{root, work, tmp, trace} {
			if err := os.Chown(d, nobody, nobody); err != nil {
				tb.Fatal(err)
			}
		}
		attr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}
	}
	before := snapshot(tb, work, bin, tmp)

	ctx, cancel := context.WithTimeout(context.Background(), judgeTimeout)
	defer cancel()
	var out capped
	c := exec.CommandContext(ctx, stracePath(), "-f", "-ff", "-qq", "-z", "-s", "4096",
		"-e", "signal=none", "-e", "trace=%file", "-o", filepath.Join(trace, "t"),
		bashPath, "-c", cmd)
	c.Dir = work
	c.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + work, "TMPDIR=" + tmp, "LC_ALL=C.UTF-8", "PWD=" + work}
	c.Stdout, c.Stderr = &out, &out
	c.SysProcAttr = attr
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 10 * time.Second
	runErr := c.Run() // its exit status is no verdict: git status fails outside a repository
	if ctx.Err() != nil {
		violations = append(violations, fmt.Sprintf("did not end within %v (output %q)", judgeTimeout, tail(out.String())))
	}

	files, _ := filepath.Glob(filepath.Join(trace, "t.*"))
	bashes := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			v, isBash := judgeLine(line, stand)
			if isBash {
				bashes++
				if bashes == 1 {
					continue // bash itself, once
				}
			}
			if v != "" {
				violations = append(violations, v)
			}
		}
	}
	if bashes == 0 {
		tb.Fatalf("strace traced no bash for %q (%d trace files; %v; output %q)", cmd, len(files), runErr, tail(out.String()))
	}
	after := snapshot(tb, work, bin, tmp)
	for name, st := range after {
		if b, ok := before[name]; !ok {
			violations = append(violations, "created "+name)
		} else if b != st {
			violations = append(violations, "changed "+name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			violations = append(violations, "removed "+name)
		}
	}
	if len(violations) > 0 {
		violations = append(violations, fmt.Sprintf("(output %q)", tail(out.String())))
	}
	return violations
}

// capped keeps the first 64 KiB written to it: a command's output,
// bounded whatever runs.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := 64<<10 - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func tail(s string) string {
	if len(s) > 400 {
		return "…" + s[len(s)-400:]
	}
	return s
}

// traceLine is one strace line: syscall(args) = result.
var traceLine = regexp.MustCompile(`^([a-z0-9_]+)\((.*)\)\s+= (.*)$`)

// quotedArg is strace's quoted string argument.
var quotedArg = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)

// readOnly are %file syscalls that change nothing.
var readOnly = map[string]bool{
	"access": true, "faccessat": true, "faccessat2": true, "stat": true, "stat64": true, "lstat": true,
	"lstat64": true, "newfstatat": true, "fstatat64": true, "statx": true, "statfs": true, "statfs64": true,
	"readlink": true, "readlinkat": true, "getcwd": true, "chdir": true, "getxattr": true, "lgetxattr": true,
	"listxattr": true, "llistxattr": true,
}

// judgeLine judges one successful syscall of the trace: v is what it did
// that the rules do not allow ("" when nothing); isBash that it is an
// exec of bash (the judge's own, once).
func judgeLine(line string, stand map[string]bool) (v string, isBash bool) {
	m := traceLine.FindStringSubmatch(line)
	if m == nil {
		return "", false // strace's notes; every syscall line matches
	}
	name, args := m[1], m[2]
	path := ""
	rest := args
	if q := quotedArg.FindStringSubmatchIndex(args); q != nil {
		path, rest = args[q[2]:q[3]], args[q[1]:]
	}
	switch {
	case name == "execveat":
		return "ran " + args, false
	case name == "execve":
		if path == bashPath {
			return "ran " + args, true
		}
		if stand[path] {
			return "", false
		}
		return "ran " + args, false
	case name == "open" || name == "openat" || name == "openat2":
		for _, f := range []string{"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"} {
			if strings.Contains(rest, f) {
				return "opened for writing " + path + " (" + line + ")", false
			}
		}
		return "", false
	case readOnly[name]:
		return "", false
	}
	return "changed a file: " + line, false
}

type fileState struct {
	mode fs.FileMode
	size int64
	mod  time.Time
	link string
}

// snapshot is every file under dirs with its mode, size, time and link.
func snapshot(tb testing.TB, dirs ...string) map[string]fileState {
	tb.Helper()
	m := map[string]fileState{}
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			st, err := os.Lstat(p)
			if err != nil {
				return err
			}
			fsSt := fileState{mode: st.Mode(), size: st.Size(), mod: st.ModTime()}
			if st.Mode()&fs.ModeSymlink != 0 {
				fsSt.link, _ = os.Readlink(p)
			}
			m[p] = fsSt
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return m
}
