package daemon

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness"
	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/ipc"
	"github.com/chirality/harness/runner"
	"github.com/chirality/harness/supervisor"
)

// SkillTool is the tool rule that lets an agent run the skill CLI
// without asking (Claude Code's --allowedTools syntax, matched by
// permrule wherever the harness answers: `harness channel …` alone, never
// chained with, substituting or redirecting anything else).
const SkillTool = "Bash(harness channel:*)"

// CodexThreadConfig is the Codex configuration the daemon overrides for
// its codex agents' threads (codex.Config.ThreadConfig): commands run in
// a non-login shell, so the PATH the daemon gives (the harness binary
// first) reaches them. The cost: the user's login profile (~/.profile,
// /etc/profile) is not read for the agent's commands; they get the
// daemon's environment as it is.
var CodexThreadConfig = map[string]any{"allow_login_shell": false}

// CoreOptions configures CoreAgent.
type CoreOptions struct {
	// HarnessBinary is the harness executable whose directory goes first
	// on the agent's PATH ("" = this process's executable).
	HarnessBinary string
	// StateDir is the harness session index ("" = the harness default).
	StateDir string
	// ClaudeBinary is the claude executable ("" = the usual search).
	ClaudeBinary string
	// Env is the base environment of the agents' children (nil =
	// os.Environ()); ChildEnv entries are added to it (a fake API's URL
	// in tests).
	Env      []string
	ChildEnv []string
	// TurnTimeout ends a turn that runs longer (0 = 30 min).
	TurnTimeout time.Duration
	// Now is the keepers' clock (nil = time.Now).
	Now func() time.Time
	// MaxCrashes, CrashWindow and MaxFailedTurns tune the keeper (0 =
	// runner's defaults: 3, 300 s, 3).
	MaxCrashes     int
	CrashWindow    time.Duration
	MaxFailedTurns int
}

// coreAgent is a Keeper with the Harnesses it owns: the agent's and,
// when there is a supervisor, the supervisor's.
type coreAgent struct {
	*runner.Keeper
	hs []*harness.Harness
}

// Close shuts the agent's Harnesses down (after Stop).
func (c coreAgent) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, h := range c.hs {
		_ = h.Shutdown(ctx)
	}
}

// CoreAgent builds an agent on the harness core: a *harness.Harness of
// its own (Roots = its directory; ChildEnv = HARNESS_NICK and a PATH
// with the harness binary first; AllowedTools = SkillTool), a
// runner.Core on the agent's engine, a runner.Keeper over it, and — when
// the configuration has a supervisor — a supervisor.Supervisor whose
// evaluations are one-shot turns on the same Harness.
func CoreAgent(cfg *Config, a AgentConfig, o CoreOptions, hooks Hooks, logger *zerolog.Logger) (Agent, Supervisor, error) {
	dir, err := filepath.Abs(a.Directory)
	if err != nil {
		return nil, nil, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, nil, fmt.Errorf("agent %s: directory %s: not a directory (%v)", a.Nick, dir, err)
	}
	bin := o.HarnessBinary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return nil, nil, err
		}
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	path := ""
	for _, kv := range append(append([]string{}, env...), o.ChildEnv...) {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	childEnv := append([]string{}, o.ChildEnv...)
	childEnv = append(childEnv, "HARNESS_NICK="+a.Nick, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+path)
	// The skill CLI resolves the socket with ipc.SocketPath, as the daemon
	// did; the agent's HOME may differ from the daemon's, so it gets the
	// run directory as XDG_RUNTIME_DIR (the same value when that was set).
	if run, err := ipc.RunDir(); err == nil {
		childEnv = append(childEnv, "XDG_RUNTIME_DIR="+run)
	}
	eng := a.Engine()
	// The built-in engines (package engines), with Codex's threads in a
	// non-login shell: Codex runs commands in a login shell by default,
	// whose profile (/etc/profile on Debian) resets PATH, so the skill CLI
	// would not be found. An acp agent adds its acp_command.
	builtin := func(childEnv []string) []engine.Engine {
		return engines.Builtin(engines.Config{ClaudeBinary: o.ClaudeBinary, Env: env, ChildEnv: childEnv,
			Logger: logger, CodexThreadConfig: CodexThreadConfig,
			// the agents read the skill and the Codex command rule the
			// daemon installs in their directories (InstallSkill)
			ProjectConfig: true})
	}
	var custom []engine.Engine
	if a.Agent == KindACP {
		e, err := acp.NewEngine(acp.Config{Name: eng, Command: a.ACPCommand, Env: env, Logger: logger})
		if err != nil {
			return nil, nil, err
		}
		custom = append(custom, e)
	}
	if len(a.Extra) > 0 && logger != nil {
		// spec 003: backend-specific fields reach the runner; this one
		// (the harness core) has none of its own
		logger.Info().Str("agent", a.Nick).Strs("fields", slices.Sorted(maps.Keys(a.Extra))).Str("engine", eng).
			Msg("backend-specific fields of agents.yaml passed to the runner, which does not use them")
	}
	h, err := harness.New(harness.Config{
		Roots: []string{dir}, StateDir: o.StateDir, ChildEnv: childEnv,
		AllowedTools: []string{SkillTool}, Engines: append(builtin(childEnv), custom...), Aliases: engines.Aliases,
		DefaultEngine: eng, Logger: logger, NoProjectLogs: false,
		Effort:  a.Effort(), // each engine maps it (engine.EffortLevels)
		Sandbox: a.Sandbox,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("agent %s: %w", a.Nick, err)
	}
	timeout := o.TurnTimeout
	if timeout <= 0 {
		timeout = 30 * time.Minute
	}
	core, err := runner.New(runner.Config{Harness: h, ProjectRoot: dir, Engine: eng, Model: a.Model, TurnTimeout: timeout, Logger: logger,
		Isolation: a.Isolation, Base: a.Base})
	if err != nil {
		_ = h.Shutdown(context.Background())
		return nil, nil, err
	}
	k := runner.NewKeeper(runner.KeeperConfig{Runner: core, MaxCrashes: o.MaxCrashes, Window: o.CrashWindow,
		MaxFailedTurns: o.MaxFailedTurns, Now: o.Now, OnPause: hooks.OnPause, OnCircuitOpen: hooks.OnCircuitOpen, Logger: logger})
	agent := coreAgent{Keeper: k, hs: []*harness.Harness{h}}
	var sup Supervisor
	if s := cfg.Supervisor; s != nil {
		// The supervisor's one-shot turns get a Harness of their own: its
		// engine's thinking level, and none of the agent's skill set-up
		// (no HARNESS_NICK, no auto-approved skill CLI; it has no tools).
		supEngine := engineName(s.Agent, a.Nick)
		supCustom := custom
		if s.Agent == KindACP {
			// its own ACP engine: supervisor.acp_command (default opencode acp)
			supEngine = "acp-supervisor"
			e, err := acp.NewEngine(acp.Config{Name: supEngine, Command: s.ACPCommand, Env: env, Logger: logger})
			if err != nil {
				agent.Close()
				return nil, nil, fmt.Errorf("supervisor: %w", err)
			}
			supCustom = []engine.Engine{e}
		}
		supEnv := append([]string{}, o.ChildEnv...)
		sh, err := harness.New(harness.Config{
			Roots: []string{dir}, StateDir: o.StateDir, ChildEnv: supEnv,
			Engines: append(builtin(supEnv), supCustom...), Aliases: engines.Aliases,
			DefaultEngine: supEngine, Logger: logger, Effort: s.Thinking,
		})
		if err != nil {
			agent.Close()
			return nil, nil, fmt.Errorf("supervisor: %w", err)
		}
		agent.hs = append(agent.hs, sh)
		sup = supervisor.New(supervisor.Config{WindowSize: s.WindowSize, EvalInterval: s.EvalInterval,
			EscalationThreshold: s.EscalationThreshold, Logger: logger,
			Evaluate: supervisor.CoreEvaluator(sh, dir, supEngine, s.Model, s.Thinking)})
	}
	return agent, sup, nil
}
