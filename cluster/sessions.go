package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/trust"
	"github.com/nats-io/nats.go/jetstream"
)

// sessionEntry is a session in the sessions bucket, put by the node that
// owns it (whose event log holds it): who serves it, and its summary as
// GET /session/list gives it, for the other nodes' lists.
type sessionEntry struct {
	Node        string                 `json:"node"`
	ProjectRoot string                 `json:"projectRoot"`
	Summary     harness.SessionSummary `json:"summary"`
	// Grants are what a person gave the session, in its owner's trust
	// record (the session file is the agent's to write): a node that
	// takes the session from an owner that is down records them.
	Grants *trust.SessionGrants `json:"grants,omitempty"`

	// rev is the bucket's revision of the entry (not stored in it): a
	// node writes its entry only at the revision it last saw, so a view
	// that lags (a sync that listed before a move, a watch behind) never
	// overwrites a newer owner.
	rev uint64
}

// directory is the node's copy of the sessions bucket, kept by a watch
// and by the node's own writes, whichever knows the later revision.
type directory struct {
	mu    sync.RWMutex
	byID  map[string]sessionEntry
	gone  map[string]uint64 // deleted keys: the revision known deleted at
	made  map[string]bool   // sessions this node made or ran, not yet in the bucket
	ready chan struct{}
}

// known is the latest revision of key id the directory holds (0: none).
// The caller holds d.mu.
func (d *directory) known(id string) uint64 {
	if e, ok := d.byID[id]; ok {
		return e.rev
	}
	return d.gone[id]
}

// put records e as key id at revision e.rev, unless the directory knows
// a later revision already (the watch delivers a node's own write after
// the write returned, and a move's after the next).
func (d *directory) put(id string, e sessionEntry) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e.rev <= d.known(id) {
		return false
	}
	d.byID[id] = e
	delete(d.gone, id)
	return true
}

// del records key id deleted at revision rev, unless the directory knows
// a later revision already.
func (d *directory) del(id string, rev uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if rev <= d.known(id) {
		return
	}
	delete(d.byID, id)
	d.gone[id] = rev
}

// claim marks session id as this node's to put into the bucket: it made
// it, or stored an event of it.
func (n *Node) claim(id string) {
	n.dir.mu.Lock()
	if _, ok := n.dir.byID[id]; !ok {
		n.dir.made[id] = true
	}
	n.dir.mu.Unlock()
}

// claimable reports whether this node puts session s, not in the bucket
// yet, there as its own: one it made or ran, or one nobody claimed for
// two lease periods (found on disk). A root on shared storage holds
// other nodes' sessions too, which their nodes claim first; two nodes
// claiming one at once, the bucket's create lets one win.
func (n *Node) claimable(s harness.SessionSummary) bool {
	n.dir.mu.RLock()
	made := n.dir.made[s.ID]
	n.dir.mu.RUnlock()
	return made || time.Since(s.CreatedAt) > 2*n.cfg.LeaseTTL
}

func (n *Node) watchSessions() error {
	w, err := n.sessions.WatchAll(n.ctx)
	if err != nil {
		return err
	}
	n.dir = &directory{byID: map[string]sessionEntry{}, gone: map[string]uint64{}, made: map[string]bool{}, ready: make(chan struct{})}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer w.Stop()
		readyOnce := sync.OnceFunc(func() { close(n.dir.ready) })
		defer readyOnce()
		for {
			select {
			case <-n.ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil { // the initial values are in
					readyOnce()
					continue
				}
				if e.Operation() == jetstream.KeyValuePut {
					var se sessionEntry
					if json.Unmarshal(e.Value(), &se) == nil {
						se.rev = e.Revision()
						n.dir.put(e.Key(), se)
					}
				} else {
					n.dir.del(e.Key(), e.Revision())
				}
			}
		}
	}()
	select {
	case <-n.dir.ready:
	case <-time.After(30 * time.Second):
	}
	return nil
}

func (n *Node) entry(id string) (sessionEntry, bool) {
	n.dir.mu.RLock()
	defer n.dir.mu.RUnlock()
	e, ok := n.dir.byID[id]
	return e, ok
}

func (n *Node) allSessions(context.Context) ([]sessionEntry, error) {
	n.dir.mu.RLock()
	defer n.dir.mu.RUnlock()
	out := make([]sessionEntry, 0, len(n.dir.byID))
	for _, e := range n.dir.byID {
		out = append(out, e)
	}
	return out, nil
}

// syncSessions puts this node's sessions into the bucket, as they
// changed since the bucket last said, and removes the ones it no longer
// has (deleted, also while the node was down).
func (n *Node) syncSessions(ctx context.Context) {
	list, err := n.h.ListSessions("")
	if err != nil {
		n.log.Warn().Err(err).Msg("cluster: sessions not listed")
		return
	}
	mine := map[string]bool{}
	records := map[string]*trust.Record{}
	for _, s := range list {
		old, known := n.entry(s.ID)
		if known && old.Node != n.cfg.Node || !known && !n.claimable(s) {
			continue // another node's, on a root this node sees too
		}
		mine[s.ID] = true
		e := sessionEntry{Node: n.cfg.Node, ProjectRoot: s.ProjectRoot, Summary: s}
		rec, ok := records[s.ProjectRoot]
		if !ok { // one read of a project's trust record per sync
			rec, _ = n.h.Trust().Load(s.ProjectRoot)
			records[s.ProjectRoot] = rec
		}
		if g := rec.Sessions[s.ID]; g != nil {
			e.Grants = g
		}
		b, err := json.Marshal(e)
		if err != nil {
			continue
		}
		if ob, _ := json.Marshal(old); known && bytes.Equal(ob, b) {
			continue
		}
		if h := n.hooks.Load(); h != nil && h.beforeWrite != nil {
			h.beforeWrite(s)
		}
		var rev uint64
		if known {
			// At the revision this node saw itself owning it: if the
			// session moved meanwhile (the list above is older than the
			// move), the bucket has a later revision and refuses it.
			if rev, err = n.sessions.Update(ctx, s.ID, b, old.rev); errors.Is(err, jetstream.ErrKeyExists) {
				continue // the watch brings the newer entry
			}
		} else if rev, err = n.sessions.Create(ctx, s.ID, b); errors.Is(err, jetstream.ErrKeyExists) {
			continue // another node claimed it first
		}
		if err != nil {
			n.log.Warn().Err(err).Str("sessionId", s.ID).Msg("cluster: session not published")
			continue
		}
		e.rev = rev
		n.dir.put(s.ID, e)
		n.dir.mu.Lock()
		delete(n.dir.made, s.ID)
		n.dir.mu.Unlock()
	}
	all, _ := n.allSessions(ctx)
	for _, e := range all {
		if e.Node == n.cfg.Node && !mine[e.Summary.ID] {
			// Only the entry this node saw as its own: not one another
			// node took meanwhile.
			if err := n.sessions.Delete(ctx, e.Summary.ID, jetstream.LastRevision(e.rev)); err == nil {
				n.dir.del(e.Summary.ID, e.rev+1)
			}
		}
	}
	if h := n.hooks.Load(); h != nil && h.synced != nil {
		h.synced()
	}
}

// syncHooks let a test stop a sync at the point a race needs (nil in a
// node that is not tested).
type syncHooks struct {
	beforeWrite func(harness.SessionSummary) // a session's entry is about to be written
	synced      func()                       // a sync ended
}

// poke asks for a sync soon (after a request that may change sessions,
// or an event).
func (n *Node) poke() {
	select {
	case n.pokes <- struct{}{}:
	default:
	}
}

func (n *Node) syncLoop() {
	defer n.wg.Done()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
		n.syncSessions(ctx)
		cancel()
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.pokes:
			// a burst of pokes (every event of a turn) costs one sync
			// per 100 ms
			select {
			case <-n.ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}
