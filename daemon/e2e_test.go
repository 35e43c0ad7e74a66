package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/acp/acptest"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/ipc"
	"github.com/chirality/harness/irc"
	"github.com/chirality/harness/irc/irctest"
)

// These tests run whole agents: a real IRC server (ngircd), the daemon,
// the harness core, the real Claude Code CLI and the native loop against
// fake Messages APIs, and the harness binary as the agents' skill CLI.

var harnessBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// buildHarness builds cmd/harness into a temp dir once per test binary.
func buildHarness(t *testing.T) string {
	t.Helper()
	harnessBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "harness-bin")
		if err != nil {
			harnessBin.err = err
			return
		}
		harnessBin.dir = dir
		harnessBin.path = filepath.Join(dir, "harness")
		out, err := exec.Command("go", "build", "-o", harnessBin.path, "github.com/chirality/harness/cmd/harness").CombinedOutput()
		if err != nil {
			harnessBin.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if harnessBin.err != nil {
		t.Fatal(harnessBin.err)
	}
	return harnessBin.path
}

func removeHarnessBin() {
	if harnessBin.dir != "" {
		os.RemoveAll(harnessBin.dir)
	}
}

// e2e is one IRC server with a person (bob) in #dev, and the agents.
type e2e struct {
	t      *testing.T
	srv    *irctest.Ngircd
	bin    string
	home   string
	bob    *irc.Client
	bobGot chan irc.Message
	host   string
	port   string
}

func newE2E(t *testing.T) *e2e {
	t.Helper()
	bin := buildHarness(t)
	t.Setenv("XDG_RUNTIME_DIR", shortTemp(t))
	srv := irctest.StartNgircd(t)
	e := &e2e{t: t, srv: srv, bin: bin, home: t.TempDir()}
	e.host, e.port, _ = strings.Cut(srv.Addr(), ":")
	e.bob, e.bobGot = human(t, srv.Addr(), "bob", "#dev")
	return e
}

// start runs one agent's daemon on the core with the fake API.
func (e *e2e) start(cfgYAML string, nick string, api *claudetest.FakeAPI, tweak func(*Options)) *Daemon {
	e.t.Helper()
	cfg, err := ParseConfig([]byte(cfgYAML), "")
	if err != nil {
		e.t.Fatal(err)
	}
	sel, err := cfg.Select([]string{nick})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.MkdirAll(sel[0].Directory, 0o755); err != nil {
		e.t.Fatal(err)
	}
	if _, err := InstallSkill(cfg, sel[0]); err != nil {
		e.t.Fatal(err)
	}
	logger := zerolog.New(zerolog.ConsoleWriter{Out: testLog{e.t}, NoColor: true}).Level(zerolog.InfoLevel)
	opts := Options{Config: cfg, Agent: sel[0], MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Logger: &logger,
		Core: CoreOptions{
			HarnessBinary: e.bin,
			StateDir:      e.t.TempDir(),
			ClaudeBinary:  claudetest.FindCLI(e.t),
			Env:           claudetest.BaseEnv(e.home),
			ChildEnv:      api.Env(),
			TurnTimeout:   60 * time.Second,
		}}
	if tweak != nil {
		tweak(&opts)
	}
	d, err := New(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := d.Start(ctxT(e.t, 30*time.Second)); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { d.Stop(context.Background()) })
	return d
}

func (e *e2e) config(supervisor string, agents ...string) string {
	s := "server: {name: lab, host: " + e.host + ", port: " + e.port + "}\n"
	if supervisor != "" {
		s += "supervisor: " + supervisor + "\n"
	}
	s += "agents:\n"
	for _, a := range agents {
		s += "  - " + a + "\n"
	}
	return s
}

// sees waits for a message in #dev from sender whose text matches.
func (e *e2e) sees(sender string, re string) irc.Message {
	e.t.Helper()
	rx := regexp.MustCompile(re)
	// 180 s: OpenCode alone takes 50–70 s to its first answer on a loaded
	// 2-core machine, and more with other agents' tests beside it
	deadline := time.After(180 * time.Second)
	for {
		select {
		case m := <-e.bobGot:
			if m.Sender == sender && rx.MatchString(m.Text) {
				return m
			}
		case <-deadline:
			var seen []string
			for _, m := range e.bob.Read("#dev", 10) {
				seen = append(seen, "<"+m.Sender+"> "+m.Text[:min(len(m.Text), 200)])
			}
			e.t.Fatalf("bob never saw %s say /%s/; the channel's last lines:\n%s", sender, re, strings.Join(seen, "\n"))
		}
	}
}

func newAPI(t *testing.T) *claudetest.FakeAPI {
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	return api
}

// promptSeen reports whether a request of api carried prompt as one of
// its user text blocks, exactly.
func promptSeen(api *claudetest.FakeAPI, prompt string) bool {
	for _, r := range api.Requests() {
		for _, m := range r.Messages {
			if m.Role != "user" {
				continue
			}
			for _, c := range m.Content {
				if c.Type == "text" && c.Text == prompt {
					return true
				}
			}
		}
	}
	return false
}

var mentionRE = regexp.MustCompile(`\[IRC @mention in (#\S+)\] <(\S+)> (.*)$`)

// mentionOf is the mention a conversation request answers: the last user
// text that is a mention prompt.
func mentionOf(r *claudetest.Request) (channel, sender, text string, ok bool) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		for _, c := range r.Messages[i].Content {
			if c.Type == "text" {
				if m := mentionRE.FindStringSubmatch(c.Text); m != nil {
					return m[1], m[2], m[3], true
				}
			}
		}
	}
	return "", "", "", false
}

// toolResultsSinceLastPrompt counts the tool results after the last
// mention prompt.
func toolResultsSinceLastPrompt(r *claudetest.Request) int {
	n := 0
	for i := len(r.Messages) - 1; i >= 0; i-- {
		for _, c := range r.Messages[i].Content {
			if c.Type == "text" && mentionRE.MatchString(c.Text) {
				return n
			}
			if c.Type == "tool_result" {
				n++
			}
		}
	}
	return n
}

// claudeAgent answers a mention by running the skill CLI through Bash,
// then says "posted". Supervisor evaluations get verdict().
func claudeAgent(verdict func() string) func(*claudetest.Request) claudetest.Reply {
	return func(r *claudetest.Request) claudetest.Reply {
		last := r.LastUserText()
		if strings.Contains(last, "verdict") && verdict != nil {
			return claudetest.TextReply(verdict())
		}
		ch, sender, text, ok := mentionOf(r)
		if !ok || len(r.Tools) == 0 {
			return claudetest.TextReply("OK")
		}
		if toolResultsSinceLastPrompt(r) == 0 {
			answer := sender + ": re " + strings.TrimPrefix(text, "@lab-alice ") + " -> 4"
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", "Bash", map[string]any{
				"command": "harness channel send '" + ch + "' '" + answer + "'", "description": "answer on IRC"})}}
		}
		return claudetest.TextReply("posted")
	}
}

func TestE2ETwoAgentsInOneChannel(t *testing.T) {
	e := newE2E(t)
	apiC, apiN := newAPI(t), newAPI(t)
	apiC.SetResponder(claudeAgent(nil))
	var nmu sync.Mutex
	apiN.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		_, sender, text, _ := mentionOf(r)
		reply := claudetest.TextReply(sender + ": answer to " + strings.TrimPrefix(text, "@lab-nat "))
		nmu.Lock()
		defer nmu.Unlock()
		if strings.Contains(text, "q1") {
			reply.Delay = 300 * time.Millisecond // q2 and q3 queue behind it
		}
		return reply
	})
	dir := t.TempDir()
	cfg := e.config("", `{nick: alice, agent: claude, directory: `+dir+`/alice, channels: ["#dev"]}`,
		`{nick: nat, agent: anthropic, directory: `+dir+`/nat, channels: ["#dev"]}`)
	e.start(cfg, "alice", apiC, nil)
	e.start(cfg, "nat", apiN, nil)

	// the claude agent: the mention becomes the exact prompt; the answer
	// reaches the channel through the skill CLI (Bash → harness channel send)
	if err := e.bob.Send("#dev", "@lab-alice what is 2+2? <be brief>"); err != nil {
		t.Fatal(err)
	}
	e.sees("lab-alice", `^bob: re what is 2\+2\? <be brief> -> 4$`)
	if want := "[IRC @mention in #dev] <bob> @lab-alice what is 2+2? <be brief>"; !promptSeen(apiC, want) {
		t.Fatalf("the claude agent's API never got the prompt %q", want)
	}
	if r := apiC.Requests(); len(r) == 0 || !skillLoaded(string(r[len(r)-1].Body)) {
		t.Fatalf("Claude Code did not load the skill from %s", SkillDirs[KindClaude])
	}

	// the native agent has no shell: the daemon relays its final answer
	if err := e.bob.Send("#dev", "@lab-nat hello"); err != nil {
		t.Fatal(err)
	}
	e.sees("lab-nat", `^bob: answer to hello$`)
	if want := "[IRC @mention in #dev] <bob> @lab-nat hello"; !promptSeen(apiN, want) {
		t.Fatalf("the native agent's API never got the prompt %q", want)
	}

	// queued mentions are answered in order
	for _, q := range []string{"q1", "q2", "q3"} {
		if err := e.bob.Send("#dev", "@lab-nat "+q); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"q1", "q2", "q3"} {
		if m := e.sees("lab-nat", `^bob: answer to q\d$`); m.Text != "bob: answer to "+q {
			t.Fatalf("out of order: got %q, want the answer to %s", m.Text, q)
		}
	}
	// the claude agent posted itself: its "posted" was not relayed
	for _, m := range e.bob.Read("#dev", 0) {
		if m.Sender == "lab-alice" && m.Text == "posted" {
			t.Fatal("the daemon relayed an answer the agent had posted itself")
		}
	}
}

// The supervisor's verdicts come from a scripted fake model: a
// CORRECTION reaches the agent on its next skill-CLI call (on the
// command's stderr, in the tool result), and three failed corrections
// escalate to the webhook while the runner keeps running.
func TestE2ESupervisor(t *testing.T) {
	e := newE2E(t)
	api := newAPI(t)
	var evals sync.Mutex
	n := 0
	api.SetResponder(claudeAgent(func() string {
		evals.Lock()
		defer evals.Unlock()
		n++
		return "CORRECTION stop guessing and read the file first"
	}))
	hooks := make(chan Escalation, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var esc Escalation
		json.NewDecoder(r.Body).Decode(&esc)
		hooks <- esc
	}))
	defer hook.Close()
	dir := t.TempDir()
	cfg := e.config(`{agent: anthropic, window_size: 20, eval_interval: 1, escalation_threshold: 3, webhook: `+hook.URL+`}`,
		`{nick: alice, agent: claude, directory: `+dir+`/alice, channels: ["#dev"]}`)
	d := e.start(cfg, "alice", api, nil)

	// every turn is observed and evaluated (eval_interval 1); the model
	// always corrects, so after three corrections the supervisor escalates
	var esc *Escalation
	for i := 1; i <= 8 && esc == nil; i++ {
		e.bob.Send("#dev", fmt.Sprintf("@lab-alice task %d", i))
		e.sees("lab-alice", fmt.Sprintf(`^bob: re task %d -> 4$`, i))
		select {
		case got := <-hooks:
			esc = &got
		case <-time.After(3 * time.Second): // evaluations run beside the turns
		}
	}
	if esc == nil {
		evals.Lock()
		t.Fatalf("no escalation reached the webhook after 8 turns (%d evaluations)", n)
	}
	if esc.Nick != "alice" || !strings.Contains(esc.Message, "stop guessing") {
		t.Fatalf("escalation: %+v", esc)
	}
	if st := d.Status(); !st.Running || !st.SupervisorPaused {
		t.Fatalf("after the escalation: %+v", st)
	}
	// the corrections reach the agent on its next skill-CLI call's stderr
	// (the whispers wait for it), which it reads in its tool result
	e.bob.Send("#dev", "@lab-alice one more")
	e.sees("lab-alice", `^bob: re one more -> 4$`)
	found := false
	for _, r := range api.Requests() {
		for _, tr := range r.ToolResults() {
			if strings.Contains(tr.Content, "[supervisor CORRECTION] stop guessing and read the file first") {
				found = true
			}
		}
	}
	if !found {
		t.Fatal("the agent never saw the supervisor's correction on the skill CLI's stderr")
	}
	if st := d.Status(); !st.Running {
		t.Fatalf("runner stopped: %+v", st)
	}
}

// A crash loop: the agent's process dies on every start; three crashes
// within 300 s (a fake clock that never moves) open the breaker, and the
// channel is told.
func TestE2ECrashLoopOpensBreaker(t *testing.T) {
	e := newE2E(t)
	api := newAPI(t)
	crasher := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(crasher, []byte("#!/bin/sh\necho 'simulated crash' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	cfg := e.config("", `{nick: alice, agent: claude, directory: `+dir+`/alice, channels: ["#dev"]}`)
	d := e.start(cfg, "alice", api, func(o *Options) {
		o.Core.ClaudeBinary = crasher
		o.Core.Now = func() time.Time { return now }
	})
	e.bob.Send("#dev", "@lab-alice do something")
	e.sees("lab-alice", `^\[error\] lab-alice stopped restarting after repeated crashes`)
	st := d.Status()
	if !st.CircuitOpen || st.Activity != "paused" {
		t.Fatalf("status: %+v", st)
	}
	// a mention now is kept, not prompted, and the daemon is alive
	c, err := ipc.Dial(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, _, err := c.Call(context.Background(), ipc.Request{Type: ipc.CmdStatus})
	if err != nil || !resp.OK || !strings.Contains(string(resp.Data), `"circuit_open":true`) {
		t.Fatalf("status over IPC: %+v %v", resp, err)
	}
}

// An ACP agent (agent: acp, acp_command) on IRC: the fake ACP agent
// echoes its prompt and has no skill CLI call, so the daemon relays it.
func TestE2EACPAgent(t *testing.T) {
	e := newE2E(t)
	api := newAPI(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := e.config("", `{nick: oc, agent: acp, acp_command: "`+self+`", directory: `+dir+`/oc, channels: ["#dev"]}`)
	d := e.start(cfg, "oc", api, func(o *Options) {
		o.Core.ChildEnv = append(o.Core.ChildEnv, acptest.AgentEnv)
	})
	if d.Status().Engine != "acp-oc" {
		t.Fatalf("engine %q", d.Status().Engine)
	}
	// the fake agent echoes its prompt (the harness puts the persona's
	// instructions first); it has no skill call, so the daemon relays it
	e.bob.Send("#dev", "@lab-oc hi there")
	e.sees("lab-oc", `^echo: `)
	e.sees("lab-oc", `\| \[IRC @mention in #dev\] <bob> @lab-oc hi there$`)
	events, _ := filepath.Glob(filepath.Join(dir, "oc", ".chirality", "sessions", "*.events.jsonl"))
	if len(events) != 1 {
		t.Fatalf("event logs: %v", events)
	}
	b, _ := os.ReadFile(events[0])
	if want, _ := json.Marshal("[IRC @mention in #dev] <bob> @lab-oc hi there"); !strings.Contains(string(b), `"type":"user:message"`) ||
		!strings.Contains(string(b), string(want)) {
		t.Fatalf("the prompt was not %s:\n%s", want, b[:min(len(b), 2000)])
	}

}
