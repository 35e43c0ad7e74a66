package claudecode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/internal/turns"
)

// Config configures a Manager. The zero value is usable: the CLI is found
// with FindBinary, the child gets this process's filtered environment, and
// nothing is logged. NewManager copies it.
type Config struct {
	// Binary is the claude executable ("" = FindBinary's search).
	Binary string
	// Env is the environment the child's is filtered from (nil =
	// os.Environ()).
	Env []string
	// AllowEnv names variables to pass through despite looking like
	// secrets (ANTHROPIC_API_KEY always is): ANTHROPIC_AUTH_TOKEN,
	// CLAUDE_CODE_OAUTH_TOKEN, cloud credentials…
	AllowEnv []string
	// Logger receives the driver's logs (nil = none). Values of withheld
	// variables are scrubbed from what it is given.
	Logger *zerolog.Logger
	// MaxLineBytes bounds one stdout line (0 = DefaultMaxLineBytes).
	MaxLineBytes int
	// InterruptGrace is how long Interrupt waits for the CLI to end the
	// turn before each harsher step (0 = 2s). KillGrace is how long
	// SIGTERM gets before SIGKILL (0 = 5s).
	InterruptGrace time.Duration
	KillGrace      time.Duration
	// ProjectSettings lets the CLI read the project's own settings too
	// (--setting-sources=user,project: .claude/settings.json, CLAUDE.md,
	// .claude/skills), never .claude/settings.local.json. Off, the CLI
	// reads the user's only (OptsFor): a project's settings can allow
	// tools, run hooks and an apiKeyHelper command and set the tools'
	// environment (verified on 2.1.329). For a caller that configures the
	// project itself (the IRC daemon installs its skill there); the
	// protected paths' ask rules hold either way.
	ProjectSettings bool
}

// Manager runs turns: one child process per turn, at most one running turn
// per session key. A Manager is safe for concurrent use.
type Manager struct {
	cfg      Config
	log      zerolog.Logger
	withheld []string // the values of the variables children do not get (scrubbed from their stderr)

	// turns holds the running turns by session key (busy, closed,
	// shutdown: the engines' one registry, internal/turns). A key is
	// reserved before the slow start of its child, so a racing StartTurn
	// sees ErrBusy.
	turns turns.Registry[running]

	// mu makes a reservation and its count in starting one step against
	// Shutdown's closing of turns (lock order: mu, then the registry's
	// lock), and guards warm.
	mu       sync.Mutex
	warm     map[*Warm]struct{} // prestarted children waiting for their message
	starting sync.WaitGroup     // StartTurn and Prestart calls between reservation and start

	versionOnce sync.Once
	versionDone chan struct{}
	version     string
	versionErr  error
}

// NewManager returns a Manager for cfg.
func NewManager(cfg Config) *Manager {
	if cfg.Env == nil {
		cfg.Env = os.Environ()
	}
	cfg.Env = append([]string(nil), cfg.Env...)
	cfg.AllowEnv = append([]string(nil), cfg.AllowEnv...)
	if cfg.MaxLineBytes <= 0 {
		cfg.MaxLineBytes = DefaultMaxLineBytes
	}
	if cfg.InterruptGrace <= 0 {
		cfg.InterruptGrace = 2 * time.Second
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = 5 * time.Second
	}
	log := zerolog.Nop()
	if cfg.Logger != nil {
		log = *cfg.Logger
	}
	withheld := secrets.WithheldEnvValues(cfg.Env)
	secrets.Register(withheld...) // the one scrubber: events, errors, the command line
	return &Manager{
		cfg:         cfg,
		log:         log,
		withheld:    withheld,
		warm:        map[*Warm]struct{}{},
		versionDone: make(chan struct{}),
	}
}

// StartTurn starts one turn of the CLI for sessionKey with message as the
// user's prompt, and returns its event stream. It fails with engine.ErrBusy while
// the key has a running turn, with a *engine.BinaryNotFoundError when there is no
// CLI, and with ErrInvalidOptions for options the CLI would misread.
//
// ctx bounds the start only (a ctx done before the child is spawned is
// its error): once StartTurn returned, cancelling ctx changes nothing, and
// the turn stops by its end, Interrupt or Kill (engine.Engine's rule).
// The caller must read the Turn to its end or Close it.
func (m *Manager) StartTurn(ctx context.Context, sessionKey, message string, opts TurnOpts) (*Turn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bin, err := m.prepare(opts)
	if err != nil {
		return nil, err
	}
	t := newTurn(m, sessionKey, bin, opts)
	m.mu.Lock()
	if err := m.turns.Add(sessionKey, running{t}); err != nil {
		m.mu.Unlock()
		t.approvalsCancel()
		return nil, registryError(err)
	}
	m.starting.Add(1) // Shutdown waits for this start before it interrupts turns
	m.mu.Unlock()
	defer m.starting.Done()

	m.checkVersionOnce(bin)
	if err := t.start(message); err != nil {
		t.approvalsCancel()
		m.release(sessionKey, t)
		return nil, err
	}
	return t, nil
}

// prepare validates opts and finds the CLI a turn with them runs.
func (m *Manager) prepare(opts TurnOpts) (string, error) {
	if err := opts.Validate(); err != nil {
		return "", err
	}
	bin := opts.Binary
	if bin == "" {
		bin = m.cfg.Binary
	}
	return FindBinary(bin)
}

func (m *Manager) release(key string, t *Turn) { m.turns.Remove(key, running{t}) }

// running is a Turn as the registry sees it: done once the child is
// reaped, and killed at once (SIGKILL to its group) when Shutdown's
// context ends.
type running struct{ t *Turn }

func (r running) Interrupt() error      { return r.t.Interrupt() }
func (r running) Kill() error           { r.t.killNow(); return nil }
func (r running) Done() <-chan struct{} { return r.t.exited }

// registryError is the registry's error (engine.ErrBusy or
// engine.ErrClosed) with this package's name.
func registryError(err error) error { return fmt.Errorf("claudecode: %w", err) }

// turn returns the key's turn once its child has started.
func (m *Manager) turn(key string) *Turn {
	if r, ok := m.turns.Get(key); ok && r.t.running.Load() {
		return r.t
	}
	return nil
}

// IsRunning reports whether sessionKey has a running turn.
func (m *Manager) IsRunning(sessionKey string) bool { return m.turn(sessionKey) != nil }

// Interrupt asks the session's running turn to stop (see Turn.Interrupt).
// It returns engine.ErrNotRunning when there is none. Safe to call more than once.
func (m *Manager) Interrupt(sessionKey string) error {
	t := m.turn(sessionKey)
	if t == nil {
		return fmt.Errorf("claudecode: %w", engine.ErrNotRunning)
	}
	return t.Interrupt()
}

// Kill stops the session's running turn at once (see Turn.Kill). It
// returns engine.ErrNotRunning when there is none. Safe to call more than once.
func (m *Manager) Kill(sessionKey string) error {
	t := m.turn(sessionKey)
	if t == nil {
		return fmt.Errorf("claudecode: %w", engine.ErrNotRunning)
	}
	return t.Kill()
}

// Running returns the keys of the sessions with a running turn.
func (m *Manager) Running() []string { return m.turns.Keys() }

// Shutdown refuses new turns, stops every warm child (Prestart),
// interrupts every running turn and waits for their processes to end;
// when ctx is done first it kills what is left (SIGKILL to each group)
// and waits for that. It returns ctx's error if it had to kill.
// Consumers must keep reading their turns for them to finish.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.turns.Close()
	m.mu.Unlock()
	m.starting.Wait() // a turn being started now is collected too
	m.stopWarm()      // nothing waits for a message that cannot come
	return m.turns.Shutdown(ctx)
}

// CLIVersion returns the version of the configured CLI, running
// `claude --version` once per Manager (at most 10 s; cancelling ctx stops
// the wait, not the check).
func (m *Manager) CLIVersion(ctx context.Context) (string, error) {
	bin, err := FindBinary(m.cfg.Binary)
	if err != nil {
		return "", err
	}
	m.checkVersionOnce(bin)
	select {
	case <-m.versionDone:
		return m.version, m.versionErr
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// checkVersionOnce learns the CLI's version in the background (it costs a
// process start, which a turn should not wait to begin) and warns when it
// is not the tested one. A turn that started the check waits for it
// before its stream ends.
func (m *Manager) checkVersionOnce(bin string) {
	m.versionOnce.Do(func() {
		go func() {
			defer close(m.versionDone)
			m.version, m.versionErr = CLIVersion(context.Background(), bin)
			switch {
			case m.versionErr != nil:
				m.log.Warn().Err(m.versionErr).Str("binary", bin).Msg("could not read claude --version")
			case m.version != TestedCLIVersion:
				m.log.Warn().Str("version", m.version).Str("tested", TestedCLIVersion).Str("binary", bin).
					Msg("claude CLI version differs from the tested one; the stream format may have changed")
			default:
				m.log.Info().Str("version", m.version).Str("binary", bin).Msg("claude CLI")
			}
		}()
	})
}

// errorf builds errors that never carry a withheld value.
func (m *Manager) errorf(format string, args ...any) error {
	return errors.New(secrets.Scrub(fmt.Sprintf(format, args...)))
}

// projectArgs is opts.Args() with the project's settings read too when
// the Manager's Config.ProjectSettings says so (the same for every turn,
// so a warm child's fingerprint needs no change).
func (m *Manager) projectArgs(opts TurnOpts) []string {
	if m.cfg.ProjectSettings && opts.SettingSources == "user" {
		opts.SettingSources = "user,project"
	}
	return opts.Args()
}
