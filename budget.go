package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/persona"
	"github.com/chirality/harness/session"
	"github.com/chirality/harness/usage"
)

// Budget is what a session (or a project's sessions together) may spend:
// MaxCostUSD in US dollars, MaxTokens in tokens of every kind; 0 = no
// limit of that kind.
type Budget struct {
	MaxCostUSD float64 `json:"maxCostUsd,omitempty"`
	MaxTokens  int64   `json:"maxTokens,omitempty"`
}

// IsZero says the budget limits nothing.
func (b Budget) IsZero() bool { return b.MaxCostUSD <= 0 && b.MaxTokens <= 0 }

// ErrBudgetExceeded: the session's budget (or its project's) is spent; no
// turn runs until a person raises it (422).
var ErrBudgetExceeded = engine.NewError(engine.ErrCannot, "budget exceeded")

// ErrInvalidBudget: a budget with a negative or non-finite limit (400).
var ErrInvalidBudget = engine.NewError(engine.ErrInvalid, "invalid budget")

// BudgetError says which budget was spent and how much.
type BudgetError struct {
	// Scope is "session", "persona" or "project".
	Scope string
	// Persona names the persona and its file when Scope is "persona".
	Persona, PersonaFile string
	Budget               Budget
	Spent                usage.Totals
}

func (e *BudgetError) Error() string {
	return "budget exceeded: " + e.summary()
}

func (e *BudgetError) Unwrap() error { return ErrBudgetExceeded }

func (e *BudgetError) summary() string {
	tokens := e.Spent.InputTokens + e.Spent.OutputTokens + e.Spent.CacheReadTokens + e.Spent.CacheWriteTokens
	if e.Scope == "persona" {
		raise := fmt.Sprintf("a person raises it in %s and trusts the file (harness trust accept persona %s)", e.PersonaFile, e.Persona)
		if e.Budget.MaxCostUSD > 0 && e.Spent.CostUSD >= e.Budget.MaxCostUSD {
			return fmt.Sprintf("the session spent $%.4f of the $%.4f budget of its persona %s (max_cost_usd); %s",
				e.Spent.CostUSD, e.Budget.MaxCostUSD, e.Persona, raise)
		}
		return fmt.Sprintf("the session used %d of the %d tokens of its persona %s (max_tokens); %s", tokens, e.Budget.MaxTokens, e.Persona, raise)
	}
	if e.Budget.MaxCostUSD > 0 && e.Spent.CostUSD >= e.Budget.MaxCostUSD {
		return fmt.Sprintf("the %s spent $%.4f of its $%.4f budget (maxCostUsd); a person raises it with PATCH /session/{id} {\"budget\":…}",
			e.Scope, e.Spent.CostUSD, e.Budget.MaxCostUSD)
	}
	return fmt.Sprintf("the %s used %d of its %d tokens (maxTokens); a person raises it with PATCH /session/{id} {\"budget\":…}",
		e.Scope, tokens, e.Budget.MaxTokens)
}

// over says whether spent is at or over b.
func (b Budget) over(spent usage.Totals) bool {
	tokens := spent.InputTokens + spent.OutputTokens + spent.CacheReadTokens + spent.CacheWriteTokens
	return (b.MaxCostUSD > 0 && spent.CostUSD >= b.MaxCostUSD) || (b.MaxTokens > 0 && tokens >= b.MaxTokens)
}

// Validate refuses a negative or non-finite limit (ErrInvalidBudget).
func (b Budget) Validate() error {
	if b.MaxCostUSD < 0 || b.MaxTokens < 0 || b.MaxCostUSD != b.MaxCostUSD || b.MaxCostUSD > 1e12 {
		return fmt.Errorf("%w: maxCostUsd and maxTokens must be 0 (no limit) or positive", ErrInvalidBudget)
	}
	return nil
}

// budgetPath is where session id's budget is kept: in the state
// directory, outside every project, so no agent of the project can
// raise it by editing its session file.
func (h *Harness) budgetPath(id string) string {
	return filepath.Join(h.store.StateDir(), "budgets", id+".json")
}

// SessionBudget is the budget a person set on session id (zero when
// none).
func (h *Harness) SessionBudget(id string) Budget {
	var b Budget
	if !session.ValidID(id) {
		return b
	}
	data, err := os.ReadFile(h.budgetPath(id))
	if err == nil {
		_ = json.Unmarshal(data, &b)
	}
	return b
}

// SetBudget sets session id's budget (a person's action: the gateway's
// create and PATCH, never an agent). A zero budget removes it.
func (h *Harness) SetBudget(id string, b Budget) error {
	if err := b.Validate(); err != nil {
		return err
	}
	if _, err := h.Session(id); err != nil {
		return err
	}
	path := h.budgetPath(id)
	if b.IsZero() {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	data, _ := json.Marshal(b)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// turnBudget is what a turn may spend: the budgets that apply and what
// was spent before it.
type turnBudget struct {
	limits  []*BudgetError // Scope, Budget and Spent before the turn
	crossed *BudgetError   // the budget the turn crossed, with what was spent then
}

// budgetFor is what session s may still spend, or a *BudgetError when a
// budget is already spent: the session's own and its project's
// (Config.ProjectBudgets). Its persona's is added once the turn's plan
// has the persona as a person trusted it (addPersona).
func (h *Harness) budgetFor(s *session.Session) (*turnBudget, error) {
	tb := &turnBudget{}
	if b := h.SessionBudget(s.ID); !b.IsZero() {
		tb.limits = append(tb.limits, &BudgetError{Scope: "session", Budget: b, Spent: h.SessionUsage(s)})
	}
	if b := h.projectBudget(s.ProjectRoot); !b.IsZero() {
		ix := h.refreshUsage([]string{s.ProjectRoot})
		tb.limits = append(tb.limits, &BudgetError{Scope: "project", Budget: b, Spent: ix.Report([]string{s.ProjectRoot}, usage.Query{}).Total})
	}
	for _, l := range tb.limits {
		if l.Budget.over(l.Spent) {
			return nil, l
		}
	}
	return tb, nil
}

// addPersona adds the budget of the session's persona p (the one a
// person trusted: the plan's) to tb, or returns it as a *BudgetError
// when the session already spent it. p's budget limits each session of
// the persona, so what counts is the session's spend.
func (tb *turnBudget) addPersona(h *Harness, s *session.Session, p *persona.Persona) error {
	if p == nil {
		return nil
	}
	b := Budget{MaxCostUSD: p.MaxCostUSD, MaxTokens: p.MaxTokens}
	if b.IsZero() {
		return nil
	}
	l := &BudgetError{Scope: "persona", Persona: p.ID, PersonaFile: p.SourceFile, Budget: b, Spent: h.SessionUsage(s)}
	if b.over(l.Spent) {
		return l
	}
	tb.limits = append(tb.limits, l)
	return nil
}

// spend adds a turn's usage:update to what the turn spent and says the
// budget it crossed, once, or nil.
func (tb *turnBudget) spend(turn event.UsageUpdate) *BudgetError {
	if tb == nil || tb.crossed != nil {
		return nil
	}
	for _, l := range tb.limits {
		spent := l.Spent
		spent.Add(usage.Totals{CostUSD: turn.CostUSD, InputTokens: turn.InputTokens, OutputTokens: turn.OutputTokens,
			CacheReadTokens: turn.CacheReadTokens, CacheWriteTokens: turn.CacheWriteTokens})
		if l.Budget.over(spent) {
			c := *l
			c.Spent = spent
			tb.crossed = &c
			return tb.crossed
		}
	}
	return nil
}

// budgetError is the session:error a turn that crossed its budget ends
// with, instead of the engine's (interrupted, most often).
func (tb *turnBudget) budgetError(engineErr *event.SessionError) *event.SessionError {
	e := &event.SessionError{Kind: event.ErrorBudgetExceeded, Error: tb.crossed.Error(), CostUSD: engineErr.CostUSD,
		Budget: &event.BudgetInfo{Scope: tb.crossed.Scope, MaxCostUSD: tb.crossed.Budget.MaxCostUSD, MaxTokens: tb.crossed.Budget.MaxTokens,
			SpentCostUSD: tb.crossed.Spent.CostUSD, SpentTokens: tb.crossed.Spent.InputTokens + tb.crossed.Spent.OutputTokens +
				tb.crossed.Spent.CacheReadTokens + tb.crossed.Spent.CacheWriteTokens}}
	return e
}

// projectBudget is the budget Config.ProjectBudgets gives root (its key
// resolved as project roots are).
func (h *Harness) projectBudget(root string) Budget {
	for k, b := range h.cfg.ProjectBudgets {
		if k == root {
			return b
		}
		if abs, err := filepath.Abs(k); err == nil {
			if real, err := filepath.EvalSymlinks(abs); err == nil && real == root {
				return b
			}
		}
	}
	return Budget{}
}

// budgetEnd is a turn's session:complete or process:exit when it crossed
// its budget and still completed (the model call after the crossing one
// had begun before the interrupt reached the engine): the turn ends with
// session:error budget_exceeded all the same, and its exit is not 0.
func (r *runner) budgetEnd(ev event.Event) event.Event {
	if r.budget == nil || r.budget.crossed == nil {
		return ev
	}
	switch {
	case ev.Type == event.TypeSessionComplete:
		return event.Event{Type: event.TypeSessionError, Error: r.budget.budgetError(&event.SessionError{CostUSD: ev.Complete.CostUSD}), Time: ev.Time}
	case ev.Type == event.TypeProcessExit && ev.Exit != nil && ev.Exit.Code == 0:
		ev.Exit = engine.TurnExit(false, 0, "")
	}
	return ev
}
