package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/lazyre"
	"github.com/chirality/harness/internal/procgroup"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/internal/turns"
	"github.com/chirality/harness/sandbox"
)

// Kind is the engine kind of every ACP engine (engine.Status.Kind).
const Kind = "acp"

// Config configures one ACP engine: one agent command under one name.
// The zero value is not usable: Name and Command are required. NewEngine
// copies it.
type Config struct {
	// Name is the engine's name as sessions store it ("opencode").
	Name string
	// Command is the agent's argv: Command[0] is the executable's name,
	// found by engine.FindBinary (Binary, then $EnvVar, PATH,
	// ./node_modules/.bin); the rest are its arguments ("acp").
	Command []string
	// Binary is an explicit path to Command[0] ("" = search).
	Binary string
	// EnvVar is the variable naming the binary ("" =
	// HARNESS_<NAME>_BIN, the name upper-cased with - as _).
	EnvVar string
	// Install says how to get the agent, for Check's reason.
	Install string
	// Env is the base environment of every child (nil = os.Environ()). It
	// is filtered with secrets.FilterEnv's rules: secret-looking
	// variables are withheld except Credentials and AllowEnv.
	Env []string
	// Credentials are the agent's own documented credential variables,
	// passed through the filter (ANTHROPIC_API_KEY for the agents that
	// call Anthropic, COPILOT_PROVIDER_API_KEY…).
	Credentials []string
	// AllowEnv are more secret-looking names to pass (operator policy).
	AllowEnv []string
	// SessionMeta, when set, returns the _meta sent with session/new and
	// session/load for a turn (its permission mode, protected paths): the
	// built-in claude-acp entry's ClaudeACPSessionMeta. Not read from an
	// engines file.
	SessionMeta func(req engine.Request) map[string]any
	// NoStdioMCP says the agent refuses stdio MCP servers from its client,
	// though ACP has every agent take them (Copilot 1.0.102: "Rejecting
	// non-http/sse MCP server" in its log, and the server's tools never
	// reach the model): they are not sent, and session:init reports them
	// failed with why. Not read from an engines file.
	NoStdioMCP bool
	// MCPEnv, when set, adjusts the environment the session's agent is
	// started with for the first turn's request (its MCP servers and
	// permission mode): the built-in opencode entry's OpenCodeEnv. Not
	// read from an engines file.
	MCPEnv func(env []string, req engine.Request) []string
	// ExtraEnv entries (KEY=VALUE) are added after filtering (an engine
	// entry's env:); a Request's Env comes after them.
	ExtraEnv []string
	// Logger receives the engine's logs and the agents' stderr lines
	// (nil = none; a Request's Logger wins for its turn).
	Logger *zerolog.Logger
	// StopGrace bounds each step of stopping an agent: stdin closed, then
	// SIGINT, SIGTERM, SIGKILL to its group (default 2s).
	StopGrace time.Duration
	// InterruptGrace is how long an interrupted turn waits for the
	// agent's answer to session/cancel before its process is stopped
	// (default 5s).
	InterruptGrace time.Duration
	// IdleTimeout stops a session's agent after this long without a
	// turn (default 30 minutes); its next turn starts a new process and
	// loads the session when the agent can.
	IdleTimeout time.Duration
	// Fork says whether the agent offers session/fork before any of its
	// processes answered initialize (Controls, GET /engines); once one
	// did, its answer decides. The built-in entries set what their
	// pinned versions advertise. Not read from an engines file: another
	// agent's fork is known after its first turn.
	Fork bool
	// Steer says the same of steering (InitializeResponse
	// _meta.steering.supported: the agent takes _session/steering).
	Steer bool
	// PortFlag is the flag that sets the loopback TCP port the agent
	// listens on and talks to itself through (opencode's --port). When
	// its network is sandboxed, the engine picks a free port, passes it
	// with this flag and lets the agent bind and connect to it. Not read
	// from an engines file.
	PortFlag string
}

// Engine runs the turns of one ACP agent command. One agent process per
// session, kept between turns (see the package doc). Safe for concurrent
// use.
type Engine struct {
	cfg Config
	tap func(dir string, b []byte) // tests only: raw bytes "out" to and "in" from agents

	// turns holds the running turns by session key (busy, closed,
	// shutdown: the engines' one registry). Lock order: mu, then the
	// registry's own lock; a turn's start and an idle agent's expiry
	// hold mu, so neither sees the other half done.
	turns turns.Registry[*Turn]

	forks atomic.Int32 // session/fork as the last initialize answer said: 0 unknown, 1 yes, 2 no
	steer atomic.Int32 // steering, the same way

	mu       sync.Mutex
	versions map[string]string // Check's: binary path and mtime → version
	procs    map[string]*proc  // by session key
}

var _ engine.Engine = (*Engine)(nil)

// ErrConfig is wrapped by NewEngine's errors.
var ErrConfig = errors.New("acp: bad engine config")

var nameRE = lazyre.New(`^[a-z0-9][a-z0-9._-]*$`)

// NewEngine checks cfg and returns an engine; it starts nothing until a
// turn.
func NewEngine(cfg Config) (*Engine, error) {
	if !nameRE.MatchString(cfg.Name) {
		return nil, fmt.Errorf("%w: name %q must be lower-case letters, digits, '.', '_' or '-'", ErrConfig, cfg.Name)
	}
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, fmt.Errorf("%w: engine %q has no command", ErrConfig, cfg.Name)
	}
	cfg.Command = slices.Clone(cfg.Command)
	cfg.Credentials = slices.Clone(cfg.Credentials)
	cfg.AllowEnv = slices.Clone(cfg.AllowEnv)
	cfg.ExtraEnv = slices.Clone(cfg.ExtraEnv)
	if cfg.Env != nil {
		cfg.Env = slices.Clone(cfg.Env)
	}
	if cfg.EnvVar == "" {
		cfg.EnvVar = BinEnvVar(cfg.Name)
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 2 * time.Second
	}
	if cfg.InterruptGrace <= 0 {
		cfg.InterruptGrace = 5 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Minute
	}
	return &Engine{cfg: cfg, procs: map[string]*proc{}, versions: map[string]string{}}, nil
}

// BinEnvVar is the variable that names an engine's binary:
// HARNESS_<NAME>_BIN with the name upper-cased and '-', '.' as '_'
// (claude-acp → HARNESS_CLAUDE_ACP_BIN).
func BinEnvVar(name string) string {
	r := strings.NewReplacer("-", "_", ".", "_")
	return "HARNESS_" + strings.ToUpper(r.Replace(name)) + "_BIN"
}

// Name returns the engine's name.
func (e *Engine) Name() string { return e.cfg.Name }

func (e *Engine) binary() (string, error) {
	return engine.FindBinary(engine.Binary{Name: e.cfg.Command[0], Explicit: e.cfg.Binary, EnvVar: e.cfg.EnvVar, Install: e.cfg.Install})
}

// Check reports whether the agent's binary is found and its version
// (the last field of `BINARY --version`'s first line, run with stdin
// closed and a 10s bound; remembered while the binary is unchanged).
func (e *Engine) Check(ctx context.Context) engine.Status {
	st := engine.Status{Name: e.cfg.Name, Kind: Kind}
	bin, err := e.binary()
	if err != nil {
		st.Reason = err.Error()
		return st
	}
	st.Available = true
	key := bin
	if fi, err := os.Stat(bin); err == nil {
		key += "\x00" + fi.ModTime().String()
	}
	e.mu.Lock()
	v, ok := e.versions[key]
	e.mu.Unlock()
	if ok {
		st.Version = v
		return st
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	procgroup.Set(cmd)
	cmd.Cancel = func() error { return procgroup.Signal(cmd.Process.Pid, procgroup.Kill) }
	cmd.WaitDelay = time.Second
	cmd.Env = e.childEnv(nil)
	if out, err := cmd.Output(); err == nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		if f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(first), ".")); len(f) > 0 {
			st.Version = strings.TrimSuffix(f[len(f)-1], ".")
			e.mu.Lock()
			e.versions[key] = st.Version // an agent's start costs seconds: ask once
			e.mu.Unlock()
		}
	}
	return st
}

// ChildEnv is the environment an agent gets: base filtered with
// secrets.FilterEnv's rules (secret-looking variables withheld except
// the allow names), then extra. secrets.FilterEnv always lets
// ANTHROPIC_API_KEY through; ChildEnv withholds it unless allow names it
// (an agent that does not call Anthropic does not get the key).
func ChildEnv(base, extra, allow []string) []string {
	keepAnthropic := slices.Contains(allow, "ANTHROPIC_API_KEY")
	var out []string
	for _, kv := range secrets.FilterEnv(base, allow) {
		if !keepAnthropic && strings.HasPrefix(kv, "ANTHROPIC_API_KEY=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

func (e *Engine) childEnv(reqEnv []string) []string {
	base := e.cfg.Env
	if base == nil {
		base = os.Environ()
	}
	allow := append(slices.Clone(e.cfg.Credentials), e.cfg.AllowEnv...)
	return ChildEnv(base, append(slices.Clone(e.cfg.ExtraEnv), reqEnv...), allow)
}

// StartTurn starts one turn. The session's agent process is reused when
// it runs, else started (the handshake and the session's set-up happen
// in the stream; a failure there ends it with session:error kind start).
// ctx bounds the start only (engine.Engine's rule): once StartTurn
// returned, the turn stops by its end, Interrupt, Kill or Shutdown.
func (e *Engine) StartTurn(ctx context.Context, req engine.Request) (engine.Turn, error) {
	return e.start(ctx, req)
}

// ForkNow implements engine.Forker: the agent of req.SessionKey (started
// now) sends session/fork of req.Resume and keeps the copy, which that
// key's next turn prompts (with Request.Resume, the returned id); nothing
// is prompted now. An agent that cannot fork fails as StartTurn would.
func (e *Engine) ForkNow(ctx context.Context, req engine.Request) (string, error) {
	if req.Resume == "" {
		return "", fmt.Errorf("%w: acp: fork without a conversation", engine.ErrUnsupported)
	}
	req.Fork, req.Message, req.Approver = true, "", nil
	t, err := e.startTurn(ctx, req, true)
	if err != nil {
		return "", err
	}
	defer t.Close()
	// ForkNow waits for the fork: ctx bounds the wait, and so the fork.
	defer context.AfterFunc(ctx, func() { _ = t.Kill() })()
	id := ""
	for t.Next() {
		if ev := t.Event(); ev.Type == event.TypeSessionInit && ev.Init != nil {
			id = ev.Init.ConversationID
		}
	}
	if err := t.Err(); err != nil {
		return "", err
	}
	if id == "" {
		return "", errors.New("acp: session/fork gave no session id")
	}
	return id, nil
}

func (e *Engine) start(ctx context.Context, req engine.Request) (*Turn, error) {
	return e.startTurn(ctx, req, false)
}

// startTurn starts a turn; forkOnly sets the session up (session/fork)
// and ends there, without a prompt (ForkNow).
func (e *Engine) startTurn(ctx context.Context, req engine.Request, forkOnly bool) (*Turn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.SessionKey == "" {
		return nil, errors.New("acp: empty session key")
	}
	if err := e.checkControls(req); err != nil {
		return nil, err
	}
	log := e.cfg.Logger
	if req.Logger != nil {
		log = req.Logger
	}
	t := newTurn(e, req, log)
	t.forkOnly = forkOnly
	e.mu.Lock()
	if err := e.turns.Add(req.SessionKey, t); err != nil {
		e.mu.Unlock()
		t.cancel()
		return nil, err
	}
	p := e.procs[req.SessionKey]
	var stale *proc
	if p != nil && p.alive() && p.sandboxed != req.Sandbox {
		stale = p // started with the other sandbox setting: never reused
	}
	if p != nil && (!p.alive() || stale != nil) {
		delete(e.procs, req.SessionKey)
		p = nil
	}
	if p != nil {
		p.stopIdle()
	}
	e.mu.Unlock()

	if stale != nil {
		stale.stop()
	}
	if p == nil {
		bin, err := e.binary()
		if err != nil {
			e.removeTurn(t)
			return nil, err
		}
		env := e.childEnv(req.Env)
		if e.cfg.MCPEnv != nil {
			env = e.cfg.MCPEnv(env, req)
		}
		args := e.cfg.Command[1:]
		var box *sandbox.Spec
		if req.Sandbox {
			box = &sandbox.Spec{Protected: req.Protected, Writable: append(stateDirs(env), req.SandboxWritable...), Net: sandbox.NetOf(req, env, nil, modelURLs(env)...)}
			if box.Net != nil && e.cfg.PortFlag != "" {
				port, err := freePort()
				if err != nil {
					e.removeTurn(t)
					return nil, fmt.Errorf("acp: start %s: %w", e.cfg.Name, err)
				}
				args = append(slices.Clip(args), e.cfg.PortFlag, strconv.Itoa(int(port)))
				box.Net.Bind = append(box.Net.Bind, port)
				box.Net.Connect = append(box.Net.Connect, port)
			}
		}
		p, err = spawn(e, req.SessionKey, bin, args, env, req.Cwd, box, t.log)
		if err != nil {
			e.removeTurn(t)
			return nil, fmt.Errorf("acp: start %s: %w", e.cfg.Name, err)
		}
		e.mu.Lock()
		e.procs[req.SessionKey] = p
		e.mu.Unlock()
	}
	t.begin(p)
	return t, nil
}

func (e *Engine) removeTurn(t *Turn) { e.turns.Remove(t.req.SessionKey, t) }

// dropProc forgets p if it is still the session's process.
func (e *Engine) dropProc(p *proc) {
	e.mu.Lock()
	if e.procs[p.key] == p {
		delete(e.procs, p.key)
	}
	e.mu.Unlock()
}

// idle arms p's idle expiry once its turn ended.
func (e *Engine) idle(p *proc) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.turns.Closed() || e.procs[p.key] != p {
		return
	}
	p.armIdle(e.cfg.IdleTimeout, func() {
		e.mu.Lock()
		if _, busy := e.turns.Get(p.key); busy || e.procs[p.key] != p {
			e.mu.Unlock()
			return
		}
		delete(e.procs, p.key)
		e.mu.Unlock()
		p.log.Info().Str("reason", "idle").Msg("acp: stopping the session's agent")
		p.stop()
	})
}

// Close ends the session's running turn (killed) and stops its agent
// process, waiting for both. The core calls it when a session is deleted.
// Safe to call more than once, for any key.
func (e *Engine) Close(sessionKey string) {
	e.mu.Lock()
	t, running := e.turns.Get(sessionKey)
	p := e.procs[sessionKey]
	delete(e.procs, sessionKey)
	e.mu.Unlock()
	if running {
		_ = t.Kill()
		<-t.Done()
	}
	if p != nil {
		p.stop()
	}
}

// Pid is the process id of the session's agent (0 when none runs).
func (e *Engine) Pid(sessionKey string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.procs[sessionKey]; p != nil && p.alive() {
		return p.pid
	}
	return 0
}

// Shutdown refuses new turns, interrupts the running ones and waits for
// them, then stops every agent process; when ctx ends first the turns
// are killed (the engines' one turn registry, internal/turns). Safe to
// call more than once.
func (e *Engine) Shutdown(ctx context.Context) error {
	err := e.turns.Shutdown(ctx)
	e.mu.Lock()
	ps := make([]*proc, 0, len(e.procs))
	for k, p := range e.procs {
		ps = append(ps, p)
		delete(e.procs, k)
	}
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop()
		}()
	}
	wg.Wait()
	return err
}
