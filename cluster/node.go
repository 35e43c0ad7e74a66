package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chirality/harness"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// Config says how a node joins its cluster.
type Config struct {
	// Node names this node; unique in the cluster (letters, digits, '-'
	// and '_').
	Node string
	// Cluster names the cluster; every node gives the same.
	Cluster string
	// Listen is where this node takes routes from the others (host:port;
	// port 0 picks one). Routes carry every session's events: keep them
	// on loopback or a private network, and set Secret.
	Listen string
	// Peers are the other nodes' Listen addresses (host:port). With none
	// the node is a cluster of one: JetStream alone, no routes taken.
	Peers []string
	// Dir holds JetStream's store (the node's state directory).
	Dir string
	// Secret, if set, is the routes' shared password
	// (HARNESS_CLUSTER_SECRET): a server that does not know it cannot
	// join. Never in argv.
	Secret string
	// Replicas of the events stream and the buckets (0 = the number of
	// nodes, at most 3).
	Replicas int
	// LeaseTTL is how long a node is "up" after its last heartbeat
	// (0 = DefaultLeaseTTL).
	LeaseTTL time.Duration
	// MaxBytes bounds the events stream (0 = DefaultMaxBytes); the oldest
	// events go first, every owner's log keeps them all.
	MaxBytes int64
	// Logger receives the node's warnings (nil = none).
	Logger *zerolog.Logger
}

// Defaults.
const (
	DefaultLeaseTTL = 10 * time.Second
	DefaultMaxBytes = 1 << 30
	// MaxPayload bounds one event (and one forwarded request or answer).
	MaxPayload = 8 << 20
)

// The names the cluster uses in JetStream.
const (
	eventsStream   = "HARNESS_EVENTS"
	eventsSubject  = "harness.ev."
	nodesBucket    = "harness-nodes"
	sessionsBucket = "harness-sessions"
	forwardSubject = "harness.node."
	seqHeader      = "Harness-Seq"
	nodeHeader     = "Harness-Node"
)

// Node is one harness server's part of the cluster: an embedded NATS
// server with JetStream, clustered by routes with the other nodes', and
// a client of it in the same process.
type Node struct {
	cfg Config
	log zerolog.Logger
	ns  *server.Server
	nc  *nats.Conn
	js  jetstream.JetStream

	events   jetstream.Stream
	nodes    jetstream.KeyValue
	sessions jetstream.KeyValue

	pub *publisher

	// Attach's
	h     *harness.Harness
	local http.Handler
	dir   *directory
	pokes chan struct{}
	hooks atomic.Pointer[syncHooks]

	started time.Time

	mu     sync.Mutex
	closed bool
	stop   context.CancelFunc
	ctx    context.Context
	wg     sync.WaitGroup
}

var nameOK = func(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Start starts the node's NATS server, joins the cluster and makes (or
// finds) the events stream and the buckets, waiting up to ctx's deadline
// for the cluster to elect its JetStream leader (a quorum of the nodes).
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if !nameOK(cfg.Node) {
		return nil, fmt.Errorf("cluster: node name %q: use 1-64 letters, digits, '-' or '_'", cfg.Node)
	}
	if !nameOK(cfg.Cluster) {
		return nil, fmt.Errorf("cluster: cluster name %q: use 1-64 letters, digits, '-' or '_'", cfg.Cluster)
	}
	if cfg.Dir == "" {
		return nil, errors.New("cluster: Config.Dir is required")
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = min(3, 1+len(cfg.Peers))
	}
	token := rand.Text()
	opts, err := serverOptions(cfg, token)
	if err != nil {
		return nil, err
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		go ns.Shutdown()
		return nil, errors.New("cluster: the embedded NATS server did not start within 30 s")
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns), nats.Token(token), nats.Name("harness-"+cfg.Node), nats.MaxReconnects(-1))
	if err != nil {
		ns.Shutdown()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		ns.Shutdown()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	n := &Node{cfg: cfg, log: zerolog.Nop(), ns: ns, nc: nc, js: js, started: time.Now().UTC(), pokes: make(chan struct{}, 1)}
	if cfg.Logger != nil {
		n.log = *cfg.Logger
	}
	n.ctx, n.stop = context.WithCancel(context.Background())
	if err := n.setup(ctx); err != nil {
		n.Close()
		return nil, err
	}
	n.pub = newPublisher(n)
	return n, nil
}

func serverOptions(cfg Config, clientToken string) (*server.Options, error) {
	host, port, err := splitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("cluster: --cluster-listen %q: %w", cfg.Listen, err)
	}
	store := filepath.Join(cfg.Dir, "jetstream")
	if err := os.MkdirAll(store, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	opts := &server.Options{
		ServerName: cfg.Node,
		// Routes start once the client port is open (so there is one,
		// on loopback, on a port of its own); the only client is this
		// process, with a token made at start that nothing else knows.
		Host:          "127.0.0.1",
		Port:          server.RANDOM_PORT,
		Authorization: clientToken,
		JetStream:     true,
		StoreDir:      store,
		MaxPayload:    MaxPayload,
		NoSigs:        true,
		NoLog:         true, // its Fatalf would exit the process; errors come back as Start's
		// Bounded: the events stream (MaxBytes) and the small buckets.
		JetStreamMaxMemory: 64 << 20,
		JetStreamMaxStore:  2*cfg.MaxBytes + 256<<20,
		Cluster: server.ClusterOpts{
			Name: cfg.Cluster, Host: host, Port: port,
			Username: secretUser(cfg.Secret), Password: cfg.Secret,
			ConnectRetries: 120,
		},
	}
	if len(cfg.Peers) == 0 {
		// A cluster of one: JetStream in a cluster will not start without
		// a route (a route to itself is dropped as a duplicate), so a node
		// without peers runs JetStream alone and takes no routes; nodes
		// join a cluster by naming each other as peers.
		opts.Cluster = server.ClusterOpts{}
		return opts, nil
	}
	if port == 0 {
		opts.Cluster.Port = server.RANDOM_PORT
	}
	for _, p := range cfg.Peers {
		h, pp, err := splitHostPort(p)
		if err != nil || pp == 0 {
			return nil, fmt.Errorf("cluster: --cluster-peer %q: want host:port", p)
		}
		u := &url.URL{Scheme: "nats-route", Host: net.JoinHostPort(h, strconv.Itoa(pp))}
		if cfg.Secret != "" {
			u.User = url.UserPassword(secretUser(cfg.Secret), cfg.Secret)
		}
		opts.Routes = append(opts.Routes, u)
	}
	return opts, nil
}

func secretUser(secret string) string {
	if secret == "" {
		return ""
	}
	return "harness"
}

func splitHostPort(hp string) (string, int, error) {
	host, p, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return host, port, nil
}

// setup makes the stream and the buckets, retrying while the cluster
// has no JetStream leader yet.
func (n *Node) setup(ctx context.Context) error {
	var err error
	for {
		err = n.setupOnce(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: JetStream not ready (are a majority of the %d nodes up?): %w", n.cfg.Replicas, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (n *Node) setupOnce(ctx context.Context) error {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var err error
	n.events, err = n.js.CreateOrUpdateStream(c, jetstream.StreamConfig{
		Name: eventsStream, Subjects: []string{eventsSubject + "*"},
		Storage: jetstream.FileStorage, Replicas: n.cfg.Replicas,
		MaxBytes: n.cfg.MaxBytes, MaxMsgSize: MaxPayload, Discard: jetstream.DiscardOld,
		Duplicates: 2 * time.Minute,
	})
	if err != nil {
		return err
	}
	n.nodes, err = n.js.CreateOrUpdateKeyValue(c, jetstream.KeyValueConfig{
		Bucket: nodesBucket, TTL: n.cfg.LeaseTTL, Replicas: n.cfg.Replicas, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return err
	}
	n.sessions, err = n.js.CreateOrUpdateKeyValue(c, jetstream.KeyValueConfig{
		Bucket: sessionsBucket, Replicas: n.cfg.Replicas, Storage: jetstream.FileStorage,
	})
	return err
}

// Name is the node's name.
func (n *Node) Name() string { return n.cfg.Node }

// ClusterAddr is where the node takes routes (host:port).
func (n *Node) ClusterAddr() string {
	if a := n.ns.ClusterAddr(); a != nil {
		return a.String()
	}
	return ""
}

// Close leaves the cluster: the heartbeat stops (the others see the node
// down once its lease expires), the client and the server shut down.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	if n.stop != nil {
		n.stop()
	}
	if n.pub != nil {
		n.pub.close()
	}
	n.wg.Wait()
	if n.nc != nil {
		n.nc.Drain()
		n.nc.Close()
	}
	n.ns.Shutdown()
	n.ns.WaitForShutdown()
	return nil
}
