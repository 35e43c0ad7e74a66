package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/chirality/harness"
	"github.com/nats-io/nats.go/jetstream"
)

// NodeInfo is one node as GET /api/harness/nodes lists it.
type NodeInfo = harness.NodeInfo

// lease is a node's entry in the nodes bucket, put every LeaseTTL/3; the
// bucket's TTL removes it LeaseTTL after the last put.
type lease struct {
	Node        string    `json:"node"`
	ClusterAddr string    `json:"clusterAddr"`
	StartedAt   time.Time `json:"startedAt"`
	At          time.Time `json:"at"`
}

// heartbeat renews the node's lease; false when the put failed.
func (n *Node) heartbeat() bool {
	b, _ := json.Marshal(lease{Node: n.cfg.Node, ClusterAddr: n.ClusterAddr(), StartedAt: n.started, At: time.Now().UTC()})
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.LeaseTTL/3)
	defer cancel()
	if _, err := n.nodes.Put(ctx, n.cfg.Node, b); err != nil && n.ctx.Err() == nil {
		n.log.Warn().Err(err).Msg("cluster: lease not renewed")
		return false
	}
	return true
}

// beat renews the lease every LeaseTTL/3. A renewal that fails (JetStream
// slow to answer, a stream leader changing) is tried again every
// LeaseTTL/12 instead of at the next tick, so one failed put does not
// take a third of the lease's life: the lease lapses only when the
// node cannot renew it for all of LeaseTTL.
func (n *Node) beat() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.LeaseTTL / 3)
	defer t.Stop()
	retry := max(n.cfg.LeaseTTL/12, 50*time.Millisecond)
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		for !n.heartbeat() {
			select {
			case <-n.ctx.Done():
				return
			case <-time.After(retry):
			}
		}
	}
}

// up reports whether node holds its lease.
func (n *Node) up(ctx context.Context, node string) (bool, error) {
	if node == n.cfg.Node {
		return true, nil
	}
	_, err := n.nodes.Get(ctx, node)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Nodes lists the nodes that own sessions or hold a lease, by name.
func (n *Node) Nodes(ctx context.Context) ([]NodeInfo, error) {
	byName := map[string]*NodeInfo{}
	keys, err := n.nodes.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	for k := range keys.Keys() {
		e, err := n.nodes.Get(ctx, k)
		if err != nil {
			continue // expired meanwhile
		}
		var l lease
		if json.Unmarshal(e.Value(), &l) != nil {
			continue
		}
		byName[k] = &NodeInfo{Node: k, State: "up", ClusterAddr: l.ClusterAddr, StartedAt: l.StartedAt, LastSeen: l.At}
	}
	all, err := n.allSessions(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range all {
		ni := byName[e.Node]
		if ni == nil {
			ni = &NodeInfo{Node: e.Node, State: "down"}
			byName[e.Node] = ni
		}
		ni.Sessions++
	}
	out := make([]NodeInfo, 0, len(byName))
	for _, ni := range byName {
		out = append(out, *ni)
	}
	slices.SortFunc(out, func(a, b NodeInfo) int { return strings.Compare(a.Node, b.Node) })
	return out, nil
}
