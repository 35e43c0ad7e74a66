package cluster

import (
	"context"
	"encoding/json"

	"github.com/chirality/harness"
)

// For the tests that attack the node from outside (trust_test.go).

// ClientURL is the embedded NATS server's client address.
func (n *Node) ClientURL() string { return n.ns.ClientURL() }

// NumRoutes is how many routes the embedded NATS server has.
func (n *Node) NumRoutes() int { return n.ns.NumRoutes() }

// HookSync calls beforeWrite with a session's summary as the node's
// sync is about to write its entry, and synced as a sync ends.
func (n *Node) HookSync(beforeWrite func(harness.SessionSummary), synced func()) {
	n.hooks.Store(&syncHooks{beforeWrite: beforeWrite, synced: synced})
}

// Owner is the node the sessions bucket says owns session id.
func (n *Node) Owner(ctx context.Context, id string) (string, error) {
	kv, err := n.sessions.Get(ctx, id)
	if err != nil {
		return "", err
	}
	var e sessionEntry
	err = json.Unmarshal(kv.Value(), &e)
	return e.Node, err
}

// Rules are the "always" rules the sessions bucket's entry of session id
// carries (its owner's trust record, as its last sync published it).
func (n *Node) Rules(ctx context.Context, id string) ([]string, error) {
	kv, err := n.sessions.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	var e sessionEntry
	err = json.Unmarshal(kv.Value(), &e)
	if e.Grants == nil {
		return nil, err
	}
	return e.Grants.Rules, err
}
