package rpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/acp/acptest"
	"github.com/chirality/harness/checkpoint"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
)

// thread.update switches what the next turn runs with; thread.turns lists
// the turns; thread.fork copies a thread (whole or up to a turn) whose
// next turn carries the kept history and whose thread.get shows it;
// thread.rollback cuts the conversation (the next turn lacks the undone
// one); every refusal has its code.
func TestThreadControl(t *testing.T) {
	e := newEnv(t)
	for id, word := range map[string]string{"PLANNER": "CODEWORD-PLUM", "BUILDER": "CODEWORD-FIG"} {
		p := filepath.Join(e.cwd, "agents", "AGENT_"+id+".md")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("---\ndescription: "+id+"\n---\nYou are the "+id+". "+word+".\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := e.start(t)
	defer c.close()
	id := 0
	call := func(method string, params map[string]any) msg {
		t.Helper()
		id++
		return c.call(id, method, params)
	}
	ok := func(method string, params map[string]any, v any) {
		t.Helper()
		m := call(method, params)
		if m.Error != nil {
			t.Fatalf("%s %v: %d %s", method, params, m.Error.Code, m.Error.Message)
		}
		if v != nil {
			if err := json.Unmarshal(m.Result, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	refused := func(method string, params map[string]any, code int) {
		t.Helper()
		if m := call(method, params); m.Error == nil || m.Error.Code != code {
			t.Errorf("%s %v: %s, want error %d", method, params, m.raw, code)
		}
	}
	newThread := func() string {
		var r struct{ Thread Thread }
		ok("thread.create", map[string]any{}, &r)
		return r.Thread.ThreadID
	}
	// turn runs one turn answered with answer; it returns its turnId and
	// the request the model got.
	turn := func(tid, text, answer string, extra map[string]any) (string, *claudetest.Request) {
		t.Helper()
		e.api.Script(claudetest.TextReply(answer))
		n := len(e.api.Requests())
		p := map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": text}}}
		for k, v := range extra {
			p[k] = v
		}
		var r struct{ TurnID string }
		ok("turn.start", p, &r)
		end := c.next("turn end", func(m msg) bool {
			return (m.Method == "turn.completed" || m.Method == "turn.error") && m.Params["turnId"] == r.TurnID
		})
		if end.Method != "turn.completed" {
			t.Fatalf("turn %q: %s", text, end.raw)
		}
		reqs := e.api.Requests()
		if len(reqs) != n+1 {
			t.Fatalf("turn %q: %d model requests", text, len(reqs)-n)
		}
		return r.TurnID, reqs[n]
	}
	native := map[string]any{"model": map[string]any{"providerID": "anthropic", "modelID": "model-one"}, "agent": "PLANNER"}

	tid := newThread()
	refused("thread.fork", map[string]any{"threadId": tid}, CodeTurnNotFound) // no turn yet
	t1, r := turn(tid, "first ALPHA", "one", native)
	if r.Model != "model-one" || !strings.Contains(r.SystemText(), "CODEWORD-PLUM") {
		t.Fatalf("first turn: %q %q", r.Model, r.SystemText())
	}

	// thread.update: the next turn runs with it.
	var upd struct{ Thread Thread }
	ok("thread.update", map[string]any{"threadId": tid, "agent": "BUILDER", "model": map[string]any{"providerID": "anthropic", "modelID": "model-two"},
		"permissionMode": "acceptEdits"}, &upd)
	if upd.Thread.ThreadID != tid {
		t.Fatalf("thread.update answered %+v", upd)
	}
	t2, r := turn(tid, "second BETA", "two", nil)
	if r.Model != "model-two" || !strings.Contains(r.SystemText(), "CODEWORD-FIG") || !strings.Contains(requestText(r), "ALPHA") {
		t.Fatalf("the updated turn: model %q system %q text %q", r.Model, r.SystemText(), requestText(r))
	}
	refused("thread.update", map[string]any{"threadId": tid, "agent": "NOBODY"}, CodeInvalidParams)
	refused("thread.update", map[string]any{"threadId": tid, "permissionMode": "yolo"}, CodeInvalidParams)
	refused("thread.update", map[string]any{"threadId": tid, "model": map[string]any{"providerID": "claude-code", "modelID": "haiku"}}, CodeInvalidParams)
	refused("thread.update", map[string]any{"threadId": "nope", "agent": "BUILDER"}, CodeThreadNotFound)
	refused("thread.update", map[string]any{"threadId": tid, "agent": strings.Repeat("a", MaxNameBytes+1)}, CodeInvalidParams)

	// thread.turns.
	var turns struct{ Turns []TurnInfo }
	ok("thread.turns", map[string]any{"threadId": tid}, &turns)
	if len(turns.Turns) != 2 || turns.Turns[0].TurnID != t1 || turns.Turns[1].TurnID != t2 || turns.Turns[1].Text != "second BETA" {
		t.Fatalf("thread.turns: %+v", turns)
	}

	// thread.fork of the whole thread.
	var fk struct{ Thread Thread }
	ok("thread.fork", map[string]any{"threadId": tid}, &fk)
	ftid := fk.Thread.ThreadID
	if ftid == "" || ftid == tid || fk.Thread.ForkedFrom != tid {
		t.Fatalf("thread.fork: %+v", fk)
	}
	if n := c.next("thread.forked", isNote("thread.forked")); n.Params["threadId"] != ftid || n.Params["from"] != tid {
		t.Fatalf("thread.forked: %s", n.raw)
	}
	var got struct {
		Thread Thread
		Events []struct {
			Seq    int64          `json:"seq"`
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
	}
	ok("thread.get", map[string]any{"threadId": ftid}, &got)
	methods := []string{}
	for i, ev := range got.Events {
		if ev.Params["threadId"] != ftid || ev.Seq != int64(i+1) {
			t.Fatalf("the fork's event %d: %+v", i, ev)
		}
		methods = append(methods, ev.Method)
	}
	if m := strings.Join(methods, ","); !strings.HasPrefix(m, "thread.created,turn.started,") || !strings.HasSuffix(m, "turn.completed,thread.forked") || strings.Count(m, "turn.started") != 2 {
		t.Fatalf("the fork's history: %s", m)
	}
	_, r = turn(ftid, "third GAMMA (fork)", "three", nil)
	if txt := requestText(r); !strings.Contains(txt, "ALPHA") || !strings.Contains(txt, "BETA") || r.Model != "model-two" {
		t.Fatalf("the fork's turn: model %q text %q", r.Model, txt)
	}

	// thread.fork up to the first turn (atSeq: any seq of it).
	var one struct{ Thread Thread }
	ok("thread.fork", map[string]any{"threadId": tid, "atSeq": 3}, &one)
	_, r = turn(one.Thread.ThreadID, "after the first", "x", nil)
	if txt := requestText(r); !strings.Contains(txt, "ALPHA") || strings.Contains(txt, "BETA") {
		t.Fatalf("the fork at the first turn: %q", txt)
	}

	// The original goes on without the fork's turns.
	_, r = turn(tid, "fourth DELTA", "four", nil)
	if txt := requestText(r); strings.Contains(txt, "GAMMA") || !strings.Contains(txt, "BETA") {
		t.Fatalf("the original after the fork: %q", txt)
	}

	// thread.rollback to turn 2: the next turn lacks turns 2 and 4.
	var rb struct {
		Files        []map[string]string
		Conversation bool
	}
	ok("thread.rollback", map[string]any{"threadId": tid, "toTurn": t2}, &rb)
	if !rb.Conversation || rb.Files == nil {
		t.Fatalf("thread.rollback: %+v", rb)
	}
	if n := c.next("thread.rolledBack", isNote("thread.rolledBack")); n.Params["turnId"] != t2 || n.Params["conversation"] != true {
		t.Fatalf("thread.rolledBack: %s", n.raw)
	}
	_, r = turn(tid, "fifth EPSILON", "five", nil)
	if txt := requestText(r); strings.Contains(txt, "BETA") || strings.Contains(txt, "DELTA") || !strings.Contains(txt, "ALPHA") {
		t.Fatalf("after the rollback: %q", txt)
	}
	ok("thread.turns", map[string]any{"threadId": tid}, &turns)
	if len(turns.Turns) != 4 || !turns.Turns[1].Rewound || !turns.Turns[2].Rewound || turns.Turns[3].Rewound || turns.Turns[0].Rewound {
		t.Fatalf("thread.turns after the rollback: %+v", turns.Turns)
	}

	// Refusals.
	refused("thread.fork", map[string]any{"threadId": "nope"}, CodeThreadNotFound)
	refused("thread.fork", map[string]any{"threadId": tid, "atSeq": 99999}, CodeTurnNotFound)
	refused("thread.fork", map[string]any{"threadId": tid, "atSeq": 1}, CodeTurnNotFound) // thread.created: before any turn
	refused("thread.fork", map[string]any{"threadId": tid, "atSeq": "x"}, CodeInvalidParams)
	refused("thread.rollback", map[string]any{"threadId": tid, "toTurn": "turn_nope"}, CodeTurnNotFound)
	refused("thread.rollback", map[string]any{"threadId": tid}, CodeInvalidParams)
	refused("thread.rollback", map[string]any{"threadId": tid, "toTurn": t1, "conversation": false}, CodeInvalidParams)
	refused("thread.rollback", map[string]any{"threadId": "nope", "toTurn": t1}, CodeThreadNotFound)
	refused("thread.turns", map[string]any{}, CodeInvalidParams)
	// During a turn: busy.
	e.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("word ", 80))}, ChunkSize: 5, ChunkDelay: 20e6})
	var rt struct{ TurnID string }
	ok("turn.start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "slow"}}}, &rt)
	refused("thread.fork", map[string]any{"threadId": tid}, CodeTurnBusy)
	refused("thread.rollback", map[string]any{"threadId": tid, "toTurn": t1}, CodeTurnBusy)
	c.next("the slow turn's end", func(m msg) bool { return m.Method == "turn.completed" && m.Params["turnId"] == rt.TurnID })

	// thread.update before any turn makes the session now: a bad agent is
	// refused at once, a good one runs the first turn.
	tid2 := newThread()
	refused("thread.update", map[string]any{"threadId": tid2, "agent": "NOBODY"}, CodeInvalidParams)
	ok("thread.update", map[string]any{"threadId": tid2, "agent": "BUILDER", "model": map[string]any{"providerID": "anthropic", "modelID": "model-x"}}, nil)
	if _, r = turn(tid2, "hi", "hello", nil); r.Model != "model-x" || !strings.Contains(r.SystemText(), "CODEWORD-FIG") {
		t.Fatalf("a thread updated before its first turn: %q %q", r.Model, r.SystemText())
	}
}

// thread.rollback with files restores the project's files as they were
// before the turn, lists them, and says so in thread.rolledBack.
func TestThreadRollbackFiles(t *testing.T) {
	e := newEnv(t)
	os.WriteFile(filepath.Join(e.cwd, "kept.txt"), []byte("as it was\n"), 0o644)
	e.api.Script(claudetest.TextReply("one"))
	c := e.start(t)
	defer c.close()
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{}, &created)
	tid := created.Thread.ThreadID
	var started struct{ TurnID string }
	c.result(2, "turn.start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "go"}},
		"model": map[string]any{"providerID": "anthropic", "modelID": "m"}}, &started)
	c.next("turn end", isNote("turn.completed"))
	os.WriteFile(filepath.Join(e.cwd, "kept.txt"), []byte("changed\n"), 0o644)
	os.WriteFile(filepath.Join(e.cwd, "new.txt"), []byte("new\n"), 0o644)
	var rb struct {
		Files        []map[string]string
		Conversation bool
	}
	c.result(3, "thread.rollback", map[string]any{"threadId": tid, "toTurn": started.TurnID, "files": true, "conversation": false}, &rb)
	if rb.Conversation || len(rb.Files) != 2 {
		t.Fatalf("thread.rollback: %+v", rb)
	}
	if b, _ := os.ReadFile(filepath.Join(e.cwd, "kept.txt")); string(b) != "as it was\n" {
		t.Fatalf("kept.txt is %q", b)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("new.txt is still there: %v", err)
	}
	n := c.next("thread.rolledBack", isNote("thread.rolledBack"))
	if files := fmt.Sprint(n.Params["files"]); !strings.Contains(files, "kept.txt") || !strings.Contains(files, "new.txt") || n.Params["conversation"] != false {
		t.Fatalf("thread.rolledBack: %s", n.raw)
	}
	// The thread's own history (.harness/threads, inside the project) is
	// not rolled back with the files: it keeps the turn and the rollback.
	var got struct {
		Events []struct {
			Seq    int64  `json:"seq"`
			Method string `json:"method"`
		}
	}
	c.result(4, "thread.get", map[string]any{"threadId": tid}, &got)
	if k := len(got.Events); k < 4 || got.Events[k-1].Method != "thread.rolledBack" || got.Events[1].Method != "turn.started" || got.Events[k-1].Seq != int64(k) {
		t.Fatalf("the thread's history after the rollback: %+v", got.Events)
	}
}

// fakeACP is an ACP engine on the fake agent (this test binary) that does
// not offer session/fork: it can neither fork nor cut a conversation.
func fakeACP(t *testing.T) engine.Engine {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fake, err := acp.NewEngine(acp.Config{Name: "fakeacp", Command: []string{"fakeagent"}, Binary: bin,
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, ExtraEnv: []string{acptest.AgentEnv, "ACPTEST_STATE=" + t.TempDir()},
		StopGrace: 500 * time.Millisecond, InterruptGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return fake
}

// On an engine that cannot fork or cut its conversation, thread.fork and
// thread.rollback are -32005 and change nothing: no thread is added, and
// the next turn still runs on the whole conversation.
func TestThreadControlUnsupported(t *testing.T) {
	e := newEnv(t)
	e.extra = func() []engine.Engine { return []engine.Engine{fakeACP(t)} }
	c := e.start(t)
	defer c.close()
	var created struct{ Thread Thread }
	c.result(1, "thread.create", map[string]any{}, &created)
	tid := created.Thread.ThreadID
	var turnIDs []string
	for i, text := range []string{"first words", "second words"} {
		var r struct{ TurnID string }
		c.result(10+i, "turn.start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": text}},
			"model": map[string]any{"providerID": "fakeacp"}}, &r)
		if end := c.next("turn end", func(m msg) bool {
			return (m.Method == "turn.completed" || m.Method == "turn.error") && m.Params["turnId"] == r.TurnID
		}); end.Method != "turn.completed" {
			t.Fatalf("turn %q: %s", text, end.raw)
		}
		turnIDs = append(turnIDs, r.TurnID)
	}
	if m := c.call(20, "thread.fork", map[string]any{"threadId": tid}); m.Error == nil || m.Error.Code != CodeUnsupported || !strings.Contains(m.Error.Message, "fakeacp") {
		t.Errorf("thread.fork: %s, want -32005 naming the engine", m.raw)
	}
	if m := c.call(21, "thread.rollback", map[string]any{"threadId": tid, "toTurn": turnIDs[1]}); m.Error == nil || m.Error.Code != CodeUnsupported {
		t.Errorf("thread.rollback: %s, want -32005", m.raw)
	}
	var list struct{ Threads []Thread }
	c.result(22, "thread.list", map[string]any{}, &list)
	if len(list.Threads) != 1 {
		t.Errorf("a refused fork left a thread: %+v", list.Threads)
	}
	var turns struct{ Turns []TurnInfo }
	c.result(23, "thread.turns", map[string]any{"threadId": tid}, &turns)
	if len(turns.Turns) != 2 || turns.Turns[1].Rewound {
		t.Errorf("a refused rollback undid a turn: %+v", turns.Turns)
	}
}

// The door's one mapping of the core's errors to codes.
func TestCoreError(t *testing.T) {
	for err, code := range map[error]int{
		harness.ErrBusy:        CodeTurnBusy,
		harness.ErrSeqNotFound: CodeTurnNotFound,
		fmt.Errorf("fork: %w", errors.Join(harness.ErrUnsupported, engine.ErrUnsupported)): CodeUnsupported,
		harness.ErrNotFound: CodeThreadNotFound,
		fmt.Errorf("restore: %w", checkpoint.ErrTooLarge): CodeUnsupported,
		checkpoint.ErrNoGit:              CodeUnsupported,
		harness.ErrPersonaNotFound:       CodeInvalidParams,
		harness.ErrInvalidPermissionMode: CodeInvalidParams,
		harness.ErrBypassRefused:         CodeInvalidParams,
		harness.ErrInvalidEffort:         CodeInvalidParams,
		errors.New("disk on fire"):       CodeInternalError,
		// engine's error set and its kinds, whoever wraps them.
		fmt.Errorf("claudecode: %w", engine.ErrBusy):      CodeTurnBusy,
		engine.ErrNotRunning:                              CodeTurnNotFound,
		harness.ErrNoTurnToSteer:                          CodeTurnNotFound,
		fmt.Errorf("r1: %w", harness.ErrApprovalNotFound): CodeApprovalMissing,
		harness.ErrApprovalResolved:                       CodeApprovalMissing,
		harness.ErrNoPlan:                                 CodeApprovalMissing,
		harness.ErrSteerUnsupported:                       CodeUnsupported,
		harness.ErrInvalidPersona:                         CodeInvalidParams,
		harness.ErrWidens:                                 CodeInvalidParams,
		harness.ErrInvalidTurnOptions:                     CodeInvalidParams,
		harness.ErrQueueFull:                              CodeInvalidParams,
		harness.ErrMessageTooLarge:                        CodeInvalidParams,
		harness.ErrInvalidMCPConfig:                       CodeInvalidParams,
		harness.ErrInvalidPlanDecision:                    CodeInvalidParams,
		harness.ErrEmptyMessage:                           CodeInvalidParams,
		harness.ErrRootNotAllowed:                         CodeInvalidParams,
		harness.ErrNotGitRepo:                             CodeUnsupported, // newSession answers it as invalid params
		harness.ErrClosed:                                 CodeInternalError,
	} {
		if got := coreError(err); got.Code != code || !strings.Contains(got.Message, err.Error()) {
			t.Errorf("%v: %d %q, want %d", err, got.Code, got.Message, code)
		}
	}
}
