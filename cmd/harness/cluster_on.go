//go:build !nocluster

package main

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/chirality/harness/cluster"
)

// clusterBuilt says this binary can join a cluster (--node).
const clusterBuilt = true

// startNode starts the embedded NATS JetStream node (issue 36).
func startNode(ctx context.Context, f *clusterFlags, dir, secret string, logger *zerolog.Logger) (clusterNode, error) {
	n, err := cluster.Start(ctx, cluster.Config{Node: f.node, Cluster: f.cluster, Listen: f.listen, Peers: f.peers,
		Dir: dir, Secret: secret, Logger: logger})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return n, nil
}
