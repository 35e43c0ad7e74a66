package cluster

import (
	"bytes"
	"context"
	"encoding/json"
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
	ready chan struct{}
}

func (n *Node) watchSessions() error {
	w, err := n.sessions.WatchAll(n.ctx)
	if err != nil {
		return err
	}
	n.dir = &directory{byID: map[string]sessionEntry{}, ready: make(chan struct{})}
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
		mine[s.ID] = true
		e := sessionEntry{Node: n.cfg.Node, ProjectRoot: s.ProjectRoot, Summary: s}
		b, err := json.Marshal(e)
		if err != nil {
			continue
		}
		if old, ok := n.entry(s.ID); ok {
			if ob, _ := json.Marshal(old); bytes.Equal(ob, b) {
				continue
			}
		}
		if _, err := n.sessions.Put(ctx, s.ID, b); err != nil {
			n.log.Warn().Err(err).Str("sessionId", s.ID).Msg("cluster: session not published")
			continue
		}
		n.dir.mu.Lock()
		n.dir.byID[s.ID] = e
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
