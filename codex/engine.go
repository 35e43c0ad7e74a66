package codex

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/internal/turns"
)

// Name is the engine's name and kind.
const Name = "codex"

// Install says how to get the pinned Codex.
const Install = "npm install @openai/codex@0.169.0"

// Config configures an Engine.
type Config struct {
	// Binary is an explicit path to codex ("" = engine.FindBinary's search:
	// $HARNESS_CODEX_BIN, PATH, ./node_modules/.bin).
	Binary string
	// Env is the base environment of every child (nil = os.Environ()). It
	// is filtered: secret-looking variables are withheld except
	// OPENAI_API_KEY, CODEX_API_KEY and the names in AllowEnv.
	Env      []string
	AllowEnv []string
	// Logger receives the engine's logs and the children's stderr lines
	// (nil = none; a Request's Logger wins for its turn).
	Logger *zerolog.Logger
	// StopGrace is how long a child gets after its stdin closes before
	// its group is killed (default 3s).
	StopGrace time.Duration
	// ThreadConfig overrides Codex configuration for every thread: sent
	// as the config of thread/start and thread/resume, keys as `codex -c
	// key=value` takes them ("allow_login_shell",
	// "sandbox_workspace_write.network_access"). nil = none; the user's
	// $CODEX_HOME/config.toml decides.
	ThreadConfig map[string]any
	// TrustProject lets Codex read the project's own .codex/ (config.toml,
	// rules) as it would by itself: each thread otherwise marks its
	// project untrusted (trust.go). For a caller that configures the
	// project itself (the IRC daemon writes a command rule there).
	TrustProject bool
	// MCPStartupWait bounds how long a turn waits, before it starts, for
	// its MCP servers to report ready or failed (default 30s, above
	// Codex's own 10s startup timeout; negative: no wait). Codex offers
	// the model only the tools of servers ready by the first request.
	MCPStartupWait time.Duration
}

// Engine runs Codex turns, one `codex app-server` child per turn (see
// the package doc). Safe for concurrent use.
type Engine struct {
	cfg Config

	onMsg func(Message) // tests only

	turns turns.Registry[*Turn]
}

// NewEngine returns an engine; it starts nothing until a turn.
func NewEngine(cfg Config) *Engine {
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 3 * time.Second
	}
	if cfg.MCPStartupWait == 0 {
		cfg.MCPStartupWait = 30 * time.Second
	}
	cfg.ThreadConfig = maps.Clone(cfg.ThreadConfig)
	return &Engine{cfg: cfg}
}

var (
	_ engine.Engine     = (*Engine)(nil)
	_ engine.Controller = (*Engine)(nil)
)

// Controls: Codex forks a thread (thread/fork) and cuts the copy after a
// turn (its lastTurnId), so both Request.Fork and Request.ResumeAt work.
func (e *Engine) Controls() engine.Controls { return engine.Controls{Fork: true, Rewind: true} }

// Steers implements engine.SteerCapable: turn/steer adds a message to a
// running turn.
func (e *Engine) Steers() bool { return true }

// Name returns "codex".
func (e *Engine) Name() string { return Name }

func (e *Engine) binary() (string, error) {
	return engine.FindBinary(engine.Binary{Name: "codex", Explicit: e.cfg.Binary, EnvVar: "HARNESS_CODEX_BIN", Install: Install})
}

// Check reports whether codex is found, and its version.
func (e *Engine) Check(ctx context.Context) engine.Status {
	st := engine.Status{Name: Name, Kind: Name}
	bin, err := e.binary()
	if err != nil {
		st.Reason = err.Error()
		return st
	}
	st.Available = true
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err == nil {
		f := strings.Fields(string(out))
		if len(f) > 0 {
			st.Version = f[len(f)-1]
		}
	}
	return st
}

// Policy is how a permission mode maps onto Codex.
type Policy struct {
	ApprovalPolicy string // untrusted, on-request, never
	Sandbox        string // read-only, workspace-write, danger-full-access
}

// PolicyFor maps a Request's permission mode and whether an Approver is
// set (the package doc's table).
func PolicyFor(mode string, hasApprover bool) Policy {
	switch mode {
	case "bypassPermissions":
		return Policy{"never", "danger-full-access"}
	case "plan":
		if hasApprover {
			return Policy{"untrusted", "read-only"}
		}
		return Policy{"never", "read-only"}
	case "default", "acceptEdits":
		if hasApprover {
			return Policy{"untrusted", "workspace-write"}
		}
	}
	return Policy{"never", "workspace-write"}
}

// ChildEnv is the environment a child gets: base filtered (secrets
// withheld but OPENAI_API_KEY, CODEX_API_KEY and allow; the Anthropic
// key is not Codex's), then extra. CODEX_HOME passes unchanged.
func ChildEnv(base, extra, allow []string) []string {
	allow = append([]string{"OPENAI_API_KEY", "CODEX_API_KEY"}, allow...)
	keepAnthropic := false
	for _, a := range allow {
		if a == "ANTHROPIC_API_KEY" {
			keepAnthropic = true
		}
	}
	var out []string
	for _, kv := range secrets.FilterEnv(append(append([]string(nil), base...), extra...), allow) {
		if !keepAnthropic && strings.HasPrefix(kv, "ANTHROPIC_API_KEY=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// StartTurn starts a codex app-server for the turn and returns its stream
// once the child runs; the handshake and thread start happen in the
// stream (a failure there ends it with session:error kind start). ctx
// bounds the start only (engine.Engine's rule): once StartTurn returned,
// the turn stops by its end, Interrupt, Kill or Shutdown.
func (e *Engine) StartTurn(ctx context.Context, req engine.Request) (engine.Turn, error) {
	return e.start(ctx, req)
}

func (e *Engine) start(ctx context.Context, req engine.Request) (*Turn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.SessionKey == "" {
		return nil, errors.New("codex: empty session key")
	}
	if req.ResumeAt != "" && req.Resume == "" {
		return nil, errors.New("codex: ResumeAt without Resume: no thread to cut")
	}
	if err := engine.CheckEffort(req.Effort); err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	bin, err := e.binary()
	if err != nil {
		return nil, err
	}
	t := newTurn(e, req)
	if err := e.turns.Add(req.SessionKey, t); err != nil {
		t.cancel()
		return nil, err
	}

	base := e.cfg.Env
	if base == nil {
		base = os.Environ()
	}
	log := e.cfg.Logger
	if req.Logger != nil {
		log = req.Logger
	}
	if err := t.spawn(bin, ChildEnv(base, req.Env, e.cfg.AllowEnv), log); err != nil {
		e.remove(t)
		return nil, fmt.Errorf("codex: start: %w", err)
	}
	return t, nil
}

func (e *Engine) remove(t *Turn) { e.turns.Remove(t.req.SessionKey, t) }

// Close ends the session's running turn, if any (its child is killed);
// with a child per turn nothing else is kept per session.
func (e *Engine) Close(sessionKey string) {
	if t, ok := e.turns.Get(sessionKey); ok {
		_ = t.Kill()
		<-t.exited
	}
}

// Shutdown refuses new turns, interrupts the running ones and waits for
// their children to exit; when ctx ends first it kills them (the engines'
// one turn registry, internal/turns).
func (e *Engine) Shutdown(ctx context.Context) error { return e.turns.Shutdown(ctx) }
