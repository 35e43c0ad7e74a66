package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/chirality/harness"
	"github.com/nats-io/nats.go/jetstream"
)

// sessionEntry is a session in the sessions bucket, put by the node that
// owns it (whose event log holds it): who serves it, and its summary as
// GET /session/list gives it, for the other nodes' lists.
type sessionEntry struct {
	Node        string                 `json:"node"`
	ProjectRoot string                 `json:"projectRoot"`
	Summary     harness.SessionSummary `json:"summary"`
}

// directory is the node's copy of the sessions bucket, kept by a watch.
type directory struct {
	mu    sync.RWMutex
	byID  map[string]sessionEntry
	made  map[string]bool // sessions this node made or ran, not yet in the bucket
	ready chan struct{}
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
	n.dir = &directory{byID: map[string]sessionEntry{}, made: map[string]bool{}, ready: make(chan struct{})}
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
				n.dir.mu.Lock()
				if e.Operation() == jetstream.KeyValuePut {
					var se sessionEntry
					if json.Unmarshal(e.Value(), &se) == nil {
						n.dir.byID[e.Key()] = se
					}
				} else {
					delete(n.dir.byID, e.Key())
				}
				n.dir.mu.Unlock()
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
	for _, s := range list {
		old, known := n.entry(s.ID)
		if known && old.Node != n.cfg.Node || !known && !n.claimable(s) {
			continue // another node's, on a root this node sees too
		}
		mine[s.ID] = true
		e := sessionEntry{Node: n.cfg.Node, ProjectRoot: s.ProjectRoot, Summary: s}
		b, err := json.Marshal(e)
		if err != nil {
			continue
		}
		if known {
			if ob, _ := json.Marshal(old); bytes.Equal(ob, b) {
				continue
			}
			_, err = n.sessions.Put(ctx, s.ID, b)
		} else if _, err = n.sessions.Create(ctx, s.ID, b); errors.Is(err, jetstream.ErrKeyExists) {
			continue // another node claimed it first
		}
		if err != nil {
			n.log.Warn().Err(err).Str("sessionId", s.ID).Msg("cluster: session not published")
			continue
		}
		n.dir.mu.Lock()
		n.dir.byID[s.ID] = e
		delete(n.dir.made, s.ID)
		n.dir.mu.Unlock()
	}
	all, _ := n.allSessions(ctx)
	for _, e := range all {
		if e.Node == n.cfg.Node && !mine[e.Summary.ID] {
			if err := n.sessions.Delete(ctx, e.Summary.ID); err == nil {
				n.dir.mu.Lock()
				delete(n.dir.byID, e.Summary.ID)
				n.dir.mu.Unlock()
			}
		}
	}
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
