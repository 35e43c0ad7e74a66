package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/internal/eventsel"
	"github.com/chirality/harness/internal/sse"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// APIPrefix is the gateway's (gateway.APIPrefix; not imported: the
// gateway imports nothing of the cluster and the cluster nothing of it).
const APIPrefix = "/api/harness"

// TurnStartHeader is the header of a turn's answer (POST /turn) giving
// the seq after which its events are: the node that forwarded the turn
// streams from there.
const TurnStartHeader = "Harness-Turn-Start"

// Attach connects the node to the harness h and the gateway's API
// handler local (inside its guard): it starts publishing h's events,
// keeping the sessions bucket and answering forwarded requests, and
// returns the handler to serve instead of local.
//
// That handler serves GET /nodes and a list of every node's sessions;
// a request for a session another node owns goes to that node (503 with
// Retry-After while it is down); a session's events are read from the
// stream, whichever node owns it.
func (n *Node) Attach(h *harness.Harness, local http.Handler) (http.Handler, error) {
	n.h, n.local = h, local
	if err := n.watchSessions(); err != nil {
		return nil, err
	}
	if err := n.serveForwarded(); err != nil {
		return nil, err
	}
	if err := n.serveMoves(); err != nil {
		return nil, err
	}
	events := h.Watch(n.ctx, queueSize) // ends at Close
	// Up (its lease) once it answers forwarded requests.
	n.heartbeat()
	n.wg.Add(4)
	go n.watch(events)
	go n.beat()
	go n.syncLoop()
	go func() {
		n.pub.catchUpAll() // what was stored while the node was away
		n.pub.run()
	}()
	return http.HandlerFunc(n.serveHTTP), nil
}

func (n *Node) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, APIPrefix)
	switch {
	case r.Method == http.MethodGet && p == "/nodes":
		n.serveNodes(w, r)
		return
	case r.Method == http.MethodGet && p == "/session/list":
		n.serveList(w, r)
		return
	}
	if rest, ok := strings.CutPrefix(p, "/session/"); ok && r.Method == http.MethodPost {
		if id, ok := strings.CutSuffix(rest, "/move"); ok && !strings.Contains(id, "/") {
			n.serveMove(w, r, id)
			return
		}
	}
	id, body, err := sessionOf(r, p)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	e, known := n.entry(id)
	// A session another node owns goes there even when its root is here
	// too (shared storage): one node runs a session's turns.
	if id == "" || !known || e.Node == n.cfg.Node {
		if r.Method == http.MethodPost && p == "/session/create" {
			n.serveCreate(w, r)
			return
		}
		n.local.ServeHTTP(w, r)
		if r.Method != http.MethodGet {
			n.poke()
		}
		return
	}
	if r.Method == http.MethodGet && p == "/session/"+id+"/events" {
		n.streamRemote(w, r, id, e.Node)
		return
	}
	up, err := n.up(r.Context(), e.Node)
	if err != nil || !up {
		n.writeDown(w, e.Node)
		return
	}
	if body == nil && r.Body != nil {
		// A route that names its session in the path (PATCH
		// /session/{id}, its plan, steer, queue, rewind, fork…): its body
		// travels too.
		if body, err = readBody(r.Body); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	if r.Method == http.MethodPost && p == "/turn" {
		n.forwardTurn(w, r, id, e.Node, body)
		return
	}
	rep, err := n.forward(r.Context(), e.Node, r, body)
	if err != nil {
		n.writeDown(w, e.Node)
		return
	}
	writeReply(w, rep)
}

// serveCreate creates a session here and remembers it as this node's:
// a root other nodes see too (shared storage) has it on their disks as
// well, and the node that made it claims it.
func (n *Node) serveCreate(w http.ResponseWriter, r *http.Request) {
	rec := &bufferWriter{header: http.Header{}}
	n.local.ServeHTTP(rec, r)
	var v struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	if json.Unmarshal(rec.buf.Bytes(), &v) == nil && v.Session.ID != "" {
		n.claim(v.Session.ID)
	}
	rec.copyTo(w)
	n.poke()
}

func (n *Node) writeDown(w http.ResponseWriter, node string) {
	w.Header().Set("Retry-After", "5")
	writeError(w, http.StatusServiceUnavailable, "session's node "+node+" is down; try again when it is back")
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// sessionOf finds the session a request is about: /session/{id}/… in
// the path, else "sessionId" in a JSON body (POST /turn, /interrupt,
// /approval), which is returned to be read again.
func sessionOf(r *http.Request, p string) (string, []byte, error) {
	if rest, ok := strings.CutPrefix(p, "/session/"); ok {
		id, _, _ := strings.Cut(rest, "/")
		if id == "list" || id == "create" {
			return "", nil, nil
		}
		return id, nil, nil
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return "", nil, nil
	}
	body, err := readBody(r.Body)
	if err != nil {
		return "", nil, err
	}
	var v struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(body, &v) // the handler says what is wrong with a bad body
	return v.SessionID, body, nil
}

// readBody reads a request's body to forward, at most MaxPayload bytes
// (the guard in front bounds it already, by the server's own limit).
func readBody(r io.Reader) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, MaxPayload+1))
	if err != nil {
		return nil, err
	}
	if len(body) > MaxPayload {
		return nil, errors.New("request body too large")
	}
	return body, nil
}

// serveList answers GET /session/list with this node's sessions (as the
// gateway lists them) and every other node's, each with its node and
// the node's state, newest first.
func (n *Node) serveList(w http.ResponseWriter, r *http.Request) {
	rec := &bufferWriter{header: http.Header{}}
	n.local.ServeHTTP(rec, r)
	root := strings.TrimRight(r.URL.Query().Get("projectRoot"), "/")
	all, _ := n.allSessions(r.Context())
	var mine []harness.SessionSummary
	if rec.code != http.StatusOK || json.Unmarshal(rec.buf.Bytes(), &mine) != nil {
		// A root this node does not serve (403) may be another node's.
		if rec.code != http.StatusForbidden || root == "" || !slices.ContainsFunc(all, func(e sessionEntry) bool {
			return e.Node != n.cfg.Node && e.ProjectRoot == root
		}) {
			rec.copyTo(w)
			return
		}
		mine = nil
	}
	out := make([]harness.SessionSummary, 0, len(mine))
	seen := map[string]bool{}
	for _, s := range mine {
		if e, ok := n.entry(s.ID); ok && e.Node != n.cfg.Node || !ok && !n.claimable(s) {
			continue // on a shared root: its owner's, listed below (once it claimed it)
		}
		seen[s.ID] = true
		s.Node, s.NodeState = n.cfg.Node, "up"
		out = append(out, s)
	}
	state := map[string]string{}
	for _, e := range all {
		if seen[e.Summary.ID] || e.Node == n.cfg.Node || (root != "" && e.ProjectRoot != root) {
			continue
		}
		st, ok := state[e.Node]
		if !ok {
			st = "down"
			if up, _ := n.up(r.Context(), e.Node); up {
				st = "up"
			}
			state[e.Node] = st
		}
		s := e.Summary
		if st == "down" {
			s.Running, s.PendingApprovals = false, 0
		}
		s.Node, s.NodeState = e.Node, st
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b harness.SessionSummary) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

func (n *Node) serveNodes(w http.ResponseWriter, r *http.Request) {
	list, err := n.Nodes(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "cluster: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(list)
}

// forwardTurn sends a turn to the session's owner and streams its events
// from the stream, from the seq the owner's answer gives, to the turn's
// process:exit.
func (n *Node) forwardTurn(w http.ResponseWriter, r *http.Request, id, node string, body []byte) {
	sel, err := eventsel.FromRequest(r) // the owner's gateway reads it too, and would refuse it the same
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	rep, err := n.forward(r.Context(), node, r, body)
	if err != nil {
		n.writeDown(w, node)
		return
	}
	start, perr := strconv.ParseInt(http.Header(rep.Header).Get(TurnStartHeader), 10, 64)
	if rep.Status != http.StatusOK || perr != nil {
		writeReply(w, rep) // refused (409 busy, 422…), or queued (202)
		return
	}
	n.stream(w, r, id, node, start, true, sel)
}

// streamRemote answers GET /session/{id}/events for another node's
// session from the stream.
func (n *Node) streamRemote(w http.ResponseWriter, r *http.Request, id, node string) {
	after := int64(0)
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v != "" {
		a, err := strconv.ParseInt(v, 10, 64)
		if err != nil || a < 0 {
			writeError(w, http.StatusBadRequest, "bad Last-Event-ID or after: "+strconv.Quote(v))
			return
		}
		after = a
	}
	sel, err := eventsel.FromRequest(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	n.stream(w, r, id, node, after, false, sel)
}

// stream writes session id's events after `after` from the events
// stream as the gateway's SSE: the stored ones, then, while a turn runs
// (or, untilExit, until the turn's process:exit), the live ones. It ends
// when the client goes, or the owner is down and nothing more comes.
// Only the types of sel are sent, as the gateway's own streams do
// (eventsel: 004's UIEvent types unless the request asked for more); the
// ones left out keep their seq.
func (n *Node) stream(w http.ResponseWriter, r *http.Request, id, node string, after int64, untilExit bool, sel eventsel.Set) {
	ctx := r.Context()
	// What the stream holds now: it is delivered before the stream may
	// end, however slow the first deliveries are.
	known := int64(0)
	if m, err := n.events.GetLastMsgForSubject(ctx, eventsSubject+id); err == nil {
		known, _ = strconv.ParseInt(m.Header.Get(seqHeader), 10, 64)
	}
	s := sse.New(w, r, sse.Config{})
	defer s.Close()
	if s.Start() != nil {
		return
	}
	var from uint64 // the stream sequence to go on from (0: all)
	quiet := 0      // seconds without a message, over consumers
	for ctx.Err() == nil && s.Err() == nil {
		cons, err := n.js.OrderedConsumer(ctx, eventsStream, consumerConfig(id, from))
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		msgs, err := cons.Messages()
		if err != nil {
			continue
		}
		done := false
		for !done {
			m, err := msgs.Next(jetstream.NextMaxWait(time.Second))
			if ctx.Err() != nil || s.Err() != nil {
				done = true
				break
			}
			if err != nil { // nothing for a second, or the consumer failed
				quiet++
				switch {
				case after >= known && n.streamOver(ctx, id, node, untilExit):
					done = true
				case quiet >= 30 && n.streamOver(ctx, id, node, untilExit):
					done = true // what the stream held is gone (its bound)
				case quiet%5 == 0 || !isTimeout(err):
					msgs.Stop() // a stuck or failed consumer: a new one from here
					msgs = nil
				}
				if msgs == nil {
					break
				}
				continue
			}
			quiet = 0
			md, _ := m.Metadata()
			if md != nil {
				from = md.Sequence.Stream + 1
			}
			seq, _ := strconv.ParseInt(m.Headers().Get(seqHeader), 10, 64)
			if seq <= after {
				continue
			}
			more := md != nil && md.NumPending > 0
			if sel.Send(s, seq, m.Data(), more) != nil {
				done = true
				break
			}
			after = seq
			if untilExit && eventType(m.Data()) == "process:exit" {
				done = true // the turn's end
			} else if !more && after >= known && !untilExit && !n.running(id) {
				done = true // caught up, and no turn runs
			}
		}
		if msgs != nil {
			msgs.Stop()
		}
		if done {
			return
		}
	}
}

func consumerConfig(id string, from uint64) jetstream.OrderedConsumerConfig {
	c := jetstream.OrderedConsumerConfig{FilterSubjects: []string{eventsSubject + id}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if from > 0 {
		c.DeliverPolicy, c.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	return c
}

func isTimeout(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, context.DeadlineExceeded)
}

// streamOver reports whether a stream with nothing new should end: the
// owner is down, or (events) no turn runs.
func (n *Node) streamOver(ctx context.Context, id, node string, untilExit bool) bool {
	if up, err := n.up(ctx, node); err == nil && !up {
		return true
	}
	return !untilExit && !n.running(id)
}

func (n *Node) running(id string) bool {
	e, ok := n.entry(id)
	return ok && e.Summary.Running
}

func eventType(line []byte) string {
	var v struct {
		Type string `json:"type"`
	}
	json.Unmarshal(line, &v)
	return v.Type
}

// bufferWriter keeps a local answer to rewrite it.
type bufferWriter struct {
	header http.Header
	code   int
	buf    bytes.Buffer
}

func (b *bufferWriter) Header() http.Header { return b.header }
func (b *bufferWriter) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}
func (b *bufferWriter) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.buf.Write(p)
}
func (b *bufferWriter) copyTo(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	if b.code == 0 {
		b.code = http.StatusOK
	}
	w.WriteHeader(b.code)
	w.Write(b.buf.Bytes())
}
