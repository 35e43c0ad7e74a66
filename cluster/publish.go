package cluster

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"sync"
	"time"

	"github.com/chirality/harness/session"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// publisher copies every event the core stores to the events stream, in
// order per session, each once.
//
// Events come from Harness.Watch (bounded, never blocking the core) into
// a bounded queue. One goroutine publishes. It knows, per
// session, the last seq in the stream (read back from the stream the
// first time: after a restart it goes on where the stream stopped); an
// event beyond the next expected one — the queue overflowed, a publish
// failed, events stored while the node was down — is found in the
// owner's event log, which holds every event, and published from there.
// Each message's id is "<session>:<seq>", so JetStream drops a repeat
// within its duplicate window too.
type publisher struct {
	n     *Node
	queue chan item
	dirty chan string // sessions to catch up from the log

	mu   sync.Mutex
	last map[string]int64 // session → last seq published

	done chan struct{}
}

type item struct {
	id   string
	seq  int64
	line []byte
}

// queueSize bounds the events waiting to be published; beyond it events
// are caught up from the logs.
const queueSize = 8192

func newPublisher(n *Node) *publisher {
	return &publisher{n: n, queue: make(chan item, queueSize), dirty: make(chan string, 1024),
		last: map[string]int64{}, done: make(chan struct{})}
}

// watch feeds the publisher from the core's one fan-out of stored
// events (Harness.Watch). A watcher that falls behind misses events;
// the publisher sees the gap in the seqs and takes them from the log.
func (n *Node) watch(events iter.Seq2[session.Record, error]) {
	defer n.wg.Done()
	for rec, err := range events {
		if err != nil || rec.Seq == 0 {
			// Records missed (harness.ErrWatchDropped): the next record of
			// their session shows the gap, the periodic catch-up the rest.
			continue
		}
		n.claim(rec.Typed.SessionID)
		select {
		case n.pub.queue <- item{id: rec.Typed.SessionID, seq: rec.Seq, line: trimNL(rec.Event)}:
		default:
			n.pub.markDirty(rec.Typed.SessionID)
		}
		n.poke()
	}
}

func trimNL(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		return b[:len(b)-1]
	}
	return b
}

func (p *publisher) markDirty(id string) {
	select {
	case p.dirty <- id:
	default: // the periodic catch-up of every session finds it
	}
}

func (p *publisher) close() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
}

// run publishes until the node closes. It starts once the harness is
// attached (its logs are where a gap is caught up from).
func (p *publisher) run() {
	defer p.n.wg.Done()
	every := time.NewTicker(30 * time.Second)
	defer every.Stop()
	for {
		select {
		case <-p.n.ctx.Done():
			return
		case it := <-p.queue:
			p.publish(it)
		case id := <-p.dirty:
			p.catchUp(id, 0)
		case <-every.C:
			p.catchUpAll()
		}
	}
}

// lastSeq is the last seq of session id in the stream.
func (p *publisher) lastSeq(ctx context.Context, id string) (int64, error) {
	p.mu.Lock()
	v, ok := p.last[id]
	p.mu.Unlock()
	if ok {
		return v, nil
	}
	m, err := p.n.events.GetLastMsgForSubject(ctx, eventsSubject+id)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		v = 0
	} else if err != nil {
		return 0, err
	} else if v, err = strconv.ParseInt(m.Header.Get(seqHeader), 10, 64); err != nil {
		return 0, err
	}
	p.mu.Lock()
	p.last[id] = v
	p.mu.Unlock()
	return v, nil
}

func (p *publisher) publish(it item) {
	ctx, cancel := context.WithTimeout(p.n.ctx, 10*time.Second)
	defer cancel()
	last, err := p.lastSeq(ctx, it.id)
	if err != nil {
		p.n.log.Warn().Err(err).Str("sessionId", it.id).Msg("cluster: stream not read")
		return // caught up later (catchUpAll)
	}
	switch {
	case it.seq <= last:
		return // already there (caught up from the log)
	case it.seq > last+1:
		p.catchUp(it.id, it.seq)
		return
	}
	p.send(ctx, it.id, it.seq, it.line)
}

func (p *publisher) send(ctx context.Context, id string, seq int64, line []byte) bool {
	m := nats.NewMsg(eventsSubject + id)
	m.Data = line
	m.Header.Set(seqHeader, strconv.FormatInt(seq, 10))
	m.Header.Set(nodeHeader, p.n.cfg.Node)
	if _, err := p.n.js.PublishMsg(ctx, m, jetstream.WithMsgID(id+":"+strconv.FormatInt(seq, 10))); err != nil {
		if p.n.ctx.Err() == nil {
			p.n.log.Warn().Err(err).Str("sessionId", id).Int64("seq", seq).Msg("cluster: event not published; caught up later")
		}
		p.mu.Lock()
		delete(p.last, id) // read back from the stream next time
		p.mu.Unlock()
		// and tried again soon, from the log
		time.AfterFunc(500*time.Millisecond, func() { p.markDirty(id) })
		return false
	}
	p.mu.Lock()
	p.last[id] = seq
	p.mu.Unlock()
	return true
}

// catchUp publishes session id's events from its log, from the one after
// the stream's last up to upTo (0 = all).
func (p *publisher) catchUp(id string, upTo int64) {
	if p.n.h == nil {
		return
	}
	ctx, cancel := context.WithTimeout(p.n.ctx, time.Minute)
	defer cancel()
	last, err := p.lastSeq(ctx, id)
	if err != nil {
		return
	}
	elog, err := p.n.h.EventLog(id)
	if err != nil {
		return // deleted
	}
	for rec, err := range elog.Records(last) {
		if err != nil || ctx.Err() != nil {
			return
		}
		if upTo > 0 && rec.Seq > upTo {
			return
		}
		if !p.send(ctx, id, rec.Seq, trimNL(rec.Event)) {
			return
		}
	}
}

// forget drops what the publisher knows of session id (it moved: the
// stream is read back next time).
func (p *publisher) forget(id string) {
	p.mu.Lock()
	delete(p.last, id)
	p.mu.Unlock()
}

// catchUpAll catches up every session this node owns: at start (what
// was stored while the node was down or before it joined) and now and
// then (a failed publish, an overflowed queue).
func (p *publisher) catchUpAll() {
	list, err := p.n.h.ListSessions("")
	if err != nil {
		return
	}
	for _, s := range list {
		if p.n.ctx.Err() != nil {
			return
		}
		if e, ok := p.n.entry(s.ID); ok && e.Node != p.n.cfg.Node {
			continue // another node's (a shared root): it publishes
		}
		p.catchUp(s.ID, 0)
	}
}
