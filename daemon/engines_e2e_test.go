package daemon

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/codex/codextest"
)

// The skill CLI on every engine with a shell: the real agent (Codex's
// app-server against a fake Responses API; Copilot, OpenCode and Claude
// over ACP against a fake Messages API) gets a mention on a real ngircd,
// its model answers with one shell call of `harness channel send`, the
// agent runs it without asking anyone (the daemon's turns run in
// dontAsk), the line reaches the channel through the skill CLI, and the
// turn's final answer is not relayed as well. Each engine's request also
// proves that the engine loaded the daemon's SKILL.md.

// nodeBin is the pinned agent of `make cli`: node_modules/.bin/NAME in
// the working directory or a parent.
func nodeBin(t *testing.T, name string) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		p := filepath.Join(dir, "node_modules", ".bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("%s not found in node_modules/.bin; run `make cli`", name)
		}
		dir = parent
	}
}

const skillAnswer = "posted through the skill CLI"

// permissionAnswered reports whether the ACP engine answered a
// permission request for tool with option (in the agent's project log,
// .chirality/logs/harness.log): the agent asked, and the daemon's rule,
// not a person, allowed the command.
func permissionAnswered(t *testing.T, agentDir, tool, option string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(agentDir, ".chirality", "logs", "harness.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `"acp: permission answered"`) && strings.Contains(line, `"tool":"`+tool+`"`) &&
			strings.Contains(line, `"option":"`+option+`"`) {
			return true
		}
	}
	t.Logf("the agent's log:\n%s", b)
	return false
}

// skillCommand is the shell command the scripted model runs.
func skillCommand(line string) string {
	return "harness channel send '#dev' '" + line + "'"
}

// shellAgent answers a mention with one call of the shell tool named
// shell (input from in), then with skillAnswer. Requests without tools
// (titles, summaries) get a short text.
func shellAgent(shell string, in func(cmd string) map[string]any, line string) func(*claudetest.Request) claudetest.Reply {
	return func(r *claudetest.Request) claudetest.Reply {
		if _, _, _, ok := mentionOf(r); !ok || len(r.Tools) == 0 {
			return claudetest.TextReply("A title")
		}
		if toolResultsSinceLastPrompt(r) == 0 {
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("", shell, in(skillCommand(line)))}}
		}
		return claudetest.TextReply(skillAnswer)
	}
}

// settled waits for the agent's turn to end, then posts a sentinel
// through the skill CLI (the daemon's one IRC connection keeps the order
// of its lines): a relay of the turn's answer would come before it.
func (e *e2e) settled(d *Daemon, nick string) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for st := d.Status(); st.TurnCount < 1 || st.Activity != "idle"; st = d.Status() {
		if time.Now().After(deadline) {
			e.t.Fatalf("the turn never ended: %+v", st)
		}
		time.Sleep(20 * time.Millisecond) // polling the status, with a deadline
	}
	cmd := exec.Command(e.bin, "channel", "send", "#dev", "sentinel")
	cmd.Env = append(os.Environ(), "HARNESS_NICK="+nick)
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("sentinel: %v\n%s", err, out)
	}
	ircNick := "lab-" + nick
	for {
		m := e.sees(ircNick, `.`)
		if m.Text == "sentinel" {
			return
		}
		if strings.Contains(m.Text, skillAnswer) {
			e.t.Fatalf("the daemon relayed the answer of a turn that posted through the skill CLI: %q", m.Text)
		}
	}
}

// skillLoaded reports whether a request carried the skill's name and
// description (what an agent that loaded SKILL.md puts before the model).
func skillLoaded(body string) bool {
	return strings.Contains(body, SkillName) && strings.Contains(body, "harness channel")
}

func TestE2ESkillCLICodex(t *testing.T) {
	t.Setenv("HARNESS_CODEX_BIN", nodeBin(t, "codex"))
	e := newE2E(t)
	line := "bob: codex says 4"
	api, err := codextest.NewFakeAPI(codextest.Reply{Text: skillAnswer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	api.Script(codextest.Reply{Call: &codextest.Call{Command: skillCommand(line)}})
	codexHome := t.TempDir()
	if _, err := api.WriteConfig(codexHome); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := e.config("", `{nick: cx, agent: codex, directory: `+dir+`/cx, channels: ["#dev"]}`)
	d := e.start(cfg, "cx", newAPI(t), func(o *Options) { o.Core.ChildEnv = []string{"CODEX_HOME=" + codexHome} })
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range api.Requests() {
				t.Logf("Codex sent the tool outputs %q", r.FunctionOutputs())
			}
		}
	})
	e.bob.Send("#dev", "@lab-cx what is 2+2?")
	e.sees("lab-cx", "^"+line+"$")
	e.settled(d, "cx")
	reqs := api.Requests()
	if len(reqs) == 0 || !skillLoaded(string(reqs[0].Body)) {
		t.Fatalf("Codex did not load the skill from %s", SkillDirs[KindCodex])
	}
	if out := reqs[len(reqs)-1].FunctionOutputs(); len(out) == 0 || strings.Contains(strings.Join(out, "\n"), "rror") {
		t.Fatalf("the skill CLI's output in Codex: %q", out)
	}
}

func TestE2ESkillCLICopilot(t *testing.T) {
	t.Setenv("HARNESS_COPILOT_BIN", nodeBin(t, "copilot"))
	e := newE2E(t)
	api := newAPI(t)
	line := "bob: copilot says 4"
	api.SetResponder(shellAgent("bash", func(c string) map[string]any {
		return map[string]any{"command": c, "description": "answer on IRC"}
	}, line))
	dir := t.TempDir()
	cfg := e.config("", `{nick: cop, agent: copilot, directory: `+dir+`/cop, channels: ["#dev"]}`)
	d := e.start(cfg, "cop", api, func(o *Options) {
		o.Core.ChildEnv = []string{"COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL=" + api.URL, "COPILOT_PROVIDER_TYPE=anthropic",
			"COPILOT_PROVIDER_API_KEY=x", "COPILOT_MODEL=claude-sonnet-4.5"}
	})
	e.bob.Send("#dev", "@lab-cop what is 2+2?")
	e.sees("lab-cop", "^"+line+"$")
	e.settled(d, "cop")
	checkACPSkill(t, api, KindCopilot)
	if !permissionAnswered(t, dir+"/cop", "execute", "allow_once") {
		t.Fatal("Copilot's permission request for the shell was not answered allow_once by the daemon's rule")
	}
}

func TestE2ESkillCLIOpenCode(t *testing.T) {
	e := newE2E(t)
	api := newAPI(t)
	line := "bob: opencode says 4"
	api.SetResponder(shellAgent("bash", func(c string) map[string]any {
		return map[string]any{"command": c, "description": "answer on IRC"}
	}, line))
	// "bash": "ask" makes OpenCode ask for every command, as Copilot does:
	// the daemon's rule must answer it
	conf := `{"model":"fake/fake-model","permission":{"bash":"ask"},"provider":{"fake":{"npm":"@ai-sdk/anthropic","options":{"baseURL":"` +
		api.URL + `/v1","apiKey":"x"},"models":{"fake-model":{"name":"Fake","tool_call":true}}}}}`
	dir := t.TempDir()
	cfg := e.config("", `{nick: oc, agent: acp, acp_command: "`+nodeBin(t, "opencode")+` acp", directory: `+dir+`/oc, channels: ["#dev"]}`)
	d := e.start(cfg, "oc", api, func(o *Options) {
		o.Core.ChildEnv = []string{"OPENCODE_CONFIG_CONTENT=" + conf, "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1"}
	})
	e.bob.Send("#dev", "@lab-oc what is 2+2?")
	e.sees("lab-oc", "^"+line+"$")
	e.settled(d, "oc")
	checkACPSkill(t, api, KindACP)
	if !permissionAnswered(t, dir+"/oc", "execute", "once") {
		t.Fatal("OpenCode's permission request for the shell was not answered allow once by the daemon's rule")
	}
}

func TestE2ESkillCLIClaudeACP(t *testing.T) {
	e := newE2E(t)
	api := newAPI(t)
	line := "bob: claude-acp says 4"
	api.SetResponder(shellAgent("Bash", func(c string) map[string]any {
		return map[string]any{"command": c, "description": "answer on IRC"}
	}, line))
	dir := t.TempDir()
	cfg := e.config("", `{nick: ca, agent: acp, acp_command: "`+nodeBin(t, "claude-agent-acp")+`", directory: `+dir+`/ca, channels: ["#dev"]}`)
	// As root, without IS_SANDBOX: no permission mode but bypass needs it.
	d := e.start(cfg, "ca", api, func(o *Options) { o.Core.ChildEnv = append(api.Env(), "IS_SANDBOX=") })
	e.bob.Send("#dev", "@lab-ca what is 2+2?")
	e.sees("lab-ca", "^"+line+"$")
	e.settled(d, "ca")
	checkACPSkill(t, api, KindACP)
	if !permissionAnswered(t, dir+"/ca", "Bash", "allow-once") {
		t.Fatal("Claude's permission request for Bash was not answered allow-once by the daemon's rule")
	}
}

// checkACPSkill: the agent's conversation carried the skill, and the
// shell call's result was the skill CLI's success.
func checkACPSkill(t *testing.T, api *claudetest.FakeAPI, kind string) {
	t.Helper()
	loaded := false
	results := map[string]string{} // by tool_use_id: later requests repeat the history
	for _, r := range api.Requests() {
		if len(r.Tools) > 0 && skillLoaded(string(r.Body)) {
			loaded = true
		}
		for _, tr := range r.ToolResults() {
			results[tr.ToolUseID] = tr.Content
		}
	}
	if !loaded {
		t.Errorf("the agent did not load the skill from %s", SkillDirs[kind])
	}
	if len(results) != 1 {
		t.Fatalf("tool results: %q", results)
	}
	for _, r := range results {
		if !strings.HasPrefix(r, "sent to #dev") {
			t.Fatalf("the skill CLI's output: %q", r)
		}
	}
}
