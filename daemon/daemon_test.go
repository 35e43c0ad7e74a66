package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/chirality/harness/ipc"
	"github.com/chirality/harness/irc"
	"github.com/chirality/harness/irc/irctest"
	"github.com/chirality/harness/runner"
)

func TestMain(m *testing.M) {
	if code := dispatchFakeChild(); code >= 0 {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		removeHarnessBin()
		os.Exit(code)
	}))
}

// fakeAgent records what the daemon does to it.
type fakeAgent struct {
	mu          sync.Mutex
	prompts     []string
	paused      bool
	refuse      error // SendPrompt's error when set
	stopped     bool
	compacts    int
	clears      int
	onMsg       func(runner.Message)
	onStart     func(runner.TurnStart)
	onEnd       func(runner.TurnEnd)
	promptAdded chan string
	working     bool      // Status's Working and Activity "working"
	last        time.Time // Status's LastActivation
}

func newFakeAgent() *fakeAgent { return &fakeAgent{promptAdded: make(chan string, 100)} }

func (f *fakeAgent) Start(context.Context, string) error { return nil }
func (f *fakeAgent) Stop(context.Context) error {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	return nil
}
func (f *fakeAgent) SendPrompt(text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.paused {
		return runner.ErrPaused
	}
	if f.refuse != nil {
		return f.refuse
	}
	f.prompts = append(f.prompts, text)
	f.promptAdded <- text
	return nil
}
func (f *fakeAgent) Pause()  { f.mu.Lock(); f.paused = true; f.mu.Unlock() }
func (f *fakeAgent) Resume() { f.mu.Lock(); f.paused = false; f.mu.Unlock() }
func (f *fakeAgent) Status() runner.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := runner.Status{Running: !f.stopped, Paused: f.paused, TurnCount: len(f.prompts), Activity: "idle",
		Working: f.working, LastActivation: f.last}
	if f.working {
		st.Activity = "working"
	}
	if f.paused {
		st.Activity = "paused"
	}
	return st
}
func (f *fakeAgent) OnMessage(fn func(runner.Message))     { f.onMsg = fn }
func (f *fakeAgent) OnTurnStart(fn func(runner.TurnStart)) { f.onStart = fn }
func (f *fakeAgent) OnTurnEnd(fn func(runner.TurnEnd))     { f.onEnd = fn }
func (f *fakeAgent) Compact(context.Context) error {
	f.mu.Lock()
	f.compacts++
	f.mu.Unlock()
	return nil
}
func (f *fakeAgent) Clear(context.Context) error {
	f.mu.Lock()
	f.clears++
	f.mu.Unlock()
	return nil
}

type fakeSup struct {
	mu        sync.Mutex
	observed  []runner.Message
	whisper   func(string, string)
	escalate  func(string)
	paused    bool
	resumed   int
	stoppedAt time.Time
}

func (s *fakeSup) Start(context.Context) error { return nil }
func (s *fakeSup) Stop(context.Context) error {
	s.mu.Lock()
	s.stoppedAt = time.Now()
	s.mu.Unlock()
	return nil
}
func (s *fakeSup) Observe(m runner.Message) {
	s.mu.Lock()
	s.observed = append(s.observed, m)
	s.mu.Unlock()
}
func (s *fakeSup) OnWhisper(fn func(string, string)) { s.whisper = fn }
func (s *fakeSup) OnEscalation(fn func(string)) {
	s.escalate = func(m string) {
		s.mu.Lock()
		s.paused = true
		s.mu.Unlock()
		fn(m)
	}
}
func (s *fakeSup) Resume() {
	s.mu.Lock()
	s.paused = false
	s.resumed++
	s.mu.Unlock()
}
func (s *fakeSup) Paused() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.paused }

type rig struct {
	t      *testing.T
	d      *Daemon
	agent  *fakeAgent
	sup    *fakeSup
	hooks  Hooks
	bob    *irc.Client
	bobGot chan irc.Message
	hookCh chan Escalation
	addr   string
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func newRig(t *testing.T, addr string) *rig {
	t.Helper()
	t.Setenv("XDG_RUNTIME_DIR", shortTemp(t))
	r := &rig{t: t, agent: newFakeAgent(), sup: &fakeSup{}, hookCh: make(chan Escalation, 10), addr: addr}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var e Escalation
		b, _ := io.ReadAll(req.Body)
		if err := json.Unmarshal(b, &e); err != nil || req.Header.Get("Content-Type") != "application/json" {
			t.Errorf("webhook body %q: %v", b, err)
		}
		r.hookCh <- e
	}))
	t.Cleanup(hook.Close)
	host, port, _ := strings.Cut(addr, ":")
	cfgText := "server: {name: lab, host: " + host + ", port: " + port + "}\n" +
		"supervisor: {agent: anthropic, webhook: " + hook.URL + "}\n" +
		"agents:\n  - {nick: alice, agent: claude, directory: " + t.TempDir() + ", channels: [\"#dev\"], tags: [backend]}\n"
	cfg, err := ParseConfig([]byte(cfgText), "")
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{Config: cfg, Agent: cfg.Agents[0], MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		NewAgent: func(h Hooks) (Agent, Supervisor, error) { r.hooks = h; return r.agent, r.sup, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctxT(t, 15*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(context.Background()) })
	r.d = d
	r.bob, r.bobGot = human(t, addr, "bob", "#dev")
	return r
}

// shortTemp is a temp dir with a short path (Unix socket paths are
// limited to 108 bytes).
func shortTemp(t testing.TB) string {
	dir, err := os.MkdirTemp("", "hd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func human(t testing.TB, addr, nick string, chans ...string) (*irc.Client, chan irc.Message) {
	t.Helper()
	c, err := irc.New(irc.Config{Addr: addr, Nick: nick, Channels: chans, MinBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan irc.Message, 100)
	c.OnMessage(func(m irc.Message) { got <- m })
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := ctxT(t, 10*time.Second)
	for _, ch := range chans {
		if err := c.WaitJoined(ctx, ch); err != nil {
			t.Fatal(err)
		}
	}
	return c, got
}

func (r *rig) call(req ipc.Request) (ipc.Response, []ipc.Whisper) {
	r.t.Helper()
	c, err := ipc.Dial(ctxT(r.t, 5*time.Second), "alice")
	if err != nil {
		r.t.Fatal(err)
	}
	defer c.Close()
	resp, w, err := c.Call(ctxT(r.t, 20*time.Second), req)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp, w
}

// alert is the next webhook post.
func (r *rig) alert() Alert {
	r.t.Helper()
	select {
	case e := <-r.hookCh:
		return e
	case <-time.After(10 * time.Second):
		r.t.Fatal("the webhook was not posted to")
	}
	return Alert{}
}

func (r *rig) bobSees(want string) irc.Message {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-r.bobGot:
			if strings.Contains(m.Text, want) {
				return m
			}
		case <-deadline:
			r.t.Fatalf("bob never saw %q", want)
		}
	}
}

func (r *rig) nextPrompt() string {
	r.t.Helper()
	select {
	case p := <-r.agent.promptAdded:
		return p
	case <-time.After(10 * time.Second):
		r.t.Fatal("no prompt")
	}
	return ""
}

func TestMentionBecomesPrompt(t *testing.T) {
	r := newRig(t, irctest.StartNgircd(t).Addr())
	if err := r.bob.Send("#dev", "no mention here"); err != nil {
		t.Fatal(err)
	}
	if err := r.bob.Send("#dev", "@lab-alice please <b>review</b> PR #12 @lab-alice"); err != nil {
		t.Fatal(err)
	}
	if got, want := r.nextPrompt(), "[IRC @mention in #dev] <bob> @lab-alice please <b>review</b> PR #12 @lab-alice"; got != want {
		t.Fatalf("prompt\n got %q\nwant %q", got, want)
	}
	// queued mentions arrive in order
	for _, m := range []string{"@lab-alice one", "@lab-alice two", "@lab-alice three"} {
		if err := r.bob.Send("#dev", m); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"one", "two", "three"} {
		if got := r.nextPrompt(); !strings.HasSuffix(got, "@lab-alice "+want) {
			t.Fatalf("out of order: %q", got)
		}
	}
	r.agent.mu.Lock()
	n := len(r.agent.prompts)
	r.agent.mu.Unlock()
	if n != 4 {
		t.Fatalf("%d prompts, the unmentioned line was prompted", n)
	}
}

// TestRefusedMentionsAreTold: mentions the agent cannot take (its queue
// full) are not lost silently: after RefusedDelay one line in the
// channel names their senders and why.
func TestRefusedMentionsAreTold(t *testing.T) {
	old := RefusedDelay
	RefusedDelay = 5 * time.Second // room for all three under load
	t.Cleanup(func() { RefusedDelay = old })
	srv := irctest.StartNgircd(t)
	r := newRig(t, srv.Addr())
	carol, _ := human(t, srv.Addr(), "carol", "#dev")
	r.agent.mu.Lock()
	r.agent.refuse = runner.ErrQueueFull
	r.agent.mu.Unlock()
	for _, m := range []struct {
		c    *irc.Client
		text string
	}{{r.bob, "@lab-alice one"}, {carol, "@lab-alice two"}, {r.bob, "@lab-alice three"}} {
		if err := m.c.Send("#dev", m.text); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m := <-r.bobGot:
			if m.Sender != "lab-alice" {
				continue
			}
			if !regexp.MustCompile(`^(bob, carol|carol, bob): 3 mentions were not taken by lab-alice \(\d+ mentions wait already\); ask again later$`).MatchString(m.Text) {
				t.Fatalf("told %q", m.Text)
			}
			return
		case <-deadline:
			t.Fatal("the senders of refused mentions were never told")
		}
	}
}

func TestPausedMentionsKeptNotPrompted(t *testing.T) {
	r := newRig(t, irctest.StartNgircd(t).Addr())
	if resp, _ := r.call(ipc.Request{Type: ipc.CmdPause}); !resp.OK || !strings.Contains(string(resp.Data), `"paused":true`) {
		t.Fatalf("pause: %+v", resp)
	}
	if err := r.bob.Send("#dev", "@lab-alice while you sleep"); err != nil {
		t.Fatal(err)
	}
	// the mention is readable in the buffer...
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, _ := r.call(ipc.Request{Type: ipc.CmdIRCRead, Channel: "#dev"})
		if strings.Contains(string(resp.Data), "while you sleep") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mention not in the buffer: %s", resp.Data)
		}
		time.Sleep(10 * time.Millisecond) // poll the buffer
	}
	// ...and not prompted
	select {
	case p := <-r.agent.promptAdded:
		t.Fatalf("prompted while paused: %q", p)
	default:
	}
	r.call(ipc.Request{Type: ipc.CmdResume})
	if err := r.bob.Send("#dev", "@lab-alice awake?"); err != nil {
		t.Fatal(err)
	}
	if got := r.nextPrompt(); !strings.HasSuffix(got, "awake?") {
		t.Fatalf("got %q", got)
	}
}

func TestEveryIPCCommand(t *testing.T) {
	r := newRig(t, irctest.StartNgircd(t).Addr())
	ok := func(req ipc.Request) json.RawMessage {
		t.Helper()
		resp, _ := r.call(req)
		if !resp.OK || resp.Type != "response" || resp.ID == "" {
			t.Fatalf("%s: %+v", req.Type, resp)
		}
		return resp.Data
	}
	fail := func(req ipc.Request, want string) {
		t.Helper()
		resp, _ := r.call(req)
		if resp.OK || !strings.Contains(resp.Error, want) {
			t.Fatalf("%s: want error %q, got %+v", req.Type, want, resp)
		}
	}

	ok(ipc.Request{Type: ipc.CmdIRCSend, Channel: "#dev", Message: "hello from alice\nline two"})
	r.bobSees("hello from alice")
	r.bobSees("line two")
	fail(ipc.Request{Type: ipc.CmdIRCSend, Channel: "#a b", Message: "x"}, "invalid")
	fail(ipc.Request{Type: ipc.CmdIRCSend, Channel: "#dev"}, "needs \"message\"")
	fail(ipc.Request{Type: ipc.CmdIRCSend, Channel: "#dev", Message: "\n"}, "empty message")

	r.bob.Send("#dev", "a line for the buffer")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(string(ok(ipc.Request{Type: ipc.CmdIRCRead, Channel: "#dev", Limit: 5})), "a line for the buffer") {
		if time.Now().After(deadline) {
			t.Fatal("irc_read never showed the line")
		}
		time.Sleep(10 * time.Millisecond) // poll the buffer
	}
	fail(ipc.Request{Type: ipc.CmdIRCRead, Channel: "#dev", Limit: -1}, "limit")

	go func() {
		for m := range r.bobGot {
			if strings.Contains(m.Text, "deploy now?") {
				r.bob.Send("#dev", "lab-alice: go ahead")
				return
			}
		}
	}()
	if d := ok(ipc.Request{Type: ipc.CmdIRCAsk, Channel: "#dev", Message: "deploy now?", Timeout: 10}); !strings.Contains(string(d), "go ahead") {
		t.Fatalf("ask: %s", d)
	}
	// spec 003: irc_ask is send + alert: the webhook is told of the question
	if e := r.alert(); e.Type != "ask" || e.Channel != "#dev" || e.Message != "deploy now?" || e.IRCNick != "lab-alice" {
		t.Fatalf("ask's alert: %+v", e)
	}
	fail(ipc.Request{Type: ipc.CmdIRCAsk, Channel: "#dev", Message: "anyone?", Timeout: 0.05}, "no answer")

	if d := ok(ipc.Request{Type: ipc.CmdIRCJoin, Channel: "#ops"}); !strings.Contains(string(d), "#ops") {
		t.Fatalf("join: %s", d)
	}
	fail(ipc.Request{Type: ipc.CmdIRCJoin, Channel: "ops"}, "invalid channel")
	if d := ok(ipc.Request{Type: ipc.CmdIRCChannels}); string(d) != `{"channels":["#dev","#ops"]}` {
		t.Fatalf("channels: %s", d)
	}
	if d := ok(ipc.Request{Type: ipc.CmdIRCPart, Channel: "#ops"}); strings.Contains(string(d), "#ops") {
		t.Fatalf("part: %s", d)
	}
	fail(ipc.Request{Type: ipc.CmdIRCPart, Channel: "#never"}, "server refused")

	if d := ok(ipc.Request{Type: ipc.CmdIRCWho, Target: "#dev"}); !strings.Contains(string(d), `"nick":"bob"`) || !strings.Contains(string(d), `"nick":"lab-alice"`) {
		t.Fatalf("who: %s", d)
	}
	fail(ipc.Request{Type: ipc.CmdIRCWho}, "needs \"target\"")

	topic := "release day"
	if d := ok(ipc.Request{Type: ipc.CmdIRCTopic, Channel: "#dev", Topic: &topic}); !strings.Contains(string(d), "release day") {
		t.Fatalf("topic set: %s", d)
	}
	if d := ok(ipc.Request{Type: ipc.CmdIRCTopic, Channel: "#dev"}); !strings.Contains(string(d), "release day") {
		t.Fatalf("topic: %s", d)
	}
	blank := " "
	fail(ipc.Request{Type: ipc.CmdIRCTopic, Channel: "#dev", Topic: &blank}, "topic is empty")
	fail(ipc.Request{Type: ipc.CmdIRCTopic, Channel: "#nothere", Topic: &topic}, "irc: server refused")

	ok(ipc.Request{Type: ipc.CmdCompact})
	ok(ipc.Request{Type: ipc.CmdClear})
	if r.agent.compacts != 1 || r.agent.clears != 1 {
		t.Fatalf("compact %d clear %d", r.agent.compacts, r.agent.clears)
	}

	var st Status
	if err := json.Unmarshal(ok(ipc.Request{Type: ipc.CmdStatus}), &st); err != nil {
		t.Fatal(err)
	}
	if !st.Running || st.Activity != "idle" || st.IRCNick != "lab-alice" || !st.Connected || st.Description == "" ||
		strings.Join(st.Channels, ",") != "#dev" {
		t.Fatalf("status: %+v", st)
	}
	var raw map[string]any
	json.Unmarshal(ok(ipc.Request{Type: ipc.CmdStatus}), &raw)
	for _, k := range []string{"running", "paused", "circuit_open", "turn_count", "last_activation", "activity", "description"} {
		if _, has := raw[k]; !has {
			t.Errorf("status lacks %q: %v", k, raw)
		}
	}
	// spec 003: last_activation is a float or null; never activated: null
	if raw["last_activation"] != nil || st.Description != "idle, waiting for a mention in #dev" {
		t.Fatalf("before any activation: last_activation %v, description %q", raw["last_activation"], st.Description)
	}
	// a turn under way: Unix seconds, and the description says what it does
	at := time.Date(2024, 4, 1, 19, 33, 20, 250e6, time.UTC)
	r.agent.mu.Lock()
	r.agent.working, r.agent.last = true, at
	r.agent.mu.Unlock()
	r.agent.onStart(runner.TurnStart{Prompt: "[IRC @mention in #dev] <bob> @lab-alice review PR #47 please"})
	r.agent.onMsg(runner.Message{Type: "assistant", Content: []runner.Content{{Type: "tool_use", Name: "Bash"}}})
	data := ok(ipc.Request{Type: ipc.CmdStatus})
	raw = nil
	json.Unmarshal(data, &raw)
	if f, isFloat := raw["last_activation"].(float64); !isFloat || f != 1712000000.25 {
		t.Fatalf("last_activation %#v, want 1712000000.25 (%s)", raw["last_activation"], data)
	}
	if want := `answering bob in #dev: "@lab-alice review PR #47 please" (running Bash)`; raw["description"] != want || raw["activity"] != "working" {
		t.Fatalf("description %q activity %v, want %q", raw["description"], raw["activity"], want)
	}
	st = Status{}
	json.Unmarshal(data, &st) // the CLI reads it back
	if !strings.Contains(st.Line(), "last activation "+at.Local().Format(time.RFC3339)) || !strings.Contains(st.Line(), "review PR #47") {
		t.Fatalf("line: %s", st.Line())
	}
	r.agent.onEnd(runner.TurnEnd{Prompt: "[IRC @mention in #dev] <bob> @lab-alice review PR #47 please", Outcome: runner.Interrupted})
	r.agent.mu.Lock()
	r.agent.working = false
	r.agent.mu.Unlock()
	ok(ipc.Request{Type: ipc.CmdPause})
	ok(ipc.Request{Type: ipc.CmdResume})
	fail(ipc.Request{Type: "dance"}, "unknown command")

	sock, _ := ipc.SocketPath("alice")
	pid, _ := ipc.PIDPath("alice")
	for _, p := range []string{sock, pid} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if d := ok(ipc.Request{Type: ipc.CmdShutdown}); !strings.Contains(string(d), "stopping") {
		t.Fatalf("shutdown: %s", d)
	}
	select {
	case <-r.d.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not stop")
	}
	for _, p := range []string{sock, pid} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s left behind: %v", filepath.Base(p), err)
		}
	}
	if !r.agent.stopped {
		t.Fatal("runner not stopped")
	}
	// spec 003's stop order: the PID file goes last, after IRC
	r.d.mu.Lock()
	steps := strings.Join(r.d.stopSteps, " ")
	r.d.mu.Unlock()
	if steps != "runner supervisor ipc irc pid" {
		t.Fatalf("stop order %s", steps)
	}
}

func TestWhisperEscalationPauseRelay(t *testing.T) {
	r := newRig(t, irctest.StartNgircd(t).Addr())

	// runner output reaches the supervisor
	r.agent.onMsg(runner.Message{Type: "assistant", Content: []runner.Content{{Type: "tool_use", Name: "Bash"}}})
	if len(r.sup.observed) != 1 {
		t.Fatal("message not observed")
	}

	// a whisper waits for the next skill call; status does not take it
	r.sup.whisper("you are looping on the same test", "CORRECTION")
	if _, w := r.call(ipc.Request{Type: ipc.CmdStatus}); len(w) != 0 {
		t.Fatalf("status got a whisper: %v", w)
	}
	_, w := r.call(ipc.Request{Type: ipc.CmdIRCChannels})
	if len(w) != 1 || w[0].WhisperType != "CORRECTION" || w[0].Message != "you are looping on the same test" {
		t.Fatalf("whispers: %+v", w)
	}

	// escalation: webhook hit, supervisor paused, runner still running
	r.sup.escalate("three corrections ignored")
	if e := r.alert(); e.Type != "escalation" || e.Nick != "alice" || e.IRCNick != "lab-alice" || e.Message != "three corrections ignored" {
		t.Fatalf("webhook: %+v", e)
	}
	resp, _ := r.call(ipc.Request{Type: ipc.CmdStatus})
	var st Status
	json.Unmarshal(resp.Data, &st)
	if !st.Running || !st.SupervisorPaused {
		t.Fatalf("after escalation: %+v", st)
	}
	r.call(ipc.Request{Type: ipc.CmdResume})
	if r.sup.Paused() || r.sup.resumed != 1 {
		t.Fatal("resume did not resume the supervisor")
	}

	// failed turns pause the keeper: an error message in the channel
	r.hooks.OnPause("3 consecutive failed turns (api_error)")
	r.bobSees("[error] lab-alice is paused after repeated failed turns: 3 consecutive failed turns (api_error)")
	r.hooks.OnCircuitOpen("3 crashes in 5m0s")
	r.bobSees("stopped restarting after repeated crashes")

	// a turn that did not post: its final answer is relayed
	prompt := "[IRC @mention in #dev] <bob> @lab-alice sum 2+2"
	r.agent.onStart(runner.TurnStart{Prompt: prompt})
	r.agent.onMsg(runner.Message{Type: "assistant", Content: []runner.Content{{Type: "text", Text: "thinking about it"}}})
	r.agent.onMsg(runner.Message{Type: "assistant", Content: []runner.Content{{Type: "text", Text: "2+2 is 4"}}})
	r.agent.onEnd(runner.TurnEnd{Prompt: prompt, Outcome: runner.Completed})
	if m := r.bobSees("is 4"); m.Text != "2+2 is 4" {
		t.Fatalf("relayed %q", m.Text)
	}
	// a turn that posted through the skill CLI is not relayed again
	r.agent.onStart(runner.TurnStart{Prompt: prompt})
	r.call(ipc.Request{Type: ipc.CmdIRCSend, Channel: "#dev", Message: "posted myself"})
	r.agent.onMsg(runner.Message{Type: "assistant", Content: []runner.Content{{Type: "text", Text: "NOT RELAYED"}}})
	r.agent.onEnd(runner.TurnEnd{Prompt: prompt, Outcome: runner.Completed})
	r.call(ipc.Request{Type: ipc.CmdIRCSend, Channel: "#dev", Message: "marker"})
	for {
		m := r.bobSees("")
		if m.Text == "NOT RELAYED" {
			t.Fatal("a turn that posted was relayed")
		}
		if m.Text == "marker" {
			break
		}
	}
	// a long answer is cut to MaxRelayLines and says where the rest is
	var long []string
	for i := range 30 {
		long = append(long, fmt.Sprintf("line %d", i))
	}
	r.agent.onStart(runner.TurnStart{Prompt: prompt})
	r.agent.onEnd(runner.TurnEnd{Prompt: prompt, Outcome: runner.Completed, Final: strings.Join(long, "\n"), SessionID: "s-1"})
	r.bobSees("line 19")
	if m := r.bobSees("more lines"); m.Text != "… (10 more lines; the whole answer is in session s-1)" {
		t.Fatalf("cut: %q", m.Text)
	}
}

// An IRC server restart: the daemon reconnects, rejoins, and mentions
// become prompts again.
func TestDaemonSurvivesServerRestart(t *testing.T) {
	n := irctest.StartNgircd(t)
	r := newRig(t, n.Addr())
	n.Restart()
	if err := r.d.irc.WaitRegistered(ctxT(t, 15*time.Second), 2); err != nil {
		t.Fatal(err)
	}
	if err := r.d.irc.WaitJoined(ctxT(t, 15*time.Second), "#dev"); err != nil {
		t.Fatal(err)
	}
	if err := r.bob.WaitJoined(ctxT(t, 15*time.Second), "#dev"); err != nil {
		t.Fatal(err)
	}
	if err := r.bob.Send("#dev", "@lab-alice still there?"); err != nil {
		t.Fatal(err)
	}
	if got := r.nextPrompt(); !strings.HasSuffix(got, "still there?") {
		t.Fatalf("got %q", got)
	}
}

// The daemon starts while the server is down and gets in later; a client
// of the socket never kills it.
func TestStartWithoutServerAndBadClients(t *testing.T) {
	f, err := irctest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Refuse(true)
	t.Setenv("XDG_RUNTIME_DIR", shortTemp(t))
	host, port, _ := strings.Cut(f.Addr(), ":")
	cfg, err := ParseConfig([]byte("server: {host: "+host+", port: "+port+"}\nagents:\n  - {nick: carol, agent: anthropic, directory: /tmp, channels: [\"#x\"]}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	agent := newFakeAgent()
	d, err := New(Options{Config: cfg, Agent: cfg.Agents[0], IRCTimeout: 100 * time.Millisecond, MinBackoff: 10 * time.Millisecond,
		MaxBackoff: 50 * time.Millisecond, NewAgent: func(Hooks) (Agent, Supervisor, error) { return agent, nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(context.Background())
	c, err := ipc.Dial(context.Background(), "carol")
	if err != nil {
		t.Fatal(err)
	}
	resp, _, _ := c.Call(context.Background(), ipc.Request{Type: ipc.CmdIRCSend, Channel: "#x", Message: "hi"})
	if resp.OK || !strings.Contains(resp.Error, "not connected") {
		t.Fatalf("send while disconnected: %+v", resp)
	}
	c.Close()
	sock, _ := ipc.SocketPath("carol")
	for _, junk := range []string{"{", strings.Repeat("[", 100000), "\x00\x01", `{"type":"status"}`} {
		if conn, err := (&net.Dialer{}).Dial("unix", sock); err == nil {
			conn.Write([]byte(junk + "\n"))
			conn.Close()
		}
	}
	f.Refuse(false)
	if err := d.irc.WaitJoined(ctxT(t, 10*time.Second), "#x"); err != nil {
		t.Fatal(err)
	}
	c, err = ipc.Dial(context.Background(), "carol")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if resp, _, err := c.Call(context.Background(), ipc.Request{Type: ipc.CmdIRCSend, Channel: "#x", Message: "hi"}); err != nil || !resp.OK {
		t.Fatalf("after reconnect: %+v %v", resp, err)
	}
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without config")
	}
	if err := d.Start(context.Background()); err == nil {
		t.Fatal("started twice")
	}
	_ = errors.New
}

// Without XDG_RUNTIME_DIR the daemon's socket and PID file live in
// ~/.harness/run (0700), where a client finds them.
func TestSocketUnderHomeWithoutXDG(t *testing.T) {
	f, err := irctest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	home := shortTemp(t)
	t.Setenv("HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", "")
	host, port, _ := strings.Cut(f.Addr(), ":")
	cfg, err := ParseConfig([]byte("server: {host: "+host+", port: "+port+"}\nagents:\n  - {nick: dave, agent: claude, directory: /tmp, channels: [\"#x\"]}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{Config: cfg, Agent: cfg.Agents[0], NewAgent: func(Hooks) (Agent, Supervisor, error) { return newFakeAgent(), nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(home, ".harness", "run", "harness-dave.sock")
	if p, _ := ipc.SocketPath("dave"); p != sock {
		t.Fatalf("SocketPath %s, want %s", p, sock)
	}
	if fi, err := os.Stat(filepath.Dir(sock)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("run dir: %v %v", fi, err)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v", fi, err)
	}
	c, err := ipc.Dial(context.Background(), "dave")
	if err != nil {
		t.Fatal(err)
	}
	resp, _, err := c.Call(context.Background(), ipc.Request{Type: ipc.CmdStatus})
	c.Close()
	if err != nil || !resp.OK {
		t.Fatalf("%+v %v", resp, err)
	}
	d.Stop(context.Background())
	if m, _ := filepath.Glob(filepath.Join(home, ".harness", "run", "*")); len(m) != 0 {
		t.Fatalf("left behind: %v", m)
	}
}

// fakeServerConfig starts a fake IRC server and parses a configuration
// of one agent, nick, on it; run is the run directory (XDG_RUNTIME_DIR).
func fakeServerConfig(t *testing.T, nick string) (f *irctest.Fake, cfg *Config, run string) {
	t.Helper()
	f, err := irctest.NewFake()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	run = shortTemp(t)
	t.Setenv("XDG_RUNTIME_DIR", run)
	host, port, _ := strings.Cut(f.Addr(), ":")
	cfg, err = ParseConfig([]byte("server: {host: "+host+", port: "+port+"}\nagents:\n  - {nick: "+nick+", agent: claude, directory: /tmp, channels: [\"#x\"]}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	return f, cfg, run
}

// blockingAgent's Start waits for its context: a runner slow to come up.
type blockingAgent struct {
	*fakeAgent
	entered chan struct{}
}

func (b *blockingAgent) Start(ctx context.Context, _ string) error {
	close(b.entered)
	<-ctx.Done()
	return ctx.Err()
}

// The socket answers before the runner is up; a shutdown then cancels
// the start instead of racing it: Start fails, Done closes, nothing is
// left in the run directory, and the supervisor was stopped again.
func TestShutdownDuringStart(t *testing.T) {
	_, cfg, run := fakeServerConfig(t, "erin")
	agent := &blockingAgent{fakeAgent: newFakeAgent(), entered: make(chan struct{})}
	sup := &fakeSup{}
	d, err := New(Options{Config: cfg, Agent: cfg.Agents[0],
		NewAgent: func(Hooks) (Agent, Supervisor, error) { return agent, sup, nil }})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- d.Start(context.Background()) }()
	select {
	case <-agent.entered:
	case <-time.After(15 * time.Second):
		t.Fatal("the runner's Start was never reached")
	}
	c, err := ipc.Dial(ctxT(t, 5*time.Second), "erin")
	if err != nil {
		t.Fatal(err)
	}
	resp, _, err := c.Call(ctxT(t, 5*time.Second), ipc.Request{Type: ipc.CmdStatus})
	if err != nil || !resp.OK || !strings.Contains(string(resp.Data), `"activity":"idle"`) {
		t.Fatalf("status during start: %+v %v", resp, err)
	}
	if resp, _, err := c.Call(ctxT(t, 5*time.Second), ipc.Request{Type: ipc.CmdShutdown}); err != nil || !resp.OK {
		t.Fatalf("shutdown: %+v %v", resp, err)
	}
	c.Close()
	select {
	case err := <-started:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Start: %v, want context.Canceled", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Start did not return after a shutdown")
	}
	select {
	case <-d.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("Done not closed")
	}
	sup.mu.Lock()
	stopped := !sup.stoppedAt.IsZero()
	sup.mu.Unlock()
	if !stopped {
		t.Fatal("the supervisor was left running")
	}
	if m, _ := filepath.Glob(filepath.Join(run, "*")); len(m) != 0 {
		t.Fatalf("left in the run dir: %v", m)
	}
	if err := d.Start(context.Background()); err == nil {
		t.Fatal("Start after Stop")
	}
}

// A webhook's URL often carries its secret: a failed post is logged
// without it.
func TestWebhookErrorLogHasNoURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: the post fails
	url := "http://" + addr + "/hooks/T000/s3cr3t-token"
	var logs strings.Builder // written before d.hooks.Wait returns
	logger := zerolog.New(&logs)
	cfg := &Config{Supervisor: &SupervisorConfig{Webhook: url}}
	d, err := New(Options{Config: cfg, Agent: AgentConfig{Nick: "x"}, Logger: &logger})
	if err != nil {
		t.Fatal(err)
	}
	d.hook = &http.Client{Timeout: 5 * time.Second}
	d.onEscalation("stuck in a loop")
	d.hooks.Wait()
	out := logs.String()
	if !strings.Contains(out, "escalation webhook failed") {
		t.Fatalf("no failure logged: %s", out)
	}
	if strings.Contains(out, "s3cr3t") {
		t.Fatalf("the webhook's secret reached the log: %s", out)
	}
}

// A second daemon for a nick whose daemon is alive is refused before it
// touches IRC; the files a crashed daemon left (a socket nobody serves, a
// PID file) do not stop the next one.
func TestSecondDaemonAndStaleFiles(t *testing.T) {
	f, cfg, run := fakeServerConfig(t, "fay")
	newD := func() *Daemon {
		d, err := New(Options{Config: cfg, Agent: cfg.Agents[0], NewAgent: func(Hooks) (Agent, Supervisor, error) { return newFakeAgent(), nil, nil }})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := newD()
	if err := first.Start(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	nicks := func() (n int) {
		for _, l := range f.Lines() {
			if strings.HasPrefix(l, "NICK ") {
				n++
			}
		}
		return n
	}
	before := nicks()
	second := newD()
	if err := second.Start(ctxT(t, 10*time.Second)); !errors.Is(err, ipc.ErrAlreadyRunning) {
		t.Fatalf("second daemon: %v", err)
	}
	if n := nicks(); n != before {
		t.Fatalf("the second daemon sent NICK to the server (%d, was %d)", n, before)
	}
	sock, _ := ipc.SocketPath("fay")
	pid, _ := ipc.PIDPath("fay")
	if _, err := os.Stat(pid); err != nil {
		t.Fatalf("the refused daemon removed the live one's PID file: %v", err)
	}
	first.Stop(context.Background())

	// what a crash leaves: a socket file with no listener, a PID file
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if err := os.WriteFile(pid, []byte("999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	third := newD()
	if err := third.Start(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("after a crash: %v", err)
	}
	if b, _ := os.ReadFile(pid); strings.TrimSpace(string(b)) != fmt.Sprint(os.Getpid()) {
		t.Fatalf("PID file %q", b)
	}
	third.Stop(context.Background())
	if m, _ := filepath.Glob(filepath.Join(run, "*")); len(m) != 0 {
		t.Fatalf("left in the run dir: %v", m)
	}
}

// The relay and the alerts find the channel of a mention's prompt, also
// when the channel or a private message's nick holds a ']'.
func TestMentionChannel(t *testing.T) {
	for _, m := range []irc.Message{
		{Channel: "#dev", Sender: "bob", Text: "@lab-alice hi"},
		{Channel: "#a]b", Sender: "bob", Text: "@lab-alice ] <x> tricky"},
		{Channel: "[bob]", Sender: "[bob]", Text: "@lab-alice in private"},
	} {
		if got := mentionChannel(MentionPrompt(m)); got != m.Channel {
			t.Errorf("mentionChannel(%q) = %q, want %q", MentionPrompt(m), got, m.Channel)
		}
	}
	for _, p := range []string{"Your previous run ended", "[IRC @mention in #dev]", "[Context carried over] [IRC @mention in #x] <a> b"} {
		if got := mentionChannel(p); got != "" {
			t.Errorf("mentionChannel(%q) = %q, want none", p, got)
		}
	}
}

// gatedAgent's Start waits for its gate: a runner that takes a while to
// come up after IRC is.
type gatedAgent struct {
	*fakeAgent
	entered, gate chan struct{}
}

func (g *gatedAgent) Start(context.Context, string) error {
	close(g.entered)
	<-g.gate
	return nil
}

// IRC is up before the runner (the start order); mentions that come in
// between are prompted once the runner is up, first and in order.
func TestMentionsWhileTheRunnerStarts(t *testing.T) {
	f, cfg, _ := fakeServerConfig(t, "gus")
	agent := &gatedAgent{fakeAgent: newFakeAgent(), entered: make(chan struct{}), gate: make(chan struct{})}
	d, err := New(Options{Config: cfg, Agent: cfg.Agents[0], NewAgent: func(Hooks) (Agent, Supervisor, error) { return agent, nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- d.Start(context.Background()) }()
	t.Cleanup(func() { d.Stop(context.Background()) })
	select {
	case <-agent.entered:
	case <-time.After(15 * time.Second):
		t.Fatal("the runner's Start was never reached")
	}
	bob, _ := human(t, f.Addr(), "bob", "#x")
	for _, text := range []string{"@gus first", "@gus second"} {
		if err := bob.Send("#x", text); err != nil {
			t.Fatal(err)
		}
	}
	// both reached the daemon (its buffer) while the runner was starting
	c, err := ipc.Dial(ctxT(t, 5*time.Second), "gus")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, _, err := c.Call(ctxT(t, 5*time.Second), ipc.Request{Type: ipc.CmdIRCRead, Channel: "#x"})
		if err == nil && strings.Contains(string(resp.Data), "@gus second") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mentions not in the buffer: %+v %v", resp, err)
		}
		time.Sleep(10 * time.Millisecond) // poll the buffer
	}
	close(agent.gate)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if err := bob.Send("#x", "@gus third"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"first", "second", "third"} {
		select {
		case p := <-agent.promptAdded:
			if !strings.HasSuffix(p, "@gus "+want) {
				t.Fatalf("prompt %q, want the %s mention", p, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the %s mention was never prompted", want)
		}
	}
}
