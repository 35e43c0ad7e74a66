package agentserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/native"
)

// Options are `harness agent serve`'s flags.
type Options struct {
	// Addr to listen on (default 127.0.0.1:8788; port 0 picks one). A
	// non-loopback address needs a Token.
	Addr, Token string
	// Engine is engine.Anthropic (default), engine.ClaudeCode, a built-in
	// ACP agent (opencode, claude-acp, copilot) or one of Engines.
	Engine string
	// Engines are more engines to pick from by name (an engines file's
	// entries); one named like a built-in ACP agent replaces it.
	Engines []engine.Engine
	Cwd     string
	Model   string
	// MaxTurns bounds each prompt's loop (0 = the engine's default).
	MaxTurns int
	// SystemPromptFile, when set, is the system prompt.
	SystemPromptFile string
	// Demo answers with the embedded demo model (no key needed).
	Demo bool
	// Heartbeat is the SSE heartbeat interval (0 = 30 s).
	Heartbeat time.Duration
	// ClaudeBinary is the claude CLI for engine claude-code ("" = the
	// usual search).
	ClaudeBinary string
	Logger       *zerolog.Logger
}

// DefaultAddr is where `harness agent serve` listens by default.
const DefaultAddr = "127.0.0.1:8788"

// Run serves the agent until ctx is done, then stops the running prompt
// and the engine, leaving no process. ready, when set, gets the base URL
// once the server listens.
func Run(ctx context.Context, opts Options, ready func(url string)) error {
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", opts.Addr, err)
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && !strings.EqualFold(host, "localhost") && opts.Token == "" {
		return fmt.Errorf("--addr %s is not a loopback address: set --token (or HARNESS_TOKEN) so the agent is not open to the network", opts.Addr)
	}
	if opts.Cwd == "" {
		if opts.Cwd, err = os.Getwd(); err != nil {
			return err
		}
	}
	if fi, err := os.Stat(opts.Cwd); err != nil || !fi.IsDir() {
		return fmt.Errorf("--cwd %s is not a directory", opts.Cwd)
	}
	cfg := Config{Cwd: opts.Cwd, Model: opts.Model, MaxTurns: opts.MaxTurns, Token: opts.Token, Addr: opts.Addr,
		Heartbeat: opts.Heartbeat, Logger: opts.Logger}
	if opts.SystemPromptFile != "" {
		b, err := os.ReadFile(opts.SystemPromptFile)
		if err != nil {
			return fmt.Errorf("--system-prompt-file: %w", err)
		}
		cfg.SystemPrompt = string(b)
	}
	var cleanup []func()
	defer func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}()
	key, baseURL := os.Getenv("ANTHROPIC_API_KEY"), os.Getenv("ANTHROPIC_BASE_URL")
	if opts.Demo {
		api, err := claudetest.NewFakeAPI()
		if err != nil {
			return err
		}
		cleanup = append(cleanup, func() { api.Close() })
		api.SetResponder(claudetest.DemoResponder(claudetest.DemoOptions{}))
		home, err := os.MkdirTemp("", "harness-agent-demo-")
		if err != nil {
			return err
		}
		cleanup = append(cleanup, func() { os.RemoveAll(home) })
		key, baseURL = "demo", api.URL
		cfg.Env = append(api.Env(), "HOME="+filepath.Join(home))
		cfg.AllowedTools = claudetest.DemoAllowedTools
	}
	var eng engine.Engine
	switch opts.Engine {
	case "", engine.Anthropic:
		eng = native.NewEngine(native.EngineConfig{APIKey: key, BaseURL: baseURL, Logger: opts.Logger})
	case engine.ClaudeCode:
		eng = claudecode.NewEngine(claudecode.Config{Binary: opts.ClaudeBinary, Logger: opts.Logger})
	default:
		for _, e := range opts.Engines {
			if e.Name() == opts.Engine {
				eng = e
			}
		}
		if ac, ok := acp.BuiltinConfig(opts.Engine); ok && eng == nil {
			ac.ExtraEnv, ac.Logger = cfg.Env, opts.Logger // the demo's fake API, after filtering
			eng, _ = acp.NewEngine(ac)
		}
		if eng == nil {
			return fmt.Errorf("--engine %q: want %s, %s, opencode, claude-acp, copilot or an engine of --engines", opts.Engine, engine.Anthropic, engine.ClaudeCode)
		}
	}
	if st := eng.Check(ctx); !st.Available {
		return fmt.Errorf("engine %s cannot run here: %s", eng.Name(), st.Reason)
	}
	cfg.Engine = eng
	srv, err := New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	if ready != nil {
		ready("http://" + ln.Addr().String())
	}
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	srv.Close() // ends the streams and the running prompt
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	if serr := eng.Shutdown(sctx); serr != nil && err == nil {
		err = serr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
