package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/child"
	"github.com/chirality/harness/internal/protect"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/permrule"
	"github.com/chirality/harness/sandbox"
)

// MCPStartTimeout bounds the start of each MCP server (connect, initialize
// and tools/list); a server that takes longer is reported failed.
const MCPStartTimeout = 15 * time.Second

// onMCPStarted, when set (benchmarks), is told how long a turn's
// startMCP took.
var onMCPStarted func(time.Duration)

// mcpCloseGrace is how long a stdio server gets after its stdin closes
// before it is killed.
const mcpCloseGrace = 2 * time.Second

// maxMCPResult bounds a tool result's text handed to the model.
const maxMCPResult = 256 << 10

// mcpClients are a turn's MCP servers: started together at the turn's
// start, closed (stdio children ended) when the turn ends, so their
// lifetime is the turn's and they die with the engine's Shutdown, which
// ends every turn.
type mcpClients struct {
	sessions []*mcp.ClientSession
	tools    []Tool
	status   []event.MCPServerStatus
}

// startMCP connects to every server of cfg at once, each within
// MCPStartTimeout, and lists their tools as mcp__SERVER__TOOL. A server
// that fails is reported failed (with why) and left out.
func startMCP(ctx context.Context, cfg *mcpconfig.Config, req engine.Request) *mcpClients {
	c := &mcpClients{}
	if cfg.Len() == 0 {
		return c
	}
	type result struct {
		cs    *mcp.ClientSession
		tools []Tool
		err   error
	}
	results := make([]result, len(cfg.Servers))
	var wg sync.WaitGroup
	for i, s := range cfg.Servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, tools, err := connectMCP(ctx, s, req)
			results[i] = result{cs, tools, err}
		}()
	}
	wg.Wait()
	for i, s := range cfg.Servers {
		r := results[i]
		if r.err != nil {
			c.status = append(c.status, event.MCPServerStatus{Name: s.Name, Status: "failed", Error: secrets.Scrub(r.err.Error())})
			continue
		}
		c.sessions = append(c.sessions, r.cs)
		c.tools = append(c.tools, r.tools...)
		c.status = append(c.status, event.MCPServerStatus{Name: s.Name, Status: "connected"})
	}
	return c
}

// connectMCP starts (stdio) or reaches server s and lists its tools. A
// stdio server runs on the one child runner (internal/child): in a
// process group of its own, its stderr scrubbed and logged, and, for a
// sandboxed turn, in the kernel sandbox as an agent's would (one that
// cannot be sandboxed fails).
func connectMCP(ctx context.Context, s mcpconfig.Server, req engine.Request) (_ *mcp.ClientSession, _ []Tool, err error) {
	ctx, cancel := context.WithTimeout(ctx, MCPStartTimeout)
	defer cancel()
	var transport mcp.Transport
	switch s.Type {
	case mcpconfig.Stdio:
		env := append(secrets.FilterEnv(os.Environ(), nil), req.Env...)
		for _, k := range sortedKeys(s.Env) {
			env = append(env, k+"="+s.Env[k])
		}
		cfg := child.Config{Path: s.Command, Args: s.Args, Env: env, Dir: req.Cwd,
			Secrets: secrets.SecretValues(env), Log: zerolog.Nop(), StderrSource: "mcp server " + s.Name + " stderr"}
		if req.Logger != nil {
			cfg.Log = *req.Logger
		}
		if req.Sandbox {
			// an MCP server calls no model: with its network limited it
			// reaches only its proxy and the session's HTTP MCP servers
			cfg.Sandbox = &sandbox.Spec{Protected: req.Protected, Writable: req.SandboxWritable, Net: sandbox.NetOf(req, env, nil)}
		}
		p, err := child.Start(cfg)
		if se := (*child.StartError)(nil); errors.As(err, &se) {
			return nil, nil, fmt.Errorf("start: %w", se.Err) // as the SDK's transport said it
		} else if err != nil {
			return nil, nil, err
		}
		mc := mcpChild{p}
		defer func() {
			if err != nil {
				_ = mc.Close()
			}
		}()
		transport = &mcp.IOTransport{Reader: mc, Writer: mcpStdin{p}}
	case mcpconfig.HTTP, mcpconfig.SSE:
		client := &http.Client{Transport: headerTransport{headers: s.Headers, base: http.DefaultTransport}}
		if s.Type == mcpconfig.HTTP {
			transport = &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: client}
		} else {
			transport = &mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: client}
		}
	default:
		return nil, nil, fmt.Errorf("unknown MCP server type %q", s.Type)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "harness", Version: "1"}, nil)
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("start: %w", err)
	}
	var tools []Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			_ = cs.Close()
			return nil, nil, fmt.Errorf("tools/list: %w", err)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || t.InputSchema == nil {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		tools = append(tools, &mcpTool{cs: cs, name: mcpconfig.ToolName(s.Name, t.Name), tool: t.Name, desc: t.Description, schema: schema, req: req})
	}
	return cs, tools, nil
}

// mcpChild is a stdio MCP server's process as the SDK's transport reads
// it: its stdout, and a Close that ends it as the MCP specification's
// stdio shutdown says, on the runner's ladder: stdin closed, SIGTERM
// after mcpCloseGrace, SIGKILL as long after (to its whole group).
type mcpChild struct{ p *child.Process }

func (c mcpChild) Read(b []byte) (int, error) { return c.p.Stdout().Read(b) }

func (c mcpChild) Close() error {
	_ = c.p.Stop(child.Ladder{Ask: func() { _ = c.p.Stdin().Close() }, AskGrace: mcpCloseGrace,
		InterruptGrace: -1, TerminateGrace: mcpCloseGrace})
	c.p.Wait()
	return nil
}

// mcpStdin is the server's stdin; closing it is mcpChild's to do.
type mcpStdin struct{ p *child.Process }

func (w mcpStdin) Write(b []byte) (int, error) { return w.p.Stdin().Write(b) }
func (mcpStdin) Close() error                  { return nil }

// close ends every server (stdio children: stdin closed, then SIGTERM
// and SIGKILL, each after mcpCloseGrace).
func (c *mcpClients) close() {
	var wg sync.WaitGroup
	for _, cs := range c.sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = cs.Close()
		}()
	}
	wg.Wait()
}

type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// mcpTool is one MCP server tool, called through its client session.
// Unlike the native read-only tools it may change things, so every call
// goes through the approval path first (approve).
type mcpTool struct {
	cs               *mcp.ClientSession
	name, tool, desc string
	schema           json.RawMessage
	req              engine.Request
	// ask puts a question to req.Approver after the events before it
	// were read (Turn.ask); ok false: not asked, the turn is ending.
	ask func(context.Context, engine.ApprovalRequest) (d engine.ApprovalDecision, ok bool)
}

func (t *mcpTool) Name() string                 { return t.name }
func (t *mcpTool) Description() string          { return t.desc }
func (t *mcpTool) InputSchema() json.RawMessage { return t.schema }

// toolUseIDKey carries the tool use's id into Tool.Execute's context.
type toolUseIDKey struct{}

// errNotAllowed is a call no rule allowed and no one approved.
var errNotAllowed = errors.New("not allowed")

func (t *mcpTool) Execute(ctx context.Context, input json.RawMessage) (string, error) {
	msg, ok := t.approve(ctx, input)
	if !ok {
		return msg, errNotAllowed
	}
	if msg != "" {
		input = json.RawMessage(msg) // the person's edited input
	}
	var args map[string]any
	if err := json.Unmarshal(input, &args); err != nil {
		return "", fmt.Errorf("input: %w", err)
	}
	res, err := t.cs.CallTool(ctx, &mcp.CallToolParams{Name: t.tool, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("%s: %w", t.name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(c.Text)
		default:
			raw, _ := json.Marshal(c)
			b.Write(raw)
		}
	}
	out := b.String()
	if len(out) > maxMCPResult {
		out = out[:maxMCPResult] + "\n[truncated]"
	}
	if res.IsError {
		return out, errors.New(out)
	}
	return out, nil
}

// approve is the approval path of any tool: a rule of AllowedTools
// (permrule, mcp__SERVER__TOOL or mcp__SERVER) or bypassPermissions lets
// the call run; else, in a mode that asks (engine.AsksApproval) with an
// Approver, the person decides; else (dontAsk) it is denied. A call that
// writes a protected path (an MCP tool whose name says it writes, on a
// path of engine.Request.Protected: package internal/protect) is never
// allowed by a rule: asked, or denied.
func (t *mcpTool) approve(ctx context.Context, input json.RawMessage) (string, bool) {
	if t.req.PermissionMode == "bypassPermissions" {
		return "", true
	}
	_, protected := protect.Write(protect.Or(t.req.Protected, t.req.Cwd), t.req.Cwd, t.name, input)
	if !protected && permrule.Allowed(t.req.AllowedTools, t.name, input) {
		return "", true
	}
	if t.req.Approver == nil || !engine.AsksApproval(t.req.PermissionMode) {
		return "permission to use " + t.name + " was denied: no rule allows it", false
	}
	id, _ := ctx.Value(toolUseIDKey{}).(string)
	q := engine.ApprovalRequest{ToolUseID: id, ToolName: t.name, Input: input}
	if t.ask == nil { // not a turn's (benchmarks): nothing orders the question
		return "permission to use " + t.name + " was denied: no one to ask", false
	}
	d, ok := t.ask(ctx, q)
	if !ok {
		return "permission to use " + t.name + " was denied: the turn ended", false
	}
	if d.Allow {
		if len(d.UpdatedInput) > 0 {
			return string(d.UpdatedInput), true
		}
		return "", true
	}
	msg := d.Message
	if msg == "" {
		msg = "the user denied " + t.name
	}
	return msg, false
}
