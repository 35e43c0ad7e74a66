package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/daemon"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/irc/irctest"
	"github.com/chirality/harness/persona"
)

// TestREADMECurlSession runs the README's curl session, as written,
// against a real `harness serve --demo` (only the address is the test
// server's instead of 127.0.0.1:8787).
func TestREADMECurlSession(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed by the README's session (install it: apt-get install %s)", tool, tool)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme-curl-session -->\\s*```sh\\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no marked curl session")
	}
	script := string(m[1])
	if !strings.Contains(script, "http://127.0.0.1:8787") {
		t.Fatal("the README's session does not talk to make demo's address")
	}

	t.Setenv("HARNESS_CLAUDE_BIN", claudetest.FindCLI(t))
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	url, stop, status, errOut := startServe(t, "--demo", "--addr", "127.0.0.1:0")
	defer func() {
		stop <- os.Interrupt
		if code := <-status; code != 0 {
			t.Errorf("serve exit %d:\n%s", code, errOut.String())
		}
	}()
	script = strings.ReplaceAll(script, "http://127.0.0.1:8787", url)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's session failed: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{`"ok":true`, `"type":"user:message"`, `"type":"session:init"`, `"type":"process:exit"`, `"running":false`} {
		if !strings.Contains(got, want) {
			t.Errorf("the session's output lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "null") && strings.Contains(got, `invalid session id "null"`) {
		t.Errorf("the session id was null:\n%s", got)
	}
	if strings.Count(got, `"type":"process:exit"`) != 2 {
		t.Errorf("want the turn's stream and the history, each ending in process:exit:\n%s", got)
	}
}

// TestREADMEAgentsYAML parses the README's agents.yaml example as
// `harness agents start` would: it must stay a valid configuration.
func TestREADMEAgentsYAML(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- agents-yaml -->\\s*```yaml\\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no marked agents.yaml example")
	}
	cfg, err := daemon.ParseConfig(m[1], "README.md")
	if err != nil {
		t.Fatalf("the README's agents.yaml is not valid: %v", err)
	}
	var nicks []string
	for _, a := range cfg.Agents {
		nicks = append(nicks, cfg.IRCNick(a)+"="+a.Engine())
	}
	if got, want := strings.Join(nicks, " "), "lab-alice=claude-code lab-nat=anthropic lab-oc=acp-oc"; got != want {
		t.Errorf("agents: %s, want %s", got, want)
	}
	if cfg.Supervisor == nil || cfg.Supervisor.WindowSize != 20 || cfg.Supervisor.EvalInterval != 5 {
		t.Errorf("supervisor: %+v", cfg.Supervisor)
	}
}

// TestREADMEEnginesYAML parses the README's engines file as `--engines`
// would.
func TestREADMEEnginesYAML(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- engines-yaml -->\\s*```yaml\\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no marked engines file")
	}
	cfgs, err := engines.ParseFile("README.md", m[1])
	if err != nil {
		t.Fatalf("the README's engines file is not valid: %v", err)
	}
	if len(cfgs) != 1 || cfgs[0].Name != "my-agent" || strings.Join(cfgs[0].Command, " ") != "my-agent --acp" {
		t.Errorf("entries: %+v", cfgs)
	}
}

// TestREADMEAgentsOnFreshFolders runs the README's agents.yaml as a
// newcomer would, in an empty folder (issue 20.7): every agent comes up
// (nat, the anthropic agent with no skill file, too), each directory is
// made before anything connects, and stop ends them all.
func TestREADMEAgentsOnFreshFolders(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- agents-yaml -->\\s*```yaml\\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no marked agents.yaml example")
	}
	f, err := irctest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	run1, _ := os.MkdirTemp("", "hs")
	t.Cleanup(func() { os.RemoveAll(run1) })
	t.Setenv("XDG_RUNTIME_DIR", run1)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	host, port, _ := strings.Cut(f.Addr(), ":")
	dir := t.TempDir()
	yaml := strings.Replace(string(m[1]), "host: 127.0.0.1, port: 6667", "host: "+host+", port: "+port, 1)
	if yaml == string(m[1]) {
		t.Fatal("the README's server line changed: update this test")
	}
	cfg := filepath.Join(dir, "agents.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"agents", "start", "--config", cfg}, &out, &errOut) }()
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(out.String(), ": up as") < 3 {
		if time.Now().After(deadline) || strings.Contains(errOut.String(), "not a directory") {
			t.Fatalf("the README's agents did not all come up:\n%s\n%s", out.String(), errOut.String())
		}
		time.Sleep(20 * time.Millisecond) // poll the command's output
	}
	for _, a := range []string{"alice", "nat", "oc"} {
		if fi, err := os.Stat(filepath.Join(dir, a)); err != nil || !fi.IsDir() {
			t.Errorf("./%s: %v", a, err)
		}
		if !strings.Contains(out.String(), a+": up as lab-"+a) {
			t.Errorf("%s not up: %s", a, out.String())
		}
	}
	for _, a := range []string{"alice", "nat", "oc"} {
		var o, e bytes.Buffer
		if code := run([]string{"agents", "stop", a}, &o, &e); code != 0 {
			t.Fatalf("stop %s: %d %s", a, code, e.String())
		}
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("start exited %d: %s", code, errOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("start did not exit after its agents stopped")
	}

	// a directory that cannot be made is refused before that agent connects
	nicks := func() int { return strings.Count(strings.Join(f.Lines(), "\n"), "NICK lab-nat") }
	before := nicks()
	os.RemoveAll(filepath.Join(dir, "nat"))
	os.WriteFile(filepath.Join(dir, "nat"), []byte("a file"), 0o600)
	var o, e bytes.Buffer
	if code := run([]string{"agents", "start", "nat", "--config", cfg}, &o, &e); code != 1 ||
		!strings.Contains(e.String(), "agent nat: directory "+filepath.Join(dir, "nat")+" exists and is not a directory") {
		t.Fatalf("start with a file for a directory: %d %q %q", code, o.String(), e.String())
	}
	if n := nicks(); n != before {
		t.Fatalf("nat registered on IRC (%d NICK lines, %d before) although its directory is a file", n, before)
	}
}

// The README's map of the code names internal/ and each package in it,
// and the CLI's row names every top-level command.
func TestREADMECodeMap(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := func(folder string) string {
		m := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(folder) + "` \\|.*$").Find(readme)
		if m == nil {
			t.Fatalf("the README's map has no row for %s", folder)
		}
		return string(m)
	}
	internal := row("internal/")
	dirs, err := os.ReadDir("../../internal")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() && !strings.Contains(internal, "`internal/"+d.Name()+"`") {
			t.Errorf("the README's internal/ row does not name internal/%s", d.Name())
		}
	}
	cli := row("cmd/harness/")
	for name, cmd := range tree() {
		if !strings.Contains(name, " ") && !cmd.Hidden && !strings.Contains(cli, "`"+name) {
			t.Errorf("the README's cmd/harness/ row does not name %s", name)
		}
	}
}

// runnableRE finds the shell blocks a README marks as runnable.
var runnableRE = regexp.MustCompile("(?s)<!-- runnable -->\\s*```sh\\n(.*?)```")

// TestREADMERunnableBlocks runs every shell block marked
// `<!-- runnable -->` in the README and in each example's README, as
// written, from its README's folder (an example's in a scratch copy of the
// example and the client, which its steps install and build; issue 34:
// the README's examples did not run as documented). Each must exit 0; a block checks its own output
// (grep) where it matters.
func TestREADMERunnableBlocks(t *testing.T) {
	for _, tool := range []string{"bash", "go", "npm", "node", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed by the README's runnable blocks: %v", tool, err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "examples", "*", "README.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	t.Setenv("HARNESS_CLAUDE_BIN", claudetest.FindCLI(t))
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("TMPDIR", t.TempDir()) // the blocks' mktemp -d: removed with the test
	total := 0
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		blocks := runnableRE.FindAllSubmatch(text, -1)
		if rel == "README.md" && len(blocks) < 4 {
			t.Errorf("README.md marks %d blocks runnable, want the turn --demo block and the three install paths", len(blocks))
		}
		for i, m := range blocks {
			total++
			script := string(m[1])
			t.Run(fmt.Sprintf("%s#%d", rel, i+1), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
				cmd.Dir = filepath.Dir(file)
				if strings.HasPrefix(rel, "examples"+string(filepath.Separator)) {
					cmd.Dir = checkoutCopy(t, root, filepath.Dir(rel), filepath.Join("clients", "typescript"))
				}
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("the block failed: %v\n--- block\n%s--- output\n%s", err, script, out)
				}
			})
		}
	}
	if total == 0 {
		t.Fatal("no runnable block found")
	}
}

// TestNextjsREADMEGateway starts the gateway exactly as the Next.js
// example's README says (its token, its flags; only the port is free):
// it must come up. With the old `HARNESS_TOKEN=s3cret` it exited 2 in the
// background and the app showed only "502: gateway unreachable" (issue
// 34.1).
func TestNextjsREADMEGateway(t *testing.T) {
	readme, err := os.ReadFile("../../examples/nextjs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- nextjs-serve -->\\s*```sh\\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the example's README has no marked gateway block")
	}
	block := string(m[1])
	tok := regexp.MustCompile(`(?m)^export HARNESS_TOKEN=(\S+)`).FindAllStringSubmatch(block, -1)
	if len(tok) != 2 || tok[0][1] != tok[1][1] {
		t.Fatalf("want the same HARNESS_TOKEN exported for the gateway and the app: %q", tok)
	}
	line := regexp.MustCompile(`(?m)^\.\./\.\./bin/harness serve (.*)$`).FindStringSubmatch(block)
	if line == nil {
		t.Fatalf("no serve line in:\n%s", block)
	}
	if strings.HasSuffix(strings.TrimSpace(line[1]), "&") {
		t.Fatal("the gateway runs in the background, where a refused start goes unseen")
	}
	args := strings.Fields(strings.ReplaceAll(line[1], "127.0.0.1:7878", "127.0.0.1:0"))
	t.Setenv("HARNESS_TOKEN", tok[0][1])
	t.Setenv("HARNESS_CLAUDE_BIN", claudetest.FindCLI(t))
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	url, stop, status, errOut := startServe(t, args...)
	stop <- os.Interrupt
	if code := <-status; code != 0 {
		t.Errorf("serve %v (%s): exit %d\n%s", args, url, code, errOut.String())
	}
}

// checkoutCopy copies the folders dirs of the checkout at root (without
// node_modules, dist and .next) into a scratch checkout and returns the
// first one's copy: an example's steps (npm install rewrites its lock,
// builds write beside it) run there as written, leaving the checkout as
// it was.
func checkoutCopy(t *testing.T, root string, dirs ...string) string {
	t.Helper()
	dst := t.TempDir()
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(path string, e os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			switch {
			case e.IsDir() && (e.Name() == "node_modules" || e.Name() == "dist" || e.Name() == ".next"):
				return filepath.SkipDir
			case e.IsDir():
				return os.MkdirAll(filepath.Join(dst, rel), 0o755)
			case !e.Type().IsRegular():
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			info, _ := e.Info()
			return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dst, dirs[0])
}

// Issue 34.6: every persona the README uses ships (BUILDER did not), and
// the README says what system prompt every session gets (spec 004 §2.4):
// the base identity and the project files read into it.
func TestREADMEPersonasAndSystemPrompt(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ids := regexp.MustCompile(`(?:"persona":\s*"|persona: "|--persona |persona := "[^"]*", ")([A-Z][A-Z0-9_]{2,})`).FindAllSubmatch(readme, -1)
	if len(ids) < 3 {
		t.Fatalf("found %d persona uses in the README; the pattern is stale", len(ids))
	}
	for _, m := range ids {
		if _, err := os.Stat(filepath.Join("../../agents", "AGENT_"+string(m[1])+".md")); err != nil {
			t.Errorf("the README uses persona %s, which does not ship in agents/", m[1])
		}
	}
	text := string(readme)
	for _, want := range append([]string{"You are operating within the Chirality Command", "Every session gets a system prompt",
		fmt.Sprintf("first %d KB", persona.ContextFileCap/1024), ".chirality/prompts/<sessionId>-system.txt"}, persona.ContextFiles...) {
		if !strings.Contains(text, want) {
			t.Errorf("the README's account of the system prompt lacks %q", want)
		}
	}
}
