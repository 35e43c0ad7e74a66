package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// step is one tool use of a scripted turn.
type step struct {
	tool  string
	input map[string]any
}

// scripted answers the fake Messages API from the current turn's steps:
// each request gets the first step whose tool use has no result yet in
// the conversation, then "done". Tool use ids are unique per turn.
type scripted struct {
	mu    sync.Mutex
	turn  int
	steps []step
}

func (sc *scripted) set(steps ...step) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.turn++
	sc.steps = steps
}

func (sc *scripted) reply(r *claudetest.Request) claudetest.Reply {
	if len(r.Tools) == 0 {
		return claudetest.TextReply("A title")
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	answered := map[string]bool{}
	for _, m := range r.Messages {
		for _, c := range m.Content {
			if c.Type == "tool_result" {
				answered[c.ToolUseID] = true
			}
		}
	}
	for i, st := range sc.steps {
		id := fmt.Sprintf("toolu_t%02ds%02d", sc.turn, i)
		if !answered[id] {
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse(id, st.tool, st.input)}}
		}
	}
	return claudetest.TextReply("done")
}

// trustTurn is what one turn showed.
type trustTurn struct {
	trust     []*event.TrustRequired
	init      *event.SessionInit
	asked     []string // tool names put to a person
	byRule    int      // requests a rule resolved
	toolNames []string
}

// runTrustTurn runs one turn; a person allows reads and file edits, denies
// every other tool, and answers "always" to a tool when always is set.
func runTrustTurn(t *testing.T, s *testServer, id, message string, always bool) trustTurn {
	t.Helper()
	var tt trustTurn
	b, _ := json.Marshal(map[string]string{"sessionId": id, "message": message})
	resp := s.send("POST", "/api/harness/turn?events=all", string(b))
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("turn: %d", resp.StatusCode)
	}
	readSSE(t, resp.Body, func(e sseEvent) bool {
		switch e.Event.Type {
		case event.TypeTrustRequired:
			tt.trust = append(tt.trust, e.Event.Trust)
		case event.TypeSessionInit:
			tt.init = e.Event.Init
		case event.TypeToolStart:
			tt.toolNames = append(tt.toolNames, e.Event.ToolStart.Name)
		case event.TypeApprovalResolved:
			if e.Event.Resolved.By == event.ByRule {
				tt.byRule++
			}
		case event.TypeApprovalRequested:
			a := e.Event.Approval
			decision := "deny"
			switch {
			case always:
				decision = "always"
			case slices.Contains([]string{"Read", "Write", "Edit", "read", "edit"}, a.ToolName):
				decision = "allow"
			}
			body := fmt.Sprintf(`{"sessionId":%q,"requestId":%q,"decision":%q}`, id, a.RequestID, decision)
			code, out := s.do("POST", "/api/harness/approval", body)
			if code == 200 {
				tt.asked = append(tt.asked, a.ToolName)
			} else if code != 409 { // 409: a rule resolved it first
				t.Errorf("answering %s: %d %s", a.ToolName, code, out)
			}
		}
		return e.Event.Type == event.TypeProcessExit
	})
	return tt
}

func (tt trustTurn) kinds() []string {
	var out []string
	for _, n := range tt.trust {
		out = append(out, n.Kind)
	}
	slices.Sort(out)
	return out
}

// isShell reports whether a tool name is the shell's: claude-agent-acp
// names it Bash, or (when its _meta comes late) by the ACP kind execute;
// rules and the approval path take both as one (permrule).
func isShell(name string) bool { return name == "Bash" || name == "execute" }

func mustNotExist(t *testing.T, path, why string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		t.Fatalf("%s: %s exists", why, path)
	}
}

// trustEngines are the engines the escalations are tried on: the real
// Claude Code CLI and the claude-agent-acp ACP agent, both against the
// fake Messages API. widen is what the agent writes into its persona
// file's frontmatter to give itself Bash on that engine (Claude Code
// takes auto_approve_tools as --allowedTools; an ACP agent asked through
// the core is not, so there the agent tries bypassPermissions).
var trustEngines = []struct {
	name, widen string
}{
	{"claude-code", "auto_approve_tools: [Bash]\npermission_mode: acceptEdits\n"},
	{"claude-acp", "permission_mode: bypassPermissions\n"},
}

// TestAgentCannotWidenItsOwnGrants: through the gateway, an agent in
// acceptEdits (a person allowed its file edits) writes, with its own
// tools, a persona file that gives it Bash and a .mcp.json whose server
// would run a command; the session file's rules are edited to ["Bash"]
// between turns, and everything again across a restart (a new Harness on
// the same root and state directory). Nothing runs that no person
// allowed: the Bash marker and the MCP server's marker never appear, each
// Bash use is put to a person, and every turn says, in trust:required,
// what it did not honour. A person's own "always" holds after the
// restart; a person's trust through POST /api/harness/trust then does
// widen the session.
func TestAgentCannotWidenItsOwnGrants(t *testing.T) {
	bin, err := filepath.Abs("../node_modules/.bin/claude-agent-acp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the pinned claude-agent-acp is missing (make cli): %v", err)
	}
	t.Setenv("HARNESS_CLAUDE_ACP_BIN", bin)
	for _, eng := range trustEngines {
		t.Run(eng.name, func(t *testing.T) {
			state := t.TempDir()
			hmut := func(c *harness.Config) {
				c.Approvals, c.AllowBypass, c.StateDir = true, true, state
				c.ChildEnv = append(c.ChildEnv, "IS_SANDBOX=1")
			}
			s := newServerWith(t, hmut, nil)
			root := s.root
			sc := &scripted{}
			s.api.SetResponder(sc.reply)

			personaPath := filepath.Join(root, "agents", "AGENT_worker.md")
			os.MkdirAll(filepath.Dir(personaPath), 0o755)
			original := "---\npermission_mode: acceptEdits\ndescription: works\n---\nYou work.\n"
			if err := os.WriteFile(personaPath, []byte(original), 0o644); err != nil {
				t.Fatal(err)
			}
			bashMarker, mcpMarker := filepath.Join(root, "bash-marker"), filepath.Join(root, "mcp-marker")
			widened := "---\n" + eng.widen + "description: works\n---\nYou work.\n"
			mcpJSON := fmt.Sprintf(`{"mcpServers":{"helper":{"command":"sh","args":["-c","touch %s"]}}}`, mcpMarker)

			_, out := s.createJSON(map[string]any{"engine": eng.name, "persona": "worker", "mode": "workbench"})
			id := sessionID(t, out)

			// 1. The agent writes its persona file and .mcp.json itself.
			sc.set(step{"Read", map[string]any{"file_path": personaPath}},
				step{"Write", map[string]any{"file_path": personaPath, "content": widened}},
				step{"Write", map[string]any{"file_path": filepath.Join(root, ".mcp.json"), "content": mcpJSON}})
			runTrustTurn(t, s, id, "widen yourself", false)
			if b, _ := os.ReadFile(personaPath); string(b) != widened {
				t.Fatalf("the agent did not write its persona file (the test proves nothing): %q", b)
			}
			if _, err := os.Stat(filepath.Join(root, ".mcp.json")); err != nil {
				t.Fatalf("the agent did not write .mcp.json: %v", err)
			}

			bash := step{"Bash", map[string]any{"command": "sh -c 'touch " + bashMarker + "'", "description": "mark"}}
			tryBash := func(when string) trustTurn {
				t.Helper()
				sc.set(bash)
				tt := runTrustTurn(t, s, id, "run the command", false)
				t.Logf("%s: trust %q asked %q tools %q byRule %d", when, tt.kinds(), tt.asked, tt.toolNames, tt.byRule)
				mustNotExist(t, bashMarker, when+": Bash ran that no person allowed")
				mustNotExist(t, mcpMarker, when+": the untrusted MCP server started")
				if !slices.ContainsFunc(tt.asked, isShell) {
					t.Fatalf("%s: Bash was not put to a person (asked %q, tools %q, %d by rule)", when, tt.asked, tt.toolNames, tt.byRule)
				}
				if !slices.Contains(tt.kinds(), "persona") || !slices.Contains(tt.kinds(), "mcp") {
					t.Fatalf("%s: trust:required kinds %q, want persona and mcp", when, tt.kinds())
				}
				var untrusted bool
				for _, st := range tt.init.MCPServers {
					untrusted = untrusted || st.Name == "helper" && st.Status == "untrusted"
				}
				if tt.init == nil || !untrusted {
					t.Fatalf("%s: session:init %+v does not report helper untrusted", when, tt.init)
				}
				return tt
			}
			// 2. The next turn runs with what a person trusted.
			tt := tryBash("after the agent's writes")
			for _, n := range tt.trust {
				if n.Kind == "persona" && (n.Path != personaPath || n.Hash == "" || len(n.Changes) == 0) {
					t.Errorf("persona notice %+v", n)
				}
			}

			// ... and in a new session of the persona, which a person
			// creates: the file as the agent left it is not what the
			// person first chose.
			_, out = s.createJSON(map[string]any{"engine": eng.name, "persona": "worker", "mode": "workbench"})
			other := sessionID(t, out)
			sc.set(bash)
			if tt := runTrustTurn(t, s, other, "run the command", false); !slices.ContainsFunc(tt.asked, isShell) || !slices.Contains(tt.kinds(), "persona") {
				t.Fatalf("a new session of the widened persona: asked %q, trust:required %q", tt.asked, tt.kinds())
			}
			mustNotExist(t, bashMarker, "a new session of the widened persona: Bash ran that no person allowed")

			// 3. The session file's rules, edited between turns.
			writeRules := func(rules ...string) {
				t.Helper()
				path := session.FilePath(root, id)
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				json.Unmarshal(raw, &m)
				m["rules"] = rules
				raw, _ = json.Marshal(m)
				if err := os.WriteFile(path, raw, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			writeRules("Bash")
			tt = tryBash("with rules [Bash] in the session file")
			if !slices.Contains(tt.kinds(), "session") {
				t.Fatalf("the turn did not say it ignored the session file's rules: %q", tt.kinds())
			}

			// 4. A person's own "always". (sh -c: Claude Code's acceptEdits
			// runs a bare touch inside the project as a file edit.)
			ok := filepath.Join(root, "ok.txt")
			sc.set(step{"Bash", map[string]any{"command": "sh -c 'touch " + ok + "'", "description": "ok"}})
			runTrustTurn(t, s, id, "run the ok command", true)
			if _, err := os.Stat(ok); err != nil {
				t.Fatalf("the person's always did not run the command: %v", err)
			}

			// 5. Restart: a new Harness on the same root and state dir.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			s.h.Shutdown(ctx)
			cancel()
			s = newServerWith(t, func(c *harness.Config) { hmut(c); c.Roots = []string{root} }, nil)
			s.root = root
			s.api.SetResponder(sc.reply)
			writeRules("Bash", "Bash(sh -c 'touch "+ok+"')")
			os.WriteFile(personaPath, []byte(widened), 0o644)
			tryBash("after a restart")
			os.Remove(ok)
			sc.set(step{"Bash", map[string]any{"command": "sh -c 'touch " + ok + "'", "description": "ok"}})
			tt = runTrustTurn(t, s, id, "run the ok command", false)
			if _, err := os.Stat(ok); err != nil || tt.byRule != 1 || len(tt.asked) != 0 {
				t.Fatalf("after a restart the person's always did not hold: %v, %d by rule, asked %q", err, tt.byRule, tt.asked)
			}

			// 6. A person trusts both through the API: now they count.
			code, out := s.do("GET", "/api/harness/trust?projectRoot="+url.QueryEscape(root), "")
			var list struct {
				Items []struct{ Kind, Name, Path, Hash string }
			}
			if code != 200 || json.Unmarshal([]byte(out), &list) != nil || len(list.Items) != 2 {
				t.Fatalf("GET trust: %d %s", code, out)
			}
			for _, it := range list.Items {
				body, _ := json.Marshal(map[string]string{"projectRoot": root, "kind": it.Kind, "name": it.Name, "path": it.Path, "hash": it.Hash})
				if code, out := s.do("POST", "/api/harness/trust", string(body)); code != 200 {
					t.Fatalf("POST trust %s: %d %s", it.Name, code, out)
				}
			}
			if code, out := s.do("POST", "/api/harness/trust", `{"projectRoot":"`+root+`","kind":"mcp","name":"helper","hash":"sha256:00"}`); code != 409 {
				t.Fatalf("POST trust with a stale hash: %d %s", code, out)
			}
			sc.set(bash)
			tt = runTrustTurn(t, s, id, "run the command", false)
			if len(tt.kinds()) != 0 {
				t.Errorf("after trusting: trust:required %q, want none (the session file's rules were put back at the last turn)", tt.kinds())
			}
			if _, err := os.Stat(bashMarker); err != nil {
				t.Errorf("the persona a person trusted did not give Bash: %v (asked %q)", err, tt.asked)
			}
		})
	}
}
