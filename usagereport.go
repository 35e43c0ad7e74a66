package harness

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/session"
	"github.com/chirality/harness/usage"
)

// ErrInvalidUsageQuery: a usage query's grouping or time is not one
// the report knows (400).
var ErrInvalidUsageQuery = engine.NewError(engine.ErrInvalid, "invalid usage query")

// usageIndex is the Harness's usage.Index, loaded from the state
// directory on first use and saved there when a report read something.
type usageIndex struct {
	once sync.Once
	ix   *usage.Index
	mu   sync.Mutex // one refresh at a time
}

// UsageQuery selects a usage report: By groups it (usage.BySession,
// ByEngine, ByModel, ByDay, "" none), Since leaves out what came before
// (at the hour), ProjectRoot counts one project's sessions ("" every
// project this harness knows).
type UsageQuery struct {
	By          string
	Since       time.Time
	ProjectRoot string
	// SessionID counts one session only.
	SessionID string
}

// sessionRoots is projectRoot resolved, or when empty every root this
// harness knows (its allowed roots and the projects it used), sorted.
func (h *Harness) sessionRoots(projectRoot string) ([]string, error) {
	if projectRoot != "" {
		r, err := h.ResolveRoot(projectRoot)
		if err != nil {
			return nil, err
		}
		return []string{r}, nil
	}
	set := map[string]bool{}
	for _, r := range h.roots {
		set[r] = true
	}
	h.mu.Lock()
	for r := range h.seen {
		set[r] = true
	}
	h.mu.Unlock()
	roots := make([]string, 0, len(set))
	for r := range set {
		roots = append(roots, r)
	}
	sort.Strings(roots)
	return roots, nil
}

func (h *Harness) usageIndexPath() string {
	return usage.IndexFile(h.store.StateDir())
}

// Usage reports what the sessions' turns used, from their event logs:
// each log is read once and then from where it was left.
func (h *Harness) Usage(q UsageQuery) (usage.Report, error) {
	if !usage.ValidBy(q.By) {
		return usage.Report{}, fmt.Errorf("%w: by must be session, engine, model or day, not %q", ErrInvalidUsageQuery, q.By)
	}
	roots, err := h.sessionRoots(q.ProjectRoot)
	if err != nil {
		return usage.Report{}, err
	}
	ix := h.refreshUsage(roots)
	return ix.Report(roots, usage.Query{By: q.By, Since: q.Since, SessionID: q.SessionID}), nil
}

// SessionUsage is what session id's turns used.
func (h *Harness) SessionUsage(s *session.Session) usage.Totals {
	ix := h.refreshUsage([]string{s.ProjectRoot})
	return ix.Report([]string{s.ProjectRoot}, usage.Query{SessionID: s.ID}).Total
}

// refreshUsage brings the index up to date with the logs of roots.
func (h *Harness) refreshUsage(roots []string) *usage.Index {
	u := &h.usage
	u.once.Do(func() { u.ix = usage.Load(h.usageIndexPath()) })
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.ix.Refresh(roots, session.SessionsDir, h.usageIndexPath()); err != nil {
		h.log.Warn().Err(err).Msg("usage index not saved")
	}
	return u.ix
}
