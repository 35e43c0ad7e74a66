package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/chirality/harness"
	"github.com/chirality/harness/session"
)

// clusterFlags are serve's cluster flags (issue 36); without --node the
// server starts no NATS at all.
type clusterFlags struct {
	node, cluster, listen string
	peers                 stringList
	config                string
}

func flagCluster(cmd *cobra.Command, f *clusterFlags) {
	fs := cmd.Flags()
	nodeUsage := "join a cluster of harness servers as this node (its name, unique in the cluster); starts an embedded NATS JetStream server. Without it: no cluster, nothing changes"
	if !clusterBuilt {
		nodeUsage = "not in this build (built with -tags nocluster): a cluster node needs a harness built without that tag"
	}
	fs.StringVar(&f.node, "node", "", nodeUsage)
	fs.StringVar(&f.cluster, "cluster", "harness", "the cluster's name (with --node)")
	fs.StringVar(&f.listen, "cluster-listen", "127.0.0.1:6250", "where this node takes the other nodes' routes (with --node); beyond loopback HARNESS_CLUSTER_SECRET must be set")
	fs.Var(&f.peers, "cluster-peer", "another node's --cluster-listen address host:port (repeatable)")
	fs.StringVar(&f.config, "cluster-config", "", "a YAML file with node, cluster, listen and peers (the flags' equivalent; flags given win)")
}

// clusterFile is --cluster-config's form.
type clusterFile struct {
	Node    string   `yaml:"node"`
	Cluster string   `yaml:"cluster"`
	Listen  string   `yaml:"listen"`
	Peers   []string `yaml:"peers"`
}

// maxClusterFile bounds --cluster-config.
const maxClusterFile = 64 << 10

// resolve merges --cluster-config under the flags given on the command
// line (changed reports whether a flag was).
func (f *clusterFlags) resolve(changed func(string) bool) error {
	if f.config == "" {
		return nil
	}
	fh, err := os.Open(f.config)
	if err != nil {
		return err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxClusterFile+1))
	if err != nil {
		return err
	}
	if len(b) > maxClusterFile {
		return fmt.Errorf("%s: larger than %d bytes", f.config, maxClusterFile)
	}
	var c clusterFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && err != io.EOF {
		return fmt.Errorf("%s: %w", f.config, err)
	}
	if !changed("node") && c.Node != "" {
		f.node = c.Node
	}
	if !changed("cluster") && c.Cluster != "" {
		f.cluster = c.Cluster
	}
	if !changed("cluster-listen") && c.Listen != "" {
		f.listen = c.Listen
	}
	if !changed("cluster-peer") {
		f.peers = append(f.peers, c.Peers...)
	}
	return nil
}

// clusterNode is what serve uses of a started node (*cluster.Node). The
// cluster package (and the NATS server it embeds) is linked only by
// cluster_on.go: a build with -tags nocluster leaves it out, and --node
// then answers that this build has no cluster (cluster_off.go).
type clusterNode interface {
	Name() string
	ClusterAddr() string
	Close() error
	Attach(h *harness.Harness, api http.Handler) (http.Handler, error)
}

// start starts the node, nil without --node. Its store is under the
// state directory: cluster/<node>/.
func (f *clusterFlags) start(stateDir string, logger *zerolog.Logger) (clusterNode, error) {
	if f.node == "" {
		if len(f.peers) > 0 {
			return nil, fmt.Errorf("--cluster-peer needs --node")
		}
		return nil, nil
	}
	secret := os.Getenv("HARNESS_CLUSTER_SECRET")
	host, _, err := net.SplitHostPort(f.listen)
	if err != nil {
		return nil, fmt.Errorf("--cluster-listen %q: %v", f.listen, err)
	}
	if !isLoopbackHost(host) && secret == "" {
		return nil, fmt.Errorf("refusing to take routes on %s without HARNESS_CLUSTER_SECRET: any machine that reaches it could join the cluster and read every session's events", f.listen)
	}
	if stateDir == "" {
		if stateDir, err = session.DefaultStateDir(); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return startNode(ctx, f, filepath.Join(stateDir, "cluster", f.node), secret, logger)
}

// nodesCmd is `harness nodes`: a cluster's nodes, from any node's
// GET /api/harness/nodes.
func (c *cli) nodesCmd() *cobra.Command {
	var url, token string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "nodes [--url URL] [--token T] [--json]",
		Short: "list the nodes of a harness cluster and the sessions each owns",
		Long: `usage: harness nodes [--url URL] [--token T] [--json]

Asks a server started with --node (any node of the cluster) for the
cluster's nodes: name, state (up while its lease holds; down once it
expired, 10 s after its last heartbeat), route address, sessions owned.
harness nodes move SESSION NODE moves a session to a node that sees its
project root at the same path (shared storage).
`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if token == "" {
				token = os.Getenv("HARNESS_TOKEN")
			}
			return exitWith(c.nodes(url, token, asJSON))
		},
	}
	flagURL(cmd.PersistentFlags(), &url, "http://127.0.0.1:8787", "a node's address") // nodes move's too
	flagToken(cmd, &token, "bearer token of the node's API (or HARNESS_TOKEN)")
	flagJSON(cmd.Flags(), &asJSON, "print the JSON answer")
	cmd.AddCommand(c.nodesMoveCmd(&url))
	return cmd
}

func (c *cli) nodes(url, token string, asJSON bool) int {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(url, "/")+"/api/harness/nodes", nil)
	if err != nil {
		fmt.Fprintln(c.stderr, "harness nodes:", err)
		return 2
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(c.stderr, "harness nodes:", err)
		return 1
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err != nil {
		fmt.Fprintln(c.stderr, "harness nodes:", err)
		return 1
	}
	if res.StatusCode == http.StatusNotFound {
		fmt.Fprintf(c.stderr, "harness nodes: %s is not in a cluster (start it with --node)\n", url)
		return 1
	}
	if res.StatusCode != http.StatusOK {
		fmt.Fprintf(c.stderr, "harness nodes: %s: %s\n", res.Status, strings.TrimSpace(string(body)))
		return 1
	}
	if asJSON {
		c.stdout.Write(body)
		return 0
	}
	var list []harness.NodeInfo
	if err := json.Unmarshal(body, &list); err != nil {
		fmt.Fprintln(c.stderr, "harness nodes: bad answer:", err)
		return 1
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tSESSIONS\tROUTES\tLAST SEEN")
	for _, n := range list {
		seen := "-"
		if !n.LastSeen.IsZero() {
			seen = n.LastSeen.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", n.Node, n.State, n.Sessions, n.ClusterAddr, seen)
	}
	tw.Flush()
	return 0
}
