package cluster

// For the tests that attack the node from outside (trust_test.go).

// ClientURL is the embedded NATS server's client address.
func (n *Node) ClientURL() string { return n.ns.ClientURL() }

// NumRoutes is how many routes the embedded NATS server has.
func (n *Node) NumRoutes() int { return n.ns.NumRoutes() }
