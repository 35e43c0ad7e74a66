//go:build nocluster

package main

import (
	"context"
	"errors"

	"github.com/rs/zerolog"
)

// clusterBuilt says this binary can join a cluster (--node).
const clusterBuilt = false

// errNoCluster is what --node answers in a build without the cluster.
var errNoCluster = errors.New("--node: this harness was built without the cluster (go build -tags nocluster); build it without that tag to join a cluster")

// startNode refuses: the cluster package and its NATS server are not
// linked into this build (issue 36: a server that never uses --node
// leaves them out and saves the binary's pages they cost).
func startNode(context.Context, *clusterFlags, string, string, *zerolog.Logger) (clusterNode, error) {
	return nil, errNoCluster
}
