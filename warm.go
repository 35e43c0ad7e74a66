package harness

import (
	"context"
	"sync"
	"time"

	"github.com/chirality/harness/engine"
)

// Warm turns: the policy. An engine that can (engine.Prestarter: the
// Claude Code CLI) gets a session's next agent started ahead, while the
// user is still typing: after each turn, when a session is created and
// when a door calls Prewarm (the console opening a session). The next
// StartTurn of that session hands it its message if it was started
// exactly as the turn would be (Warm.Matches: flags, environment, system
// prompt content); otherwise it is stopped and the turn starts cold.
//
// Bounds: at most Config.WarmTurns warm agents exist at any moment,
// counting those starting, those waiting and those being stopped: a slot
// is taken before a process is spawned and given back only once it has
// gone or become a turn. A session created while every slot is taken
// gets none (creating sessions never spawns processes beyond the bound);
// a session that was just used or opened in a client (Prewarm) takes
// the slot of the least recently used waiting agent, which is stopped
// before its replacement starts. Each waits at most Config.WarmIdle. A
// session's warm agent is stopped when the session is deleted, on an
// interrupt while no turn runs, when its turn starts another way, and at
// Shutdown. Every start, use and discard is logged with its reason on
// the server log.

// DefaultWarmIdle is how long a warm agent waits for its message.
const DefaultWarmIdle = 10 * time.Minute

type warmPool struct {
	max  int
	idle time.Duration

	mu       sync.Mutex
	entries  map[string]*warmEntry // waiting, by session ID
	starting map[string]bool       // sessions whose warm agent is being started
	held     int                   // agents out of the pool, not yet stopped or started
	gen      map[string]uint64     // bumped whenever a session's turn starts or it is deleted
	closed   bool
}

// usedLocked is how many slots are taken: agents starting, waiting, or
// taken out and not yet gone. p.mu is held.
func (p *warmPool) usedLocked() int { return len(p.entries) + len(p.starting) + p.held }

// release gives back a slot taken by take once its agent has been
// stopped or has become a turn.
func (p *warmPool) release() {
	p.mu.Lock()
	p.held--
	p.mu.Unlock()
}

type warmEntry struct {
	w     engine.Warm
	used  time.Time
	timer *time.Timer
}

func newWarmPool(max int, idle time.Duration) *warmPool {
	if idle <= 0 {
		idle = DefaultWarmIdle
	}
	return &warmPool{max: max, idle: idle, entries: map[string]*warmEntry{}, starting: map[string]bool{}, gen: map[string]uint64{}}
}

// placeholderApprover marks a prestarted agent as one whose turn will
// ask (its flags differ); the turn's real Approver comes with Start.
type placeholderApprover struct{}

func (placeholderApprover) Ask(context.Context, engine.ApprovalRequest) engine.ApprovalDecision {
	return engine.ApprovalDecision{Message: "no one to ask"}
}

// Prewarm starts session id's next agent ahead, in the background, when
// warm turns are on, the session's engine can, no turn runs and none is
// waiting already. When every slot is taken, the least recently used
// waiting agent is stopped first to make room (see the bounds above).
// Errors are logged, never returned: a turn then simply starts cold.
func (h *Harness) Prewarm(id string) { h.prewarm(id, true) }

// prewarm is Prewarm; evict says whether it may stop the least recently
// used waiting agent when every slot is taken (a created session may not:
// it only takes a free slot).
func (h *Harness) prewarm(id string, evict bool) {
	if h.warm.max <= 0 {
		return
	}
	s, err := h.Session(id)
	if err != nil {
		return
	}
	pre, ok := h.engines[h.sessionEngine(s)].(engine.Prestarter)
	if !ok || s.Pending != nil {
		return // a fork's or rewind's cut never runs on a warm agent
	}
	h.mu.Lock()
	if h.closed || h.live[id] != nil {
		h.mu.Unlock()
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	gen, evicted, ok := h.warm.reserve(h, id, evict)
	if !ok {
		h.wg.Done()
		return
	}
	go func() {
		defer h.wg.Done()
		if evicted != nil {
			evicted.Stop()
			h.warm.release()
		}
		plan, err := h.plan(s, true)
		if err != nil {
			h.warm.unreserve(id)
			h.log.Debug().Str("sessionId", id).Err(err).Msg("warm turn not started")
			return
		}
		req := plan.Request
		req.Logger = h.projectLog(s.ProjectRoot) // its process:spawn and process:exit go to harness.log, as a cold turn's
		if h.cfg.Approvals && engine.AsksApproval(req.PermissionMode) {
			req.Approver = placeholderApprover{}
		}
		w, err := pre.Prestart(context.Background(), req)
		if err != nil {
			h.warm.unreserve(id)
			h.log.Warn().Str("sessionId", id).Err(err).Msg("warm turn could not start")
			return
		}
		if why := h.warm.put(h, id, gen, w); why != "" {
			w.Stop()
			h.warm.release()
			h.log.Info().Str("sessionId", id).Int("pid", w.Pid()).Str("reason", why).Msg("warm turn discarded")
			return
		}
		h.log.Info().Str("sessionId", id).Int("pid", w.Pid()).Str("engine", pre.Name()).Msg("warm turn started")
	}()
}

// reserve takes a slot for session id's warm agent before it is started.
// It fails when the pool is closed, the session has one starting or
// waiting, or every slot is taken and evict is false or no agent waits.
// On eviction the least recently used waiting agent is returned, taken
// out of the pool but still holding its slot: the caller stops it and
// then calls release.
func (p *warmPool) reserve(h *Harness, id string, evict bool) (gen uint64, evicted engine.Warm, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.entries[id] != nil || p.starting[id] {
		return 0, nil, false
	}
	if p.usedLocked() >= p.max {
		if !evict || len(p.entries) == 0 {
			h.log.Debug().Str("sessionId", id).Int("warm", p.max).Msg("warm turn not started: every slot is taken")
			return 0, nil, false
		}
		oldID, oldest := "", time.Time{}
		for k, e := range p.entries {
			if oldID == "" || e.used.Before(oldest) {
				oldID, oldest = k, e.used
			}
		}
		e := p.entries[oldID]
		e.timer.Stop()
		delete(p.entries, oldID)
		p.held++
		evicted = e.w
		h.log.Info().Str("sessionId", oldID).Int("pid", e.w.Pid()).Str("reason", "least recently used, over --warm").Msg("warm turn discarded")
	}
	p.starting[id] = true
	return p.gen[id], evicted, true
}

// unreserve gives back session id's slot when its agent did not start.
func (p *warmPool) unreserve(id string) {
	p.mu.Lock()
	delete(p.starting, id)
	p.mu.Unlock()
}

// put keeps w for session id in the slot reserve took, unless something
// happened to the session since gen (its reason is returned then, and
// the slot stays taken as held until the caller has stopped w and called
// release).
func (p *warmPool) put(h *Harness, id string, gen uint64, w engine.Warm) string {
	h.mu.Lock()
	busy := h.live[id] != nil
	h.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.starting, id)
	switch {
	case p.closed:
		p.held++
		return "shutdown"
	case busy || p.gen[id] != gen:
		p.held++
		return "the session's turn started meanwhile"
	}
	e := &warmEntry{w: w, used: time.Now()}
	e.timer = time.AfterFunc(p.idle, func() { h.dropWarm(id, w, "idle for "+p.idle.String()) })
	p.entries[id] = e
	return ""
}

// take removes and returns session id's warm agent (nil if none), and
// marks the session as having started a turn. A returned agent keeps its
// slot until the caller has started or stopped it and called release.
func (p *warmPool) take(id string) engine.Warm {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen[id]++
	e := p.entries[id]
	if e == nil {
		return nil
	}
	e.timer.Stop()
	delete(p.entries, id)
	p.held++
	return e.w
}

// dropWarm stops session id's warm agent (only w, when w is given).
func (h *Harness) dropWarm(id string, w engine.Warm, why string) {
	p := h.warm
	p.mu.Lock()
	e := p.entries[id]
	if e == nil || (w != nil && e.w != w) {
		p.mu.Unlock()
		return
	}
	e.timer.Stop()
	delete(p.entries, id)
	p.held++
	p.mu.Unlock()
	e.w.Stop()
	p.release()
	h.log.Info().Str("sessionId", id).Int("pid", e.w.Pid()).Str("reason", why).Msg("warm turn discarded")
}

// stopWarm stops every warm agent and refuses new ones (Shutdown).
func (h *Harness) stopWarm() {
	p := h.warm
	p.mu.Lock()
	p.closed = true
	entries := p.entries
	p.entries = map[string]*warmEntry{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for id, e := range entries {
		e.timer.Stop()
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.w.Stop()
			h.log.Info().Str("sessionId", id).Int("pid", e.w.Pid()).Str("reason", "shutdown").Msg("warm turn discarded")
		}()
	}
	wg.Wait()
}

// warmPids returns the process ids of the waiting warm agents by
// session (for the root package's tests: export_test.go).
func (h *Harness) warmPids() map[string]int {
	p := h.warm
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.entries))
	for id, e := range p.entries {
		out[id] = e.w.Pid()
	}
	return out
}

// startEngineTurn starts req on eng: on session id's warm agent when it
// waits, lives and matches, else cold.
func (h *Harness) startEngineTurn(eng engine.Engine, req engine.Request) (engine.Turn, error) {
	if w := h.warm.take(req.SessionKey); w != nil {
		why := ""
		switch {
		case req.Fork || req.ResumeAt != "":
			why = "the turn forks or cuts its conversation"
		case !w.Alive():
			why = "it died while waiting"
		case !w.Matches(req):
			why = "the turn's flags, environment or system prompt changed"
		default:
			t, err := w.Start(req)
			if err == nil {
				h.warm.release() // a running turn now, no longer a warm agent
				h.log.Info().Str("sessionId", req.SessionKey).Int("pid", w.Pid()).Msg("warm turn used")
				return t, nil
			}
			why = err.Error()
		}
		w.Stop()
		h.warm.release()
		h.log.Info().Str("sessionId", req.SessionKey).Int("pid", w.Pid()).Str("reason", why).Msg("warm turn discarded; starting cold")
	}
	return eng.StartTurn(context.Background(), req)
}
