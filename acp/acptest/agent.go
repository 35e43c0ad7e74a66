// Package acptest is a fake Agent Client Protocol agent for tests: a
// program that serves ACP (protocol 1) on stdio, scripted by the words of
// each prompt, so that a test can drive an ACP client through the hard
// cases without a real agent or a model.
//
// Run it by re-executing the test binary (TestMain dispatch):
//
//	func TestMain(m *testing.M) {
//		if acptest.IsAgent() {
//			acptest.Main() // serves ACP on stdin/stdout, then exits
//		}
//		os.Exit(m.Run())
//	}
//
// and start os.Args[0] with acptest.AgentEnv in its environment; or run
// the small command in acptest/cmd/fakeacp.
//
// A prompt's text picks the behaviour (the first word that matches):
//
//	crash       one chunk, then the process exits (status 3) mid-turn
//	unknown     update kinds no client knows, then an answer
//	unserved    a request the client does not serve (fs/read_text_file);
//	            the answer says what came back ("unserved: -32601")
//	hang        never answers the prompt, not even after session/cancel
//	slow        streams slowly until cancelled, then answers "cancelled"
//	permission  a tool call that asks permission; runs when allowed
//	            ("ran"), fails when rejected ("denied"), and the prompt
//	            ends "cancelled" when the answer is cancelled
//	lateinput   a tool call whose input arrives in a later update
//	plan        a plan, then an answer
//	refuse      stopReason refusal
//	selfcancel  one chunk, then stopReason cancelled though the client
//	            did not cancel; the session then answers no prompt (as
//	            Copilot 1.0.102 after its ACP event stream lagged)
//	stream N    N chunks of text (benchmarks)
//	recall      answers with the session's previous prompt
//	settings    answers "mode=MODE model=MODEL", the session's current
//	            mode (session/set_mode) and model (the "model" config
//	            option, session/set_config_option: fake-a or fake-b)
//	history     answers "history: P1 | P2 | …", every prompt of the
//	            session before this one (a fork's copied ones first)
//	mcp         answers "mcp: S1 | S2 | …", the MCP servers the session
//	            got (session/new, load or fork), each "NAME stdio COMMAND
//	            ARGS… env K=V…" or "NAME http URL headers K=V…"
//	(else)      a thought, then "echo: TEXT" in chunks
//
// The agent is strict where the spec is: requests with fields it does not
// know are refused with "invalid params" (a client that sends non-spec
// fields fails its tests). It advertises loadSession, keeping each
// session's prompts in $ACPTEST_STATE (a directory) when set. With
// ACPTEST_FORK=1 (Agent.Fork) it also advertises the unstable
// session/fork (sessionCapabilities.fork) and serves it: a new session
// with a copy of the source's prompts; without, session/fork is "method
// not found", as from an agent that does not offer it. mcpServers are
// checked against the spec's shapes; with ACPTEST_MCP_HTTP=1 (MCPHTTP) it
// advertises mcpCapabilities.http and takes http entries, without it an
// http or sse entry is refused.
package acptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// AgentEnv is the variable that makes IsAgent true in a re-executed test
// binary.
const AgentEnv = "ACPTEST_AGENT=1"

// IsAgent reports whether this process was started as the fake agent.
func IsAgent() bool { return os.Getenv("ACPTEST_AGENT") == "1" }

// Main serves ACP on stdin and stdout until stdin ends, then exits.
func Main() {
	a := &Agent{StateDir: os.Getenv("ACPTEST_STATE"), Fork: os.Getenv("ACPTEST_FORK") == "1", MCPHTTP: os.Getenv("ACPTEST_MCP_HTTP") == "1"}
	err := a.Serve(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "acptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Agent is the fake agent. The zero value works (sessions in memory).
type Agent struct {
	// StateDir, when set, keeps each session's prompts on disk so another
	// process can session/load it.
	StateDir string
	// Fork advertises and serves session/fork.
	Fork bool
	// MCPHTTP advertises mcpCapabilities.http (not sse).
	MCPHTTP bool

	conn  *sdk.Connection
	ready chan struct{} // closed once conn is set

	mu       sync.Mutex
	sessions map[string][]string // prompts by session id
	cancels  map[string]context.CancelFunc
	dead     map[string]bool // sessions that answer no prompt (selfcancel)
	settings map[string]*settings
	mcp      map[string][]string // each session's MCP servers, described
	next     int
}

// Serve serves one client on in/out until in ends.
func (a *Agent) Serve(in io.Reader, out io.Writer) error {
	a.sessions = map[string][]string{}
	a.cancels = map[string]context.CancelFunc{}
	a.dead = map[string]bool{}
	a.settings = map[string]*settings{}
	a.mcp = map[string][]string{}
	a.ready = make(chan struct{})
	a.conn = sdk.NewConnection(a.handle, out, in)
	close(a.ready)
	<-a.conn.Done()
	return nil
}

func strict(params json.RawMessage, v any) *sdk.RequestError {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	return nil
}

func (a *Agent) handle(ctx context.Context, method string, params json.RawMessage) (any, *sdk.RequestError) {
	<-a.ready
	switch method {
	case "initialize":
		var p struct {
			ProtocolVersion    int `json:"protocolVersion"`
			ClientCapabilities struct {
				Fs struct {
					ReadTextFile  bool `json:"readTextFile"`
					WriteTextFile bool `json:"writeTextFile"`
				} `json:"fs"`
				Terminal bool `json:"terminal"`
			} `json:"clientCapabilities"`
			ClientInfo *struct {
				Name    string `json:"name"`
				Title   string `json:"title"`
				Version string `json:"version"`
			} `json:"clientInfo"`
		}
		if err := strict(params, &p); err != nil {
			return nil, err
		}
		caps := map[string]any{"loadSession": true}
		if a.MCPHTTP {
			caps["mcpCapabilities"] = map[string]any{"http": true, "sse": false}
		}
		if a.Fork {
			caps["sessionCapabilities"] = map[string]any{"fork": map[string]any{}}
		}
		return map[string]any{
			"protocolVersion":   1,
			"agentCapabilities": caps,
			"agentInfo":         map[string]any{"name": "acptest", "version": "0.1.0"},
			"authMethods":       []any{},
		}, nil
	case "session/new":
		var p struct {
			Cwd        string            `json:"cwd"`
			McpServers []json.RawMessage `json:"mcpServers"`
		}
		if err := strict(params, &p); err != nil {
			return nil, err
		}
		if p.Cwd == "" || p.McpServers == nil {
			return nil, sdk.NewInvalidParams("cwd and mcpServers are required")
		}
		servers, rerr := a.mcpServers(p.McpServers)
		if rerr != nil {
			return nil, rerr
		}
		res := a.newSession(nil)
		a.setMCP(res["sessionId"].(string), servers)
		return res, nil
	case "session/fork":
		if !a.Fork {
			break // method not found
		}
		var p struct {
			SessionID  string            `json:"sessionId"`
			Cwd        string            `json:"cwd"`
			McpServers []json.RawMessage `json:"mcpServers"`
		}
		if err := strict(params, &p); err != nil {
			return nil, err
		}
		if p.Cwd == "" {
			return nil, sdk.NewInvalidParams("cwd is required")
		}
		prompts, ok := a.loadState(p.SessionID)
		if !ok {
			return nil, sdk.NewInvalidParams("unknown session " + p.SessionID)
		}
		servers, rerr := a.mcpServers(p.McpServers)
		if rerr != nil {
			return nil, rerr
		}
		res := a.newSession(prompts)
		a.setMCP(res["sessionId"].(string), servers)
		return res, nil
	case "session/load":
		var p struct {
			SessionID  string            `json:"sessionId"`
			Cwd        string            `json:"cwd"`
			McpServers []json.RawMessage `json:"mcpServers"`
		}
		if err := strict(params, &p); err != nil {
			return nil, err
		}
		prompts, ok := a.loadState(p.SessionID)
		if !ok {
			return nil, sdk.NewInvalidParams("unknown session " + p.SessionID)
		}
		servers, rerr := a.mcpServers(p.McpServers)
		if rerr != nil {
			return nil, rerr
		}
		a.setMCP(p.SessionID, servers)
		a.mu.Lock()
		a.sessions[p.SessionID] = prompts
		a.mu.Unlock()
		for _, pr := range prompts { // the history, replayed
			a.update(p.SessionID, map[string]any{"sessionUpdate": "user_message_chunk", "content": text(pr)})
		}
		st := a.set(p.SessionID, nil) // a new process: the defaults
		return setup(st), nil
	case "session/set_mode":
		var p struct {
			SessionID string `json:"sessionId"`
			ModeID    string `json:"modeId"`
		}
		if err := strict(params, &p); err != nil {
			return nil, err
		}
		if p.ModeID != "default" && p.ModeID != "plan" {
			return nil, sdk.NewInvalidParams("unknown mode " + p.ModeID)
		}
		a.set(p.SessionID, func(st *settings) { st.mode = p.ModeID })
		return map[string]any{}, nil
	case "session/set_config_option":
		var p struct {
			SessionID string `json:"sessionId"`
			ConfigID  string `json:"configId"`
			Value     string `json:"value"`
		}
		if err := strict(params, &p); err != nil {
			return nil, err
		}
		if p.ConfigID != "model" || (p.Value != "fake-a" && p.Value != "fake-b") {
			return nil, sdk.NewInvalidParams("unknown option or value " + p.ConfigID + "=" + p.Value)
		}
		st := a.set(p.SessionID, func(st *settings) { st.model = p.Value })
		return map[string]any{"configOptions": []any{modelOption(st.model)}}, nil
	case "session/cancel":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if err := strict(params, &p); err != nil {
			return nil, err
		}
		a.mu.Lock()
		if c := a.cancels[p.SessionID]; c != nil {
			c()
		}
		a.mu.Unlock()
		return nil, nil
	case "session/prompt":
		var p struct {
			SessionID string `json:"sessionId"`
			Prompt    []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"prompt"`
		}
		if err := strict(params, &p); err != nil {
			return nil, err
		}
		a.mu.Lock()
		prev, ok := a.sessions[p.SessionID]
		dead := a.dead[p.SessionID]
		a.mu.Unlock()
		if !ok {
			return nil, sdk.NewInvalidParams("unknown session " + p.SessionID)
		}
		if dead {
			<-ctx.Done() // never answered; the client must stop us
			return nil, nil
		}
		var texts []string
		for _, b := range p.Prompt {
			texts = append(texts, b.Text)
		}
		msg := texts[len(texts)-1]
		pctx, cancel := context.WithCancel(ctx)
		a.mu.Lock()
		a.cancels[p.SessionID] = cancel
		a.sessions[p.SessionID] = append(prev, strings.Join(texts, "\n"))
		a.mu.Unlock()
		a.saveState(p.SessionID)
		defer func() {
			a.mu.Lock()
			delete(a.cancels, p.SessionID)
			a.mu.Unlock()
			cancel()
		}()
		return a.turn(pctx, p.SessionID, msg, texts, prev)
	}
	return nil, sdk.NewMethodNotFound(method)
}

// newSession makes a session holding prompts (a fork's copy) and
// answers as session/new does.
func (a *Agent) newSession(prompts []string) map[string]any {
	a.mu.Lock()
	a.next++
	id := "fake-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(a.next)
	a.sessions[id] = append([]string{}, prompts...)
	a.mu.Unlock()
	if prompts != nil {
		a.saveState(id) // a fork can be loaded before its first prompt
	}
	res := setup(a.set(id, nil))
	res["sessionId"] = id
	return res
}

// setup is what session/new, session/load and session/fork tell of a
// session's modes and configuration options.
func setup(st settings) map[string]any {
	return map[string]any{"modes": map[string]any{
		"currentModeId":  st.mode,
		"availableModes": []any{map[string]any{"id": "default", "name": "Default"}, map[string]any{"id": "plan", "name": "Plan"}},
	}, "configOptions": []any{modelOption(st.model)}}
}

// settings are a session's mode and model.
type settings struct{ mode, model string }

// set applies f (when not nil) to sid's settings (the defaults until
// set) and returns them.
func (a *Agent) set(sid string, f func(*settings)) settings {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.settings[sid]
	if st == nil {
		st = &settings{mode: "default", model: "fake-a"}
		a.settings[sid] = st
	}
	if f != nil {
		f(st)
	}
	return *st
}

// modelOption is the session's "model" configuration option.
func modelOption(current string) map[string]any {
	return map[string]any{"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": current,
		"options": []any{map[string]any{"value": "fake-a", "name": "Fake A"}, map[string]any{"value": "fake-b", "name": "Fake B"}}}
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func (a *Agent) update(sid string, u map[string]any) {
	_ = a.conn.SendNotification(context.Background(), "session/update", map[string]any{"sessionId": sid, "update": u})
}

func (a *Agent) chunks(sid, s string) {
	for len(s) > 0 {
		n := min(8, len(s))
		a.update(sid, map[string]any{"sessionUpdate": "agent_message_chunk", "content": text(s[:n]), "messageId": "m1"})
		s = s[n:]
	}
}

func end(reason string) (any, *sdk.RequestError) {
	return map[string]any{"stopReason": reason, "usage": map[string]any{"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}}, nil
}

// behaviours are the words a prompt picks a script with (package doc).
var behaviours = map[string]bool{"crash": true, "unknown": true, "unserved": true, "hang": true, "slow": true,
	"permission": true, "lateinput": true, "plan": true, "refuse": true, "selfcancel": true, "stream": true, "recall": true, "history": true, "settings": true, "mcp": true}

// turn runs one prompt's script.
func (a *Agent) turn(ctx context.Context, sid, msg string, all, prev []string) (any, *sdk.RequestError) {
	// The first word that names a behaviour picks it (a daemon's mention
	// prompt starts "[IRC @mention in #a] <bob> @nick", so the first word
	// alone would never match); f starts there, for stream's N.
	f := strings.Fields(msg)
	word := ""
	for i, w := range f {
		if behaviours[w] {
			word, f = w, f[i:]
			break
		}
	}
	switch word {
	case "crash":
		a.chunks(sid, "about to crash") // written to the pipe before we go
		os.Exit(3)
	case "unknown":
		a.update(sid, map[string]any{"sessionUpdate": "brand_new_kind", "whatever": []int{1, 2}})
		a.update(sid, map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "hologram", "data": "x"}})
		a.update(sid, map[string]any{"sessionUpdate": "current_mode_update", "currentModeId": "plan"})
		a.update(sid, map[string]any{"sessionUpdate": "tool_call", "toolCallId": 7})
		a.chunks(sid, "still here")
		return end("end_turn")
	case "unserved":
		_, err := sdk.SendRequest[json.RawMessage](a.conn, ctx, "fs/read_text_file", map[string]any{"sessionId": sid, "path": "/etc/hostname"})
		got := "answered"
		var re *sdk.RequestError
		if asRequestError(err, &re) {
			got = strconv.Itoa(re.Code)
		}
		a.chunks(sid, "unserved: "+got)
		return end("end_turn")
	case "hang":
		select {} // never answers; the client must stop us
	case "slow":
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return end("cancelled")
			case <-time.After(20 * time.Millisecond):
				a.chunks(sid, ".")
			}
		}
	case "permission":
		id := "call_perm"
		a.update(sid, map[string]any{"sessionUpdate": "tool_call", "toolCallId": id, "title": "touch marker", "kind": "execute", "status": "pending", "rawInput": map[string]any{"command": "touch marker"}})
		res, err := sdk.SendRequest[struct {
			Outcome struct {
				Outcome  string `json:"outcome"`
				OptionID string `json:"optionId"`
			} `json:"outcome"`
		}](a.conn, context.Background(), "session/request_permission", map[string]any{
			"sessionId": sid,
			"toolCall":  map[string]any{"toolCallId": id, "title": "touch marker", "kind": "execute", "rawInput": map[string]any{"command": "touch marker"}},
			"options": []any{
				map[string]any{"optionId": "yes", "kind": "allow_once", "name": "Allow"},
				map[string]any{"optionId": "always", "kind": "allow_always", "name": "Always allow"},
				map[string]any{"optionId": "no", "kind": "reject_once", "name": "Reject"},
			},
		})
		switch {
		case err != nil:
			return nil, sdk.NewInternalError(err.Error())
		case res.Outcome.Outcome == "cancelled":
			a.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "failed", "content": []any{map[string]any{"type": "content", "content": text("cancelled")}}})
			return end("cancelled")
		case res.Outcome.OptionID == "yes" || res.Outcome.OptionID == "always":
			a.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "in_progress"})
			a.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed", "content": []any{map[string]any{"type": "content", "content": text("ran (" + res.Outcome.OptionID + ")")}}})
			a.chunks(sid, "the tool ran")
		default:
			a.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "failed", "content": []any{map[string]any{"type": "content", "content": text("denied")}}})
			a.chunks(sid, "the tool was denied")
		}
		return end("end_turn")
	case "lateinput":
		id := "call_late"
		a.update(sid, map[string]any{"sessionUpdate": "tool_call", "toolCallId": id, "title": "Terminal", "kind": "execute", "status": "pending", "rawInput": map[string]any{}})
		a.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "rawInput": map[string]any{"command": "ls"}})
		a.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "rawInput": map[string]any{"command": "ls -l"}, "title": "ls -l"})
		a.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed", "content": []any{map[string]any{"type": "content", "content": text("a.txt")}}})
		a.update(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed"})
		a.chunks(sid, "listed")
		return end("end_turn")
	case "plan":
		a.update(sid, map[string]any{"sessionUpdate": "plan", "entries": []any{
			map[string]any{"content": "read", "priority": "high", "status": "completed"},
			map[string]any{"content": "write", "priority": "medium", "status": "pending"},
		}})
		a.chunks(sid, "planned")
		return end("end_turn")
	case "refuse":
		return end("refusal")
	case "selfcancel":
		a.chunks(sid, "partial")
		a.mu.Lock()
		a.dead[sid] = true
		a.mu.Unlock()
		return end("cancelled")
	case "stream":
		n := 1000
		if len(f) > 1 {
			n, _ = strconv.Atoi(f[1])
		}
		for i := 0; i < n; i++ {
			a.update(sid, map[string]any{"sessionUpdate": "agent_message_chunk", "content": text("tok "), "messageId": "m1"})
		}
		return end("end_turn")
	case "recall":
		last := "(nothing)"
		if len(prev) > 0 {
			last = prev[len(prev)-1]
		}
		a.chunks(sid, "you said: "+last)
		return end("end_turn")
	case "settings":
		st := a.set(sid, nil)
		a.chunks(sid, "mode="+st.mode+" model="+st.model)
		return end("end_turn")
	case "history":
		a.chunks(sid, "history: "+strings.Join(prev, " | "))
		return end("end_turn")
	case "mcp":
		a.mu.Lock()
		got := a.mcp[sid]
		a.mu.Unlock()
		a.chunks(sid, "mcp: "+strings.Join(got, " | "))
		return end("end_turn")
	}
	a.update(sid, map[string]any{"sessionUpdate": "agent_thought_chunk", "content": text("thinking")})
	a.chunks(sid, "echo: "+strings.Join(all, " | "))
	return end("end_turn")
}

func asRequestError(err error, re **sdk.RequestError) bool {
	if e, ok := err.(*sdk.RequestError); ok {
		*re = e
		return true
	}
	return false
}

func (a *Agent) statePath(sid string) string {
	return filepath.Join(a.StateDir, filepath.Base(sid)+".json")
}

func (a *Agent) saveState(sid string) {
	if a.StateDir == "" {
		return
	}
	a.mu.Lock()
	b, _ := json.Marshal(a.sessions[sid])
	a.mu.Unlock()
	_ = os.WriteFile(a.statePath(sid), b, 0o600)
}

func (a *Agent) loadState(sid string) ([]string, bool) {
	a.mu.Lock()
	if p, ok := a.sessions[sid]; ok {
		a.mu.Unlock()
		return p, true
	}
	a.mu.Unlock()
	if a.StateDir == "" {
		return nil, false
	}
	b, err := os.ReadFile(a.statePath(sid))
	if err != nil {
		return nil, false
	}
	var p []string
	if json.Unmarshal(b, &p) != nil {
		return nil, false
	}
	return p, true
}

// mcpServers checks a session request's mcpServers as strictly as the
// spec reads (a stdio entry: name, command, args, env; http and sse:
// type, name, url, headers; http only when advertised; no other field)
// and describes each one: "NAME stdio COMMAND ARGS… env K=V…" or
// "NAME http URL headers K=V…".
func (a *Agent) mcpServers(raw []json.RawMessage) ([]string, *sdk.RequestError) {
	var out []string
	for _, r := range raw {
		var kind struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(r, &kind)
		switch kind.Type {
		case "":
			var s struct {
				Name    string   `json:"name"`
				Command string   `json:"command"`
				Args    []string `json:"args"`
				Env     []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"env"`
			}
			if err := strict(r, &s); err != nil {
				return nil, err
			}
			if s.Name == "" || s.Command == "" || s.Args == nil || s.Env == nil {
				return nil, sdk.NewInvalidParams("a stdio MCP server needs name, command, args and env")
			}
			d := append([]string{s.Name, "stdio", s.Command}, s.Args...)
			d = append(d, "env")
			for _, e := range s.Env {
				d = append(d, e.Name+"="+e.Value)
			}
			out = append(out, strings.Join(d, " "))
		case "http":
			if !a.MCPHTTP {
				return nil, sdk.NewInvalidParams("an http MCP server, but mcpCapabilities.http was not advertised")
			}
			var s struct {
				Type    string `json:"type"`
				Name    string `json:"name"`
				URL     string `json:"url"`
				Headers []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"headers"`
			}
			if err := strict(r, &s); err != nil {
				return nil, err
			}
			if s.Name == "" || s.URL == "" || s.Headers == nil {
				return nil, sdk.NewInvalidParams("an http MCP server needs name, url and headers")
			}
			d := []string{s.Name, "http", s.URL, "headers"}
			for _, h := range s.Headers {
				d = append(d, h.Name+"="+h.Value)
			}
			out = append(out, strings.Join(d, " "))
		default:
			return nil, sdk.NewInvalidParams("an MCP server of type " + kind.Type + ", which was not advertised")
		}
	}
	return out, nil
}

func (a *Agent) setMCP(sid string, servers []string) {
	a.mu.Lock()
	a.mcp[sid] = servers
	a.mu.Unlock()
}
