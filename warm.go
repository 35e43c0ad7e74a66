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
// Bounds: at most Config.WarmTurns agents wait at once (least recently
// used out first), each at most Config.WarmIdle. A session's warm agent
// is stopped when the session is deleted, on an interrupt while no turn
// runs, when its turn starts another way, and at Shutdown. Every start,
// use and discard is logged with its reason on the server log.

// DefaultWarmIdle is how long a warm agent waits for its message.
const DefaultWarmIdle = 10 * time.Minute

type warmPool struct {
	max  int
	idle time.Duration

	mu      sync.Mutex
	entries map[string]*warmEntry // by session ID
	gen     map[string]uint64     // bumped whenever a session's turn starts or it is deleted
	closed  bool
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
	return &warmPool{max: max, idle: idle, entries: map[string]*warmEntry{}, gen: map[string]uint64{}}
}

// placeholderApprover marks a prestarted agent as one whose turn will
// ask (its flags differ); the turn's real Approver comes with Start.
type placeholderApprover struct{}

func (placeholderApprover) Ask(context.Context, engine.ApprovalRequest) engine.ApprovalDecision {
	return engine.ApprovalDecision{Message: "no one to ask"}
}

// Prewarm starts session id's next agent ahead, in the background, when
// warm turns are on, the session's engine can, no turn runs and none is
// waiting already. Errors are logged, never returned: a turn then simply
// starts cold.
func (h *Harness) Prewarm(id string) {
	if h.warm.max <= 0 {
		return
	}
	s, err := h.Session(id)
	if err != nil {
		return
	}
	pre, ok := h.engines[h.sessionEngine(s)].(engine.Prestarter)
	if !ok {
		return
	}
	h.mu.Lock()
	if h.closed || h.live[id] != nil {
		h.mu.Unlock()
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	h.warm.mu.Lock()
	gen, have := h.warm.gen[id], h.warm.entries[id] != nil
	h.warm.mu.Unlock()
	if have {
		h.wg.Done()
		return
	}
	go func() {
		defer h.wg.Done()
		plan, err := h.plan(s, true)
		if err != nil {
			h.log.Debug().Str("sessionId", id).Err(err).Msg("warm turn not started")
			return
		}
		req := plan.Request
		if h.cfg.Approvals && engine.AsksApproval(req.PermissionMode) {
			req.Approver = placeholderApprover{}
		}
		w, err := pre.Prestart(context.Background(), req)
		if err != nil {
			h.log.Warn().Str("sessionId", id).Err(err).Msg("warm turn could not start")
			return
		}
		if why := h.warm.put(h, id, gen, w); why != "" {
			w.Stop()
			h.log.Info().Str("sessionId", id).Int("pid", w.Pid()).Str("reason", why).Msg("warm turn discarded")
			return
		}
		h.log.Info().Str("sessionId", id).Int("pid", w.Pid()).Str("engine", pre.Name()).Msg("warm turn started")
	}()
}

// put keeps w for session id unless something happened to the session
// since gen (its reason is returned then), evicting the least recently
// used entry when full.
func (p *warmPool) put(h *Harness, id string, gen uint64, w engine.Warm) string {
	h.mu.Lock()
	busy := h.live[id] != nil
	h.mu.Unlock()
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		return "shutdown"
	case busy || p.gen[id] != gen:
		p.mu.Unlock()
		return "the session's turn started meanwhile"
	case p.entries[id] != nil:
		p.mu.Unlock()
		return "another one is waiting already"
	}
	var evicted []engine.Warm
	for len(p.entries) >= p.max {
		oldID, oldest := "", time.Time{}
		for k, e := range p.entries {
			if oldID == "" || e.used.Before(oldest) {
				oldID, oldest = k, e.used
			}
		}
		e := p.entries[oldID]
		e.timer.Stop()
		delete(p.entries, oldID)
		evicted = append(evicted, e.w)
		h.log.Info().Str("sessionId", oldID).Int("pid", e.w.Pid()).Str("reason", "least recently used, over --warm").Msg("warm turn discarded")
	}
	e := &warmEntry{w: w, used: time.Now()}
	e.timer = time.AfterFunc(p.idle, func() { h.dropWarm(id, w, "idle for "+p.idle.String()) })
	p.entries[id] = e
	p.mu.Unlock()
	for _, w := range evicted {
		w.Stop()
	}
	return ""
}

// take removes and returns session id's warm agent (nil if none), and
// marks the session as having started a turn.
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
	p.mu.Unlock()
	e.w.Stop()
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

// WarmPids returns the process ids of the waiting warm agents by
// session (for tests and metrics).
func (h *Harness) WarmPids() map[string]int {
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
		case !w.Alive():
			why = "it died while waiting"
		case !w.Matches(req):
			why = "the turn's flags, environment or system prompt changed"
		default:
			t, err := w.Start(req)
			if err == nil {
				h.log.Info().Str("sessionId", req.SessionKey).Int("pid", w.Pid()).Msg("warm turn used")
				return t, nil
			}
			why = err.Error()
		}
		w.Stop()
		h.log.Info().Str("sessionId", req.SessionKey).Int("pid", w.Pid()).Str("reason", why).Msg("warm turn discarded; starting cold")
	}
	return eng.StartTurn(context.Background(), req)
}
