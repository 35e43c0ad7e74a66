package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/session"
	"github.com/chirality/harness/trust"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Moving a session to another node, where its project root is on
// storage both nodes see at the same path (POST /session/{id}/move):
//
//   - any node takes the request and checks the target is up (503);
//   - if the owner is up, it is asked to release the session: it holds it
//     (no turn starts; 409 while one runs), flushes its event log to the
//     stream up to its last seq and closes the log, then asks the target
//     to take it;
//   - if the owner is down (that is the point: it died), the target is
//     asked to take it directly;
//   - the target checks the root (exists, inside its allowed roots, holds
//     the session's file: else 422), opens the session from it, makes the
//     sessions bucket say it owns it (an update at the entry's revision:
//     two moves at once, one wins) and publishes what the stream lacks
//     from the log. Every node routes to it from then on.

// moveSubject is a node's subject for the two steps of a move.
const moveSubject = ".move"

// statusNoNode is ask's status when nothing answers for the node (it is
// down); never written to a client.
const statusNoNode = -1

type moveMsg struct {
	Op     string `json:"op"` // release (to the owner) | take (to the target)
	ID     string `json:"id"`
	Target string `json:"target"`
	From   string `json:"from"`
	Root   string `json:"root"`
	// Grants are the owner's trust record of the session (a release's
	// take), which the target records before it opens the session.
	Grants *trust.SessionGrants `json:"grants,omitempty"`
}

type moveReply struct {
	Status int                `json:"status"`
	Error  string             `json:"error,omitempty"`
	Result harness.MoveResult `json:"result"`
	// Entry is the target's entry in the sessions bucket (a take's) and
	// Rev its revision: the nodes on the way record it at once, so that
	// an older one their watch delivers after does not undo it.
	Entry *sessionEntry `json:"entry,omitempty"`
	Rev   uint64        `json:"rev,omitempty"`
}

func (n *Node) serveMoves() error {
	_, err := n.nc.Subscribe(forwardSubject+n.cfg.Node+moveSubject, func(m *nats.Msg) {
		go func() {
			var req moveMsg
			var rep moveReply
			if err := json.Unmarshal(m.Data, &req); err != nil {
				rep = moveReply{Status: http.StatusBadRequest, Error: "bad move request"}
			} else if req.Op == "release" {
				rep = n.release(req)
			} else {
				rep = n.take(req)
			}
			b, _ := json.Marshal(rep)
			m.Respond(b)
		}()
	})
	return err
}

// ask sends a move step to node.
func (n *Node) ask(ctx context.Context, node string, req moveMsg) moveReply {
	b, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(ctx, fwdTimeout)
	defer cancel()
	m, err := n.nc.RequestWithContext(ctx, forwardSubject+node+moveSubject, b)
	if errors.Is(err, nats.ErrNoResponders) {
		return moveReply{Status: statusNoNode, Error: "node " + node + " is down"}
	}
	if err != nil {
		return moveReply{Status: http.StatusServiceUnavailable, Error: "node " + node + " did not answer: " + err.Error()}
	}
	var rep moveReply
	if json.Unmarshal(m.Data, &rep) != nil {
		return moveReply{Status: http.StatusBadGateway, Error: "bad answer from node " + node}
	}
	return rep
}

// serveMove answers POST /session/{id}/move on any node.
func (n *Node) serveMove(w http.ResponseWriter, r *http.Request, id string) {
	var req harness.MoveRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil || !nameOK(req.Node) {
		writeError(w, http.StatusBadRequest, `want {"node": NAME}`)
		return
	}
	e, ok := n.entry(id)
	if !ok {
		writeError(w, http.StatusNotFound, "session "+strconv.Quote(id)+" not found on any node")
		return
	}
	if e.Node == req.Node {
		writeJSON(w, http.StatusOK, harness.MoveResult{SessionID: id, From: e.Node, Node: e.Node, LastSeq: n.streamLast(r.Context(), id)})
		return
	}
	if up, err := n.up(r.Context(), req.Node); err != nil || !up {
		n.writeDown(w, req.Node)
		return
	}
	step := moveMsg{Op: "take", ID: id, Target: req.Node, From: e.Node, Root: e.ProjectRoot}
	target := req.Node
	if up, _ := n.up(r.Context(), e.Node); up {
		step.Op, target = "release", e.Node
	}
	rep := n.ask(r.Context(), target, step)
	if rep.Status == statusNoNode && step.Op == "release" {
		// The owner's lease had not expired everywhere yet, but nothing
		// answers for it: it is down, the target takes the session.
		step.Op = "take"
		rep = n.ask(r.Context(), req.Node, step)
	}
	if rep.Status == statusNoNode {
		rep.Status = http.StatusServiceUnavailable
	}
	if rep.Status != http.StatusOK {
		if rep.Status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "5")
		}
		writeError(w, rep.Status, rep.Error)
		return
	}
	n.setEntry(id, req.Node, rep)
	writeJSON(w, http.StatusOK, rep.Result)
}

// release is the owner's step: hold, flush, hand over.
func (n *Node) release(req moveMsg) moveReply {
	if e, ok := n.entry(req.ID); !ok || e.Node != n.cfg.Node {
		return moveReply{Status: http.StatusConflict, Error: "session " + req.ID + " is not this node's (moved meanwhile?)"}
	}
	done, err := n.h.Hold(req.ID)
	if errors.Is(err, harness.ErrBusy) {
		return moveReply{Status: http.StatusConflict, Error: "a turn of the session runs; move it once the turn ends"}
	}
	if err != nil {
		return moveReply{Status: http.StatusInternalServerError, Error: err.Error()}
	}
	defer done()
	ctx, cancel := context.WithTimeout(n.ctx, time.Minute)
	defer cancel()
	elog, err := n.h.EventLog(req.ID)
	if err != nil {
		return moveReply{Status: http.StatusInternalServerError, Error: err.Error()}
	}
	last := elog.LastSeq()
	if err := elog.Sync(); err != nil {
		return moveReply{Status: http.StatusInternalServerError, Error: "event log not flushed: " + err.Error()}
	}
	n.pub.catchUp(req.ID, 0)
	if got := n.streamLast(ctx, req.ID); got < last {
		return moveReply{Status: http.StatusServiceUnavailable, Error: fmt.Sprintf("events not all published (%d of %d); try again", got, last)}
	}
	req.Op, req.From = "take", n.cfg.Node
	if req.Grants, err = n.h.Trust().Session(req.Root, req.ID); err != nil {
		return moveReply{Status: http.StatusInternalServerError, Error: "trust record: " + err.Error()}
	}
	rep := n.ask(ctx, req.Target, req)
	if rep.Status == statusNoNode {
		rep.Status = http.StatusServiceUnavailable
	}
	if rep.Status != http.StatusOK {
		return rep
	}
	// The session is the target's: routed there (before the hold ends),
	// its log closed here (the target appends to it now).
	n.setEntry(req.ID, req.Target, rep)
	n.pub.forget(req.ID)
	elog.Close()
	return rep
}

// take is the target's step: check the root, open the session, own it.
func (n *Node) take(req moveMsg) moveReply {
	ctx, cancel := context.WithTimeout(n.ctx, time.Minute)
	defer cancel()
	root, err := n.h.ResolveRoot(req.Root)
	if err != nil || root != filepath.Clean(req.Root) {
		return moveReply{Status: http.StatusUnprocessableEntity, Error: fmt.Sprintf("node %s cannot use the project root %s at the same path: %v", n.cfg.Node, req.Root, err)}
	}
	if _, err := os.Stat(session.FilePath(root, req.ID)); err != nil {
		return moveReply{Status: http.StatusUnprocessableEntity, Error: fmt.Sprintf("node %s does not see the session's file under %s: %v", n.cfg.Node, root, err)}
	}
	// What a person gave the session is in its owner's trust record, not
	// in the session file: the owner's (a release), else what the owner
	// last published; without either the file's word stands, as for a
	// session made before trust records.
	grants := req.Grants
	if e, ok := n.entry(req.ID); grants == nil && ok && e.Node == req.From {
		grants = e.Grants
	}
	if grants != nil {
		if err := n.h.Trust().SetSession(root, req.ID, *grants); err != nil {
			return moveReply{Status: http.StatusInternalServerError, Error: "node " + n.cfg.Node + " cannot record the session's trust: " + err.Error()}
		}
	}
	if _, err := n.h.SessionIn(root, req.ID); err != nil {
		return moveReply{Status: http.StatusUnprocessableEntity, Error: "node " + n.cfg.Node + " cannot open the session: " + err.Error()}
	}
	// A log this node had open (it owned the session before) is stale.
	n.h.DropEventLog(req.ID)
	var summary harness.SessionSummary
	if list, err := n.h.ListSessions(root); err == nil {
		for _, s := range list {
			if s.ID == req.ID {
				summary = s
			}
		}
	}
	e, err := n.own(ctx, req.ID, req.From, summary)
	if errors.Is(err, errMoved) {
		return moveReply{Status: http.StatusConflict, Error: "the session moved meanwhile"}
	}
	if err != nil {
		return moveReply{Status: http.StatusServiceUnavailable, Error: "sessions bucket: " + err.Error()}
	}
	// What the stream lacks (the owner died before publishing it) comes
	// from the log, before the first new event.
	n.pub.forget(req.ID)
	n.pub.catchUp(req.ID, 0)
	n.poke()
	return moveReply{Status: http.StatusOK, Entry: &e, Rev: e.rev, Result: harness.MoveResult{SessionID: req.ID, From: req.From, Node: n.cfg.Node, LastSeq: n.streamLast(ctx, req.ID)}}
}

// errMoved is own's error when the session is no longer from's.
var errMoved = errors.New("the session moved meanwhile")

// own makes the sessions bucket say this node owns session id, which
// node from owned: an update at the entry's revision, so that of two
// moves at once one wins. The owner may still refresh its summary
// meanwhile (its sync listed before it held the session): that is
// another revision of from's entry, and the update is tried again on it.
func (n *Node) own(ctx context.Context, id, from string, summary harness.SessionSummary) (sessionEntry, error) {
	for {
		kv, err := n.sessions.Get(ctx, id)
		if err != nil {
			return sessionEntry{}, err
		}
		var e sessionEntry
		if json.Unmarshal(kv.Value(), &e) != nil || e.Node != from {
			return sessionEntry{}, errMoved
		}
		e.Node = n.cfg.Node
		if summary.ID != "" {
			e.Summary = summary
		}
		b, _ := json.Marshal(e)
		rev, err := n.sessions.Update(ctx, id, b, kv.Revision())
		if errors.Is(err, jetstream.ErrKeyExists) && ctx.Err() == nil {
			continue // written meanwhile: by from (a summary) or a move (then not from's)
		}
		if err != nil {
			return sessionEntry{}, err
		}
		e.rev = rev
		n.dir.put(id, e)
		return e, nil
	}
}

// setEntry makes this node's copy of the sessions bucket say node owns
// id, as the take's reply rep says (the watch says so too, a moment
// later); unless it knows a later revision already.
func (n *Node) setEntry(id, node string, rep moveReply) {
	if rep.Entry != nil && rep.Rev > 0 && rep.Entry.Node == node {
		e := *rep.Entry
		e.rev = rep.Rev
		n.dir.put(id, e)
		return
	}
	// A node that does not say its entry: this node's copy, owned by node.
	n.dir.mu.Lock()
	if e, ok := n.dir.byID[id]; ok {
		e.Node = node
		n.dir.byID[id] = e
	}
	n.dir.mu.Unlock()
}

// streamLast is the last seq of session id in the events stream.
func (n *Node) streamLast(ctx context.Context, id string) int64 {
	m, err := n.events.GetLastMsgForSubject(ctx, eventsSubject+id)
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseInt(m.Header.Get(seqHeader), 10, 64)
	return v
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
