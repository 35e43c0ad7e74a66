package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
)

// agentRun is one `harness agent serve` run in process.
type agentRun struct {
	url, session string
	out          *lockedBuffer
	cancel       context.CancelFunc
	done         chan int
}

var sessionLine = regexp.MustCompile(`harness agent: session ([0-9a-f-]{36}) `)

func startAgentServe(t *testing.T, args ...string) *agentRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := &agentRun{out: &lockedBuffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		a.done <- agentServe(ctx, nil, append([]string{"--addr", "127.0.0.1:0"}, args...), a.out, a.out)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, after, ok := strings.Cut(a.out.String(), "listening on "); ok {
			a.url = strings.TrimSpace(strings.SplitN(after, "\n", 2)[0])
			break
		}
		select {
		case code := <-a.done:
			t.Fatalf("agent serve exited %d: %s", code, a.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ready line: %s", a.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	m := sessionLine.FindStringSubmatch(a.out.String())
	if m == nil {
		t.Fatalf("no session line: %s", a.out.String())
	}
	a.session = m[1]
	t.Cleanup(func() { a.stop(t) })
	return a
}

func (a *agentRun) stop(t *testing.T) {
	t.Helper()
	if a.cancel == nil {
		return
	}
	a.cancel()
	a.cancel = nil
	select {
	case code := <-a.done:
		if code != 0 {
			t.Errorf("agent serve exited %d: %s", code, a.out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent serve did not stop")
	}
}

// turn posts a prompt and reads /events (from after) to the turn's end,
// returning the events' types and contents.
func (a *agentRun) turn(t *testing.T, prompt string) []string {
	t.Helper()
	resp, err := http.Get(a.url + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := json.Marshal(map[string]string{"content": prompt})
	if r, err := http.Post(a.url+"/prompt", "application/json", bytes.NewReader(b)); err != nil || r.StatusCode != 200 {
		t.Fatalf("prompt: %v %v", r, err)
	} else {
		r.Body.Close()
	}
	var seen []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct{ Type, Content, State, Message string }
		json.Unmarshal([]byte(line), &ev)
		seen = append(seen, ev.Type+":"+ev.Content+ev.State)
		if ev.Type == "status" && ev.State == "error" {
			t.Fatalf("turn failed: %s", ev.Message)
		}
		if ev.Type == "status" && ev.State == "idle" && strings.Contains(strings.Join(seen, "\n"), "user:"+prompt) {
			return seen
		}
	}
	t.Fatalf("the stream ended: %q", seen)
	return nil
}

// `agent serve` makes a session with --persona, whose prompt reaches the
// model; a restart with --session continues it (the model gets the first
// turn, /events replays both).
// fakeAPIEnv points the agents of this process's commands at a fake
// Messages API (closed at the test's end) with a scratch state directory.
func fakeAPIEnv(t *testing.T) *claudetest.FakeAPI {
	t.Helper()
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	t.Setenv("ANTHROPIC_BASE_URL", api.URL)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-fake-for-tests")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	return api
}

func TestAgentServeSessionPersonaAndRestart(t *testing.T) {
	api := fakeAPIEnv(t)
	cwd := t.TempDir()
	os.MkdirAll(filepath.Join(cwd, "agents"), 0o755)
	os.WriteFile(filepath.Join(cwd, "agents", "AGENT_REVIEWER.md"), []byte("---\ndescription: reviews\n---\nYou are the REVIEWER. Codeword: QUINCE.\n"), 0o644)

	a := startAgentServe(t, "--cwd", cwd, "--persona", "REVIEWER", "--engine", "anthropic", "--warm", "0")
	a.turn(t, "remember the word PLUM")
	a.stop(t)
	if _, err := os.Stat(filepath.Join(cwd, ".chirality", "sessions", a.session+".json")); err != nil {
		t.Fatalf("the session is not in the project's .chirality: %v", err)
	}

	b := startAgentServe(t, "--cwd", cwd, "--session", a.session)
	if b.session != a.session {
		t.Fatalf("--session %s served %s", a.session, b.session)
	}
	seen := b.turn(t, "which word?")
	if j := strings.Join(seen, "\n"); !strings.Contains(j, "user:remember the word PLUM") || !strings.Contains(j, "user:which word?") {
		t.Fatalf("the stream does not replay both turns: %q", seen)
	}
	var last *claudetest.Request
	for _, r := range api.Requests() {
		if strings.Contains(r.LastUserText(), "which word?") {
			last = r
		}
	}
	if last == nil || !strings.Contains(string(last.Body), "PLUM") {
		t.Fatalf("the continued session's request lacks the first turn: %v", last)
	}
	if !strings.Contains(last.SystemText(), "Codeword: QUINCE") {
		t.Fatalf("the persona's prompt did not reach the model: %q", last.SystemText())
	}
}

// Usage errors exit 2 and say what is wrong; tui's messages never name a
// flag tui lacks.
func TestAgentServeAndTUIUsageErrors(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	cwd := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "serve", "--cwd", cwd, "--engine", "foo"}, `--engine "foo": want one of`},
		{[]string{"agent", "serve", "--cwd", cwd, "--session", "8f0c6d3e-1f2a-4b5c-9d8e-7f6a5b4c3d2e", "--persona", "X"}, "--persona is for a new session"},
		{[]string{"agent", "serve", "--cwd", cwd, "--mode", "bogus"}, `--mode "bogus"`},
		{[]string{"agent", "serve", "--cwd", cwd, "--addr", "0.0.0.0:0"}, "--token"},
		{[]string{"tui", "--cwd", cwd, "--engine", "foo"}, `--engine "foo": want one of`},
		{[]string{"agent", "serve", "--cwd", cwd, "--isolation", "container"}, `--isolation "container": want worktree`},
		{[]string{"agent", "serve", "--cwd", cwd, "--base", "main"}, "--base and --branch need --isolation worktree"},
		{[]string{"agent", "serve", "--cwd", cwd, "--isolation", "worktree"}, "not in a git repository"},
		{[]string{"agent", "serve", "--cwd", cwd, "--session", "8f0c6d3e-1f2a-4b5c-9d8e-7f6a5b4c3d2e", "--isolation", "worktree"}, "--isolation is for a new session"},
		{[]string{"tui", "--cwd", cwd, "--isolation", "worktree"}, "not in a git repository"},
	} {
		var out, errOut bytes.Buffer
		code := run(c.args, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, errOut.String(), c.want)
		}
		if c.args[0] == "tui" && strings.Contains(errOut.String(), "--engines") {
			t.Errorf("tui names --engines, which it lacks: %q", errOut.String())
		}
	}
	var out bytes.Buffer
	run([]string{"tui", "--help"}, &out, &out)
	if strings.Contains(out.String(), "--engines") || strings.Contains(out.String(), "-engines") {
		t.Errorf("tui --help names --engines:\n%s", out.String())
	}
}

// SIGTERM mid-turn: `agent serve` stops, exit 0, and leaves no process
// behind (none works in the project any more).
func TestAgentServeStopsOnSIGTERM(t *testing.T) {
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "agent", "serve", "--demo", "--engine", "claude-code", "--addr", "127.0.0.1:0", "--cwd", cwd)
	cmd.Env = append(claudetest.ScratchEnv(t), "HARNESS_TEST_MAIN=1", "HARNESS_CLAUDE_BIN="+claudetest.FindCLI(t), "XDG_STATE_HOME="+t.TempDir())
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	url := ""
	deadline := time.Now().Add(30 * time.Second)
	for url == "" {
		if _, after, ok := strings.Cut(out.String(), "listening on "); ok {
			url = strings.TrimSpace(strings.SplitN(after, "\n", 2)[0])
		} else if time.Now().After(deadline) {
			t.Fatalf("no ready line: %s", out.String())
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	resp, err := http.Get(url + "/events?deltas=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if r, err := http.Post(url+"/prompt", "application/json", strings.NewReader(`{"content":"a long one please"}`)); err != nil || r.StatusCode != 200 {
		t.Fatalf("prompt: %v %v", r, err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), `"type":"text_delta"`) {
	}
	if len(processesIn(cwd)) == 0 {
		t.Fatalf("no agent process works in %s mid-turn", cwd)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("agent serve after SIGTERM: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("agent serve did not stop on SIGTERM:\n%s", out.String())
	}
	if left := processesIn(cwd); len(left) > 0 {
		t.Fatalf("processes left in the project: %v", left)
	}
}

// processesIn lists the processes whose working directory is dir.
func processesIn(dir string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}

// `harness agent serve` and the TUI's embedded server refuse what a page
// in the user's browser can send — a foreign Origin, a text/plain POST —
// on /prompt and /cancel, and run nothing; the embedded server also
// wants the token only the TUI has.
func TestAgentDoorsRefuseAHostilePage(t *testing.T) {
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	t.Setenv("ANTHROPIC_BASE_URL", api.URL)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-fake-for-tests")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	served := startAgentServe(t, "--cwd", t.TempDir(), "--engine", "anthropic", "--warm", "0")

	cwd := t.TempDir()
	o := agentOptions{cwd: cwd, engine: "anthropic", mode: "workbench"}
	emb, err := startEmbeddedAgent(o)
	if err != nil {
		t.Fatal(err)
	}
	defer emb.stop()
	if len(emb.token) < 32 || !strings.HasPrefix(emb.url, "http://127.0.0.1:") {
		t.Fatalf("embedded server at %s with token %q", emb.url, emb.token)
	}
	other, err := startEmbeddedAgent(o)
	if err != nil {
		t.Fatal(err)
	}
	if other.token == emb.token {
		t.Fatal("two embedded servers share a token")
	}
	other.stop()

	for _, door := range []struct{ name, url, token string }{{"agent serve", served.url, ""}, {"tui's embedded server", emb.url, emb.token}} {
		bearer := ""
		if door.token != "" {
			bearer = "Bearer " + door.token
		}
		for _, path := range []string{"/prompt", "/cancel"} {
			for _, c := range []struct {
				origin, ct, auth string
				want             int
			}{
				{"https://evil.example", "text/plain", "", 403},
				{"https://evil.example", "application/json", bearer, 403},
				{"", "text/plain", bearer, 415},
				{"", "application/x-www-form-urlencoded", bearer, 415},
			} {
				req, _ := http.NewRequest("POST", door.url+path, strings.NewReader(`{"content":"touch pwned"}`))
				req.Header.Set("Content-Type", c.ct)
				if c.origin != "" {
					req.Header.Set("Origin", c.origin)
				}
				if c.auth != "" {
					req.Header.Set("Authorization", c.auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != c.want {
					t.Errorf("%s %s %+v: %d, want %d", door.name, path, c, resp.StatusCode, c.want)
				}
			}
		}
	}
	resp, err := http.Post(emb.url+"/prompt", "application/json", strings.NewReader(`{"content":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("embedded server without its token: %d, want 401", resp.StatusCode)
	}
	if n := len(api.Requests()); n != 0 {
		t.Fatalf("%d model requests: an attack ran", n)
	}
	for _, dir := range []string{cwd} {
		logs, _ := filepath.Glob(filepath.Join(dir, ".chirality", "sessions", "*.jsonl"))
		for _, l := range logs {
			if b, _ := os.ReadFile(l); len(b) > 0 {
				t.Fatalf("events were stored: %s", b)
			}
		}
	}
}
