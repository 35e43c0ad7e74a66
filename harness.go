package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/keylock"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/logging"
	"github.com/chirality/harness/persona"
	"github.com/chirality/harness/session"
	"github.com/chirality/harness/trust"
	"github.com/chirality/harness/worktree"
	"github.com/rs/zerolog"
)

// Harness runs harness sessions on the engines it is given: it owns the
// session store, the per-project logs and the live fan-out of every
// running turn. A Harness is safe for concurrent use; the gateway and the
// CLI each build one with New and end it with Shutdown.
type Harness struct {
	cfg     Config
	roots   []string // allowed roots, absolute, symlinks resolved
	log     zerolog.Logger
	engines map[string]engine.Engine
	order   []string // engine names, built-in first
	store   *session.Store
	trust   *trust.Store // what a person granted (trust.go)
	warm    *warmPool
	ckpts   checkpoints       // file snapshots by project root (checkpoints.go)
	wt      *worktree.Manager // worktree sessions (worktrees.go), made once
	wtOnce  sync.Once

	mu       sync.Mutex
	live     map[string]*liveTurn       // by session ID: running turns and deletions
	ephs     map[*ephemeral]bool        // running ephemeral turns (ephemeral.go)
	answered map[string]map[string]bool // by session ID: approval ids of finished turns
	seen     map[string]bool            // project roots used by this process
	locks    keylock.Map                // by session ID: see lockSession
	qlocks   keylock.Map                // by session ID: its prompt queue (queue.go)
	queueing atomic.Bool                // this Harness queues or resumes queues (queue.go)
	gates    sync.Map                   // by session ID: a door's gate on its queue (queuegate.go)
	taps     taps                       // server-wide watchers of every event (watch.go)
	closed   bool
	wg       sync.WaitGroup // turn runners

	logsMu     sync.Mutex
	logs       map[string]projectLog
	logsClosed bool

	usage usageIndex // the usage of the sessions' logs (usagereport.go)

	settledOnce settled   // sessions whose cut turn this process ended (cutturn.go)
	turnLocks   turnLocks // the sessions' turn locks this process holds (cutturn.go)
}

type projectLog struct {
	log    zerolog.Logger
	closer io.Closer
}

// New returns a Harness for cfg. It fails when a root does not exist or
// the state directory cannot be created. The CLI is looked for when a
// turn starts, not here.
func New(cfg Config) (*Harness, error) {
	c := cfg.clone()
	if err := engine.CheckEffort(c.Effort); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if len(c.Roots) == 0 {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
		c.Roots = []string{wd}
	}
	// The secret values of the agents' environments are scrubbed from
	// every event and log line (internal/secrets).
	secrets.RegisterEnv(c.ChildEnv)
	h := &Harness{cfg: c, log: zerolog.Nop(), live: map[string]*liveTurn{}, answered: map[string]map[string]bool{},
		seen: map[string]bool{}, logs: map[string]projectLog{}, engines: map[string]engine.Engine{}}
	if c.Logger != nil {
		h.log = *c.Logger
	}
	for _, r := range c.Roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("harness: root %s: %w", r, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("harness: root %s does not exist; give an existing directory", r)
		}
		if err != nil {
			return nil, fmt.Errorf("harness: root %s: %w", r, err)
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("harness: root %s is not a directory", r)
		}
		h.roots = append(h.roots, real)
	}
	st, err := session.Open(session.Config{StateDir: c.StateDir, Logger: c.Logger})
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	h.store = st
	if h.trust, err = trust.Open(st.StateDir()); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	h.cleanWorktrees() // of sessions that no longer exist (worktrees.go)
	h.warm = newWarmPool(c.WarmTurns, c.WarmIdle)
	for _, e := range c.Engines {
		h.addEngine(e)
	}
	if len(h.order) == 0 {
		return nil, fmt.Errorf("harness: %w: Config.Engines is empty (a command builds the built-in ones with engines.Builtin)", ErrNoEngines)
	}
	if c.DefaultEngine == "" {
		c.DefaultEngine = h.order[0]
		if _, ok := h.engines[engine.ClaudeCode]; ok {
			c.DefaultEngine = engine.ClaudeCode
		}
	}
	h.cfg.DefaultEngine = h.canonical(c.DefaultEngine)
	if _, ok := h.engines[h.cfg.DefaultEngine]; !ok {
		return nil, fmt.Errorf("harness: default engine %q: %w (have %s)", c.DefaultEngine, ErrUnknownEngine, strings.Join(h.order, ", "))
	}
	if c.ResumeQueues {
		h.resumeQueues() // queue.go
	}
	return h, nil
}

// addEngine registers e under its name; a later one of the same name
// replaces an earlier one.
func (h *Harness) addEngine(e engine.Engine) {
	name := e.Name()
	if _, ok := h.engines[name]; !ok {
		h.order = append(h.order, name)
	}
	h.engines[name] = e
}

// canonical returns the engine name that name stands for: an engine's
// name (case aside) or an alias of it (Config.Aliases), else name.
func (h *Harness) canonical(name string) string {
	if _, ok := h.engines[name]; ok {
		return name
	}
	lower := strings.ToLower(name)
	if _, ok := h.engines[lower]; ok {
		return lower
	}
	if n, ok := h.cfg.Aliases[lower]; ok {
		return n
	}
	return name
}

// EngineName returns the name of the engine that name (an engine's name
// or one of Config.Aliases) stands for, or an error wrapping
// ErrUnknownEngine that lists the engines there are.
func (h *Harness) EngineName(name string) (string, error) {
	if _, err := h.engineFor(name); err != nil {
		return "", err
	}
	return h.canonical(name), nil
}

// engineFor returns the engine called name (or an alias of it).
func (h *Harness) engineFor(name string) (engine.Engine, error) {
	if e, ok := h.engines[h.canonical(name)]; ok {
		return e, nil
	}
	return nil, fmt.Errorf("%w %q (have %s)", ErrUnknownEngine, name, strings.Join(h.order, ", "))
}

// sessionEngine is the engine s runs on: its own, or (for sessions from
// before engines existed) Claude Code.
func (h *Harness) sessionEngine(s *session.Session) string {
	if s.Engine != "" {
		return s.Engine
	}
	return engine.ClaudeCode
}

// Engines says, for every engine this Harness offers, whether it can run
// here and why not (binary missing, no key). Checks run concurrently,
// bounded by ctx.
func (h *Harness) Engines(ctx context.Context) []engine.Status {
	out := make([]engine.Status, len(h.order))
	var wg sync.WaitGroup
	for i, name := range h.order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := h.engines[name].Check(ctx)
			st.Name = name
			st.Controls = engine.ControlsOf(h.engines[name])
			out[i] = st
		}()
	}
	wg.Wait()
	return out
}

// EngineNames lists the engines this Harness offers, built-in first.
func (h *Harness) EngineNames() []string { return slices.Clone(h.order) }

// Roots returns the allowed roots, absolute with symlinks resolved.
func (h *Harness) Roots() []string { return append([]string(nil), h.roots...) }

// sessionStore returns the session store (for the root package's tests:
// export_test.go; a door reads a session's events with EventLog).
func (h *Harness) sessionStore() *session.Store { return h.store }

// CLIVersion returns the version of the Claude Code CLI in use: what
// the claude-code engine's Check reports. It fails when the Harness has
// no such engine or the CLI cannot run here (the error says why).
func (h *Harness) CLIVersion(ctx context.Context) (string, error) {
	e, err := h.engineFor(engine.ClaudeCode)
	if err != nil {
		return "", err
	}
	st := e.Check(ctx)
	if !st.Available {
		return "", fmt.Errorf("%w: %s", engine.ErrUnavailable, st.Reason)
	}
	return st.Version, nil
}

// ResolveRoot returns projectRoot with symlinks resolved when it is an
// existing directory inside an allowed root. projectRoot must be
// absolute (ErrInvalidRoot). A path outside every root is
// ErrRootNotAllowed whether or not it exists, so a client learns nothing
// about the file system outside the roots; the error names the allowed
// roots, so it learns where it may go.
func (h *Harness) ResolveRoot(projectRoot string) (string, error) {
	if projectRoot == "" || !filepath.IsAbs(projectRoot) || strings.ContainsRune(projectRoot, 0) {
		return "", fmt.Errorf("%w: %q is not an absolute path", ErrInvalidRoot, projectRoot)
	}
	clean := filepath.Clean(projectRoot)
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		if !h.inside(clean) {
			return "", h.notAllowed(clean)
		}
		return "", fmt.Errorf("%w: %s does not exist", ErrInvalidRoot, clean)
	}
	if !h.inside(real) {
		return "", h.notAllowed(clean)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: %s is not a directory", ErrInvalidRoot, clean)
	}
	return real, nil
}

func (h *Harness) notAllowed(p string) error {
	return fmt.Errorf("%w: %s is outside the allowed roots (%s); choose a project under one of them, or start the server with --root for it",
		ErrRootNotAllowed, p, strings.Join(h.roots, ", "))
}

// inside reports whether the clean absolute path p is an allowed root or
// below one.
func (h *Harness) inside(p string) bool {
	for _, r := range h.roots {
		if p == r {
			return true
		}
		if rel, err := filepath.Rel(r, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

// allowedSession checks that a stored session lives inside an allowed root.
func (h *Harness) allowedSession(s *session.Session) error {
	real, err := filepath.EvalSymlinks(s.ProjectRoot)
	if err != nil || !h.inside(real) {
		return ErrRootNotAllowed
	}
	return nil
}

// mapStoreErr turns the store's errors into this package's sentinels,
// keeping the store's message.
func mapStoreErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, session.ErrInvalidID):
		return fmt.Errorf("%w: %w", ErrInvalidID, err)
	case errors.Is(err, session.ErrNotFound):
		var se *session.Error
		if errors.As(err, &se) {
			return &sentinelError{sentinel: ErrNotFound, cause: err,
				msg: "session " + strings.Trim(se.ID, `"`) + " not found; list the sessions with `harness sessions list` (or GET /api/harness/session/list)"}
		}
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

// sentinelError is a one-sentence message that still matches its sentinel
// (errors.Is) and keeps its cause (errors.As).
type sentinelError struct {
	sentinel, cause error
	msg             string
}

func (e *sentinelError) Error() string   { return e.msg }
func (e *sentinelError) Is(t error) bool { return errors.Is(e.sentinel, t) }
func (e *sentinelError) Unwrap() error   { return e.cause }

func mapPersonaErr(err error) error {
	return mapPersonaErrIn("", err)
}

// mapPersonaErrIn is mapPersonaErr naming, for an unknown persona, the
// personas of the project at root (and the one meant, when only the case
// differs).
func mapPersonaErrIn(root string, err error) error {
	var nf *persona.NotFoundError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf) && root != "":
		var ids []string
		hint := ""
		if list, lerr := persona.List(root); lerr == nil {
			for _, e := range list {
				ids = append(ids, e.ID)
				if strings.EqualFold(e.ID, nf.ID) {
					hint = " (IDs are case-sensitive: did you mean " + e.ID + "?)"
				}
			}
		}
		return &sentinelError{sentinel: ErrPersonaNotFound, cause: err,
			msg: fmt.Sprintf("persona %s not found%s; the personas here are %s (agents/AGENT_<ID>.md)", nf.ID, hint, strings.Join(ids, ", "))}
	case errors.Is(err, persona.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrPersonaNotFound, err)
	case errors.Is(err, persona.ErrInvalidID), errors.Is(err, persona.ErrInvalidPersona):
		return fmt.Errorf("%w: %w", ErrInvalidPersona, err)
	}
	return err
}

// SessionSpec is what a new session is made of.
type SessionSpec struct {
	// ProjectRoot is absolute and inside an allowed root.
	ProjectRoot string
	// Persona is a persona ID ("" = none); Mode is workbench, pipeline or
	// direct.
	Persona, Mode string
	// Engine runs the session's turns: "" = the persona's engine, else
	// Config.DefaultEngine. It is fixed for the session's life.
	Engine string
	// Model overrides the persona's model ("" = the persona's, else the
	// engine's default).
	Model string
	// Title names the session ("" = its first message).
	Title string
	// Isolation "worktree" runs the session in a git worktree of its own,
	// on a new branch (Branch; "" = harness/<first 8 of the id>) from
	// Base ("" = the project's HEAD); "" runs it in the project root.
	// See worktrees.go.
	Isolation, Base, Branch string
	// Sandbox runs every turn's agent in the kernel sandbox (see
	// sandbox.go); Config.Sandbox does so for every session.
	Sandbox bool
	// ID is the new session's ID ("" = a fresh one; else a UUIDv4 no
	// session has: a door that names a thing after its session, as
	// `harness rpc` a thread). Log is where its event log is
	// (session.Session.Log: "" or session.LogThread).
	ID, Log string
}

// NewSession makes a session from spec. It fails with ErrInvalidMode,
// ErrInvalidRoot, ErrRootNotAllowed, ErrPersonaNotFound,
// ErrInvalidPersona or ErrUnknownEngine; nothing is written when a check
// fails.
func (h *Harness) NewSession(spec SessionSpec) (*session.Session, error) {
	if !persona.ValidMode(spec.Mode) {
		return nil, fmt.Errorf("%w %q: want workbench, pipeline or direct", ErrInvalidMode, spec.Mode)
	}
	if spec.ID != "" && !session.ValidID(spec.ID) || spec.Log != "" && spec.Log != session.LogThread {
		return nil, fmt.Errorf("%w: a new session's id must be a UUIDv4 and its log %q or none", ErrInvalidID, session.LogThread)
	}
	root, err := h.ResolveRoot(spec.ProjectRoot)
	if err != nil {
		return nil, err
	}
	name := spec.Engine
	var p *persona.Persona
	if spec.Persona != "" {
		if p, err = persona.Load(root, spec.Persona); err != nil {
			return nil, mapPersonaErrIn(root, err)
		}
		// A person chooses this persona: its file, first chosen, is
		// trusted as it is. The engine a new session of it gets is a
		// grant: the trusted one's.
		if err := h.trust.ChoosePersona(root, p); err != nil {
			h.projectLog(root).Error().Err(err).Str("persona", spec.Persona).Msg("trust record: the persona could not be recorded")
		}
		q, _, err := h.loadPersona(root, spec.Persona)
		if err != nil {
			return nil, mapPersonaErrIn(root, err)
		}
		if name == "" {
			name = q.Engine
		}
	}
	if name == "" {
		name = h.cfg.DefaultEngine
	}
	if _, err := h.engineFor(name); err != nil {
		return nil, err
	}
	name = h.canonical(name)
	if strings.ContainsRune(spec.Model, 0) || len(spec.Model) > 200 {
		return nil, fmt.Errorf("%w: model name", ErrInvalidID)
	}
	tmpl, err := h.isolate(root, spec)
	if err != nil {
		return nil, err
	}
	tmpl.ProjectRoot, tmpl.Persona, tmpl.Mode, tmpl.Engine, tmpl.Model, tmpl.Title = root, spec.Persona, spec.Mode, name, spec.Model, titleOf(spec.Title)
	tmpl.Sandbox, tmpl.Log = spec.Sandbox, spec.Log
	if tmpl.ID == "" {
		tmpl.ID = spec.ID
	}
	s, err := h.store.Add(tmpl)
	if err != nil {
		h.unisolate(&tmpl)
		return nil, mapStoreErr(err)
	}
	h.noteRoot(root)
	h.choose(s, nil) // the persona, mode and engine a person chose
	h.projectLog(root).Info().Str("sessionId", s.ID).Str("persona", spec.Persona).Str("mode", spec.Mode).
		Str("engine", name).Msg("session created")
	h.prewarm(s.ID, false) // a free slot only: creating sessions never evicts or spawns beyond --warm
	return s, nil
}

// PermissionMode is the permission mode s's next turn runs in (the
// server's setting over the persona's over the default), "" when the
// persona cannot be read.
func (h *Harness) PermissionMode(s *session.Session) string {
	var p *persona.Persona
	c := *s
	h.trustSession(&c) // what a person chose, not what the file says
	if c.Persona != "" {
		var err error
		if p, _, err = h.loadPersona(c.ProjectRoot, c.Persona); err != nil {
			return ""
		}
	}
	mode, err := h.cfg.permissionModeFor(p, c.PermissionMode)
	if err != nil {
		return ""
	}
	return mode
}

// SetTitle renames session id. A blank title goes back to the default
// (the first message) at the next turn.
func (h *Harness) SetTitle(id, title string) (*session.Session, error) {
	// As UpdateSession: a turn that starts meanwhile read the session
	// before this save, and its saves would undo it.
	unlock := h.lockSession(id)
	defer unlock()
	s, err := h.Session(id)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	lt := h.live[id]
	h.mu.Unlock()
	if r := liveRunner(lt); r != nil {
		// The running turn owns the session's copy: change it there.
		r.smu.Lock()
		r.s.Title = titleOf(title)
		r.saveLocked("title")
		c := *r.s
		r.smu.Unlock()
		return &c, nil
	}
	s.Title = titleOf(title)
	if err := h.store.Save(s); err != nil {
		return nil, mapStoreErr(err)
	}
	return s, nil
}

func (h *Harness) noteRoot(root string) {
	h.mu.Lock()
	h.seen[root] = true
	h.mu.Unlock()
}

// Session returns session id. An ID that is not a UUID is ErrInvalidID
// before any file is read; a session outside the allowed roots is
// ErrRootNotAllowed.
func (h *Harness) Session(id string) (*session.Session, error) {
	if !session.ValidID(id) {
		return nil, fmt.Errorf("%w %q", ErrInvalidID, id)
	}
	s, err := h.store.Get(id)
	if err != nil {
		return nil, mapStoreErr(err)
	}
	if err := h.allowedSession(s); err != nil {
		return nil, err
	}
	h.settle(s) // cutturn.go: once per process, a turn a dead process left open is ended
	return s, nil
}

// SessionIn returns session id of the project at projectRoot without the
// ID index (`harness replay --project-root`).
func (h *Harness) SessionIn(projectRoot, id string) (*session.Session, error) {
	if !session.ValidID(id) {
		return nil, fmt.Errorf("%w %q", ErrInvalidID, id)
	}
	root, err := h.ResolveRoot(projectRoot)
	if err != nil {
		return nil, err
	}
	s, err := h.store.GetIn(root, id)
	return s, mapStoreErr(err)
}

// SessionSummary is one entry of ListSessions.
type SessionSummary struct {
	ID             string    `json:"id" oa:"format=uuid"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	ProjectRoot    string    `json:"projectRoot"`
	Persona        *string   `json:"persona"`
	Mode           string    `json:"mode" oa:"ref=Mode"`
	ConversationID *string   `json:"claudeSessionId"`
	// Engine runs the session; Model is the one asked for ("" = default).
	Engine string `json:"engine"`
	Model  string `json:"model,omitempty"`
	// Title is the session's name (its first message unless renamed).
	Title string `json:"title"`
	// CostUSD is the total cost of its turns so far.
	CostUSD float64 `json:"costUsd"`
	// Running is true while the session has a turn running;
	// PendingApprovals counts the questions it waits on.
	Running          bool `json:"running"`
	PendingApprovals int  `json:"pendingApprovals" oa:"min=0"`
	// Isolation, Branch and Base are a worktree session's (see Session),
	// absent otherwise: lists and boards show which branch each runs on.
	Isolation string `json:"isolation,omitempty" oa:"enum=worktree" doc:"worktree: the session runs in a git worktree of its own"`
	Branch    string `json:"branch,omitempty" doc:"a worktree session's branch"`
	Base      string `json:"base,omitempty" doc:"what a worktree session's branch was made from"`
	// Node and NodeState are set on a cluster's nodes only (serve --node,
	// package cluster): the node that owns the session, and whether it
	// is up.
	Node      string `json:"node,omitempty" doc:"the cluster node that owns the session (serve --node only)"`
	NodeState string `json:"nodeState,omitempty" doc:"up, or down once the owner's lease expired (serve --node only)" oa:"enum=up|down"`
}

// NodeInfo is a node of a cluster of harness servers (serve --node,
// package cluster), as GET /api/harness/nodes lists it.
type NodeInfo struct {
	Node        string    `json:"node"`
	State       string    `json:"state" doc:"up while the node's lease holds, down once it expired" oa:"enum=up|down"`
	ClusterAddr string    `json:"clusterAddr,omitempty" doc:"where it takes routes (host:port)"`
	StartedAt   time.Time `json:"startedAt"`
	LastSeen    time.Time `json:"lastSeen" doc:"its last heartbeat"`
	Sessions    int       `json:"sessions" doc:"sessions it owns" oa:"min=0"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ListSessions returns the sessions of the project at projectRoot, or
// with projectRoot "" of every allowed root and every project this
// process has used, newest first.
func (h *Harness) ListSessions(projectRoot string) ([]SessionSummary, error) {
	roots, err := h.sessionRoots(projectRoot)
	if err != nil {
		return nil, err
	}
	out := []SessionSummary{}
	for _, r := range roots {
		list, _, err := h.store.List(r)
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			out = append(out, SessionSummary{
				ID: s.ID, CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(), ProjectRoot: s.ProjectRoot,
				Persona: nullable(s.Persona), Mode: s.Mode, ConversationID: nullable(s.ConversationID),
				Engine: h.sessionEngine(s), Model: s.Model, Title: s.Title, CostUSD: s.CostUSD,
				Running: h.IsRunning(s.ID), PendingApprovals: len(h.PendingApprovals(s.ID)),
				Isolation: s.Isolation, Branch: s.Branch, Base: s.Base,
			})
		}
	}
	if len(roots) > 1 {
		sort.SliceStable(out, func(i, j int) bool {
			if !out[i].UpdatedAt.Equal(out[j].UpdatedAt) {
				return out[i].UpdatedAt.After(out[j].UpdatedAt)
			}
			return out[i].ID < out[j].ID
		})
	}
	return out, nil
}

// DeleteSession removes session id: a running turn is killed first (and
// waited for, bounded by ctx), then its files and index entry go. While
// it runs, a new turn of the session is refused with ErrBusy. A worktree
// session's worktree and branch go too, refused with ErrUnmerged while
// they hold unmerged changes (see DeleteSessionWith).
func (h *Harness) DeleteSession(ctx context.Context, id string) error {
	return h.DeleteSessionWith(ctx, id, DeleteOptions{})
}

// DeleteSessionWith is DeleteSession with options.
func (h *Harness) DeleteSessionWith(ctx context.Context, id string, o DeleteOptions) error {
	s, err := h.Session(id)
	if err != nil {
		return err
	}
	if s.Isolation == session.IsolationWorktree && !o.Force {
		if err := h.checkMerged(ctx, s); err != nil {
			return err
		}
	}
	h.dropQueue(id) // nothing queued starts while its turn is killed
	tomb := &liveTurn{id: id, deleting: true, done: make(chan struct{})}
	for {
		h.mu.Lock()
		lt := h.live[id]
		if lt == nil {
			h.live[id] = tomb
			h.mu.Unlock()
			break
		}
		h.mu.Unlock()
		if lt.deleting {
			return fmt.Errorf("%w: being deleted", ErrBusy)
		}
		lt.kill()
		select {
		case <-lt.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() {
		h.mu.Lock()
		delete(h.live, id)
		h.mu.Unlock()
		close(tomb.done)
	}()
	// A turn another process runs (it holds the session's turn lock,
	// cutturn.go) is not this process's to kill: deleting under it would
	// leave that process writing a log and a session file that are gone
	// (its save after the turn would bring the file back). Held until
	// the files are gone, so no other process starts one meanwhile.
	unlockTurn, err := h.lockTurn(s)
	if err != nil {
		return err
	}
	defer unlockTurn()
	if w := h.warm.take(id); w != nil {
		w.Stop()
		h.warm.release()
		h.log.Info().Str("sessionId", id).Int("pid", w.Pid()).Str("reason", "session deleted").Msg("warm turn discarded")
	}
	if s.Isolation == session.IsolationWorktree {
		if err := h.removeWorktree(ctx, s); err != nil {
			return err
		}
	}
	if c, ok := h.engines[s.Engine].(sessionCloser); ok {
		c.Close(id) // an agent kept per session goes with it
	}
	if err := h.store.Delete(id); err != nil {
		return mapStoreErr(err)
	}
	if err := h.trust.DropSession(s.ProjectRoot, id); err != nil {
		h.log.Warn().Str("sessionId", id).Err(err).Msg("trust record: the deleted session's grants could not be dropped")
	}
	h.mu.Lock()
	delete(h.answered, id)
	h.mu.Unlock()
	h.settledOnce.m.Delete(id) // cutturn.go: nothing left to settle
	h.projectLog(s.ProjectRoot).Info().Str("sessionId", id).Msg("session deleted")
	return nil
}

// IsRunning reports whether session id has a turn running.
func (h *Harness) IsRunning(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	lt := h.live[id]
	return lt != nil && !lt.deleting
}

// Interrupt asks the running turn of session id to stop (the driver's
// interrupt sequence); the turn then ends with session:error of kind
// interrupted. It returns ErrNotRunning when there is none.
func (h *Harness) Interrupt(id string) error {
	lt, err := h.running(id)
	if errors.Is(err, ErrNotRunning) {
		h.dropWarm(id, nil, "interrupt while no turn runs")
	}
	if err != nil {
		return err
	}
	lt.interrupt()
	return nil
}

// Kill stops the running turn of session id at once (whole process
// group). It returns ErrNotRunning when there is none.
func (h *Harness) Kill(id string) error {
	lt, err := h.running(id)
	if err != nil {
		return err
	}
	lt.kill()
	return nil
}

// running returns the running turn of session id.
func (h *Harness) running(id string) (*liveTurn, error) {
	if !session.ValidID(id) {
		return nil, fmt.Errorf("%w %q", ErrInvalidID, id)
	}
	h.mu.Lock()
	lt := h.live[id]
	h.mu.Unlock()
	if lt == nil || lt.deleting {
		return nil, ErrNotRunning
	}
	return lt, nil
}

// PersonaInfo is one entry of Personas.
type PersonaInfo struct {
	ID             string   `json:"id"`
	Description    string   `json:"description"`
	Tools          []string `json:"tools"`
	Model          string   `json:"model"`
	PermissionMode string   `json:"permissionMode"`
	SourceFile     string   `json:"sourceFile"`
	// Error is set, and the fields above may be empty, for a persona
	// file that cannot be used.
	Error string `json:"error,omitempty" doc:"set when the persona file cannot be used"`
}

// Personas lists the personas of the project at projectRoot ("" = the
// first allowed root), sorted by ID.
func (h *Harness) Personas(projectRoot string) ([]PersonaInfo, error) {
	root := h.roots[0]
	if projectRoot != "" {
		r, err := h.ResolveRoot(projectRoot)
		if err != nil {
			return nil, err
		}
		root = r
	}
	entries, err := persona.List(root)
	if err != nil {
		return nil, err
	}
	out := make([]PersonaInfo, 0, len(entries))
	for _, e := range entries {
		pi := PersonaInfo{ID: e.ID, SourceFile: e.SourceFile, Tools: []string{}}
		if e.Err != nil {
			pi.Error = e.Err.Error()
		} else if p := e.Persona; p != nil {
			pi.Description, pi.Model, pi.PermissionMode = p.Description, p.Model, p.PermissionMode
			if p.Tools != nil {
				pi.Tools = p.Tools
			}
		}
		out = append(out, pi)
	}
	return out, nil
}

// projectLog returns the logger of the project's harness.log, opening it
// on first use. When it cannot be opened, the server logger is used.
func (h *Harness) projectLog(root string) *zerolog.Logger {
	h.logsMu.Lock()
	defer h.logsMu.Unlock()
	if pl, ok := h.logs[root]; ok {
		return &pl.log
	}
	if h.logsClosed {
		return &h.log
	}
	pl := projectLog{log: h.log}
	if !h.cfg.NoProjectLogs {
		l, c, err := logging.New(root)
		if err != nil {
			h.log.Warn().Err(err).Str("projectRoot", root).Msg("project log unavailable; logging to the server log")
		} else {
			pl = projectLog{log: l, closer: c}
		}
	}
	h.logs[root] = pl
	return &pl.log
}

// Shutdown refuses new turns, interrupts every running turn and waits for
// them to end; when ctx is done first it kills what is left (whole
// process groups) and waits for that. Then it flushes and closes the
// project logs and the event logs. It returns ctx's error if it had to
// kill. Safe to call more than once.
func (h *Harness) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	var asks []*approvals
	for _, lt := range h.live {
		if a := lt.approvals(); a != nil {
			asks = append(asks, a)
		}
	}
	h.mu.Unlock()
	for _, a := range asks {
		a.closeAll(event.ByShutdown)
	}
	h.shutdownEphemerals()
	h.stopWarm()
	errs := make([]error, len(h.order))
	var ewg sync.WaitGroup
	for i, name := range h.order {
		ewg.Add(1)
		go func() {
			defer ewg.Done()
			errs[i] = h.engines[name].Shutdown(ctx)
		}()
	}
	ewg.Wait()
	err := errors.Join(errs...)
	h.wg.Wait() // runners end once their turns are read to the end
	h.taps.close()
	h.closeCheckpoints()
	h.logsMu.Lock()
	for root, pl := range h.logs {
		if pl.closer != nil {
			pl.closer.Close()
		}
		delete(h.logs, root)
	}
	h.logsClosed = true
	h.logsMu.Unlock()
	h.store.Close()
	return err
}
