package harness

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/session"
)

// 64 readers of one running turn (issue 35's 1 × 64): each gets every
// event of the turn once, in order, byte for byte as the log holds it,
// though the live ones share one record per event.
func TestManyReadersGetEveryEventOnce(t *testing.T) {
	e := newTestEnv(t, nil)
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "workbench"})
	if err != nil {
		t.Fatal(err)
	}
	e.api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text(strings.Repeat("word ", 80))}, ChunkSize: 4, ChunkDelay: 5 * time.Millisecond})
	tr, err := e.h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "talk to many"})
	if err != nil {
		t.Fatal(err)
	}
	const readers = 64
	got := make([][]session.Record, readers)
	var wg sync.WaitGroup
	for i := range readers {
		seq, err := e.h.Follow(context.Background(), s.ID, tr.StartSeq)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for rec, err := range seq {
				if err != nil {
					t.Error(err)
					return
				}
				got[i] = append(got[i], rec)
			}
		})
	}
	wg.Wait()
	<-tr.Done()
	var want []stored
	log, err := e.h.Follow(context.Background(), s.ID, tr.StartSeq)
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range log {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, decode(t, rec))
	}
	checkTurn(t, s.ID, tr.StartSeq, want)
	if deltas := len(ofType(want, "chat:delta")); deltas < 10 {
		t.Fatalf("%d deltas: the turn streamed too little to test a fan-out", deltas)
	}
	for i, recs := range got {
		var evs []stored
		for _, rec := range recs {
			evs = append(evs, decode(t, rec))
		}
		if len(evs) != len(want) {
			t.Fatalf("reader %d got %d events, the log holds %d", i, len(evs), len(want))
		}
		for k := range evs {
			if evs[k].Seq != want[k].Seq || evs[k].Raw != want[k].Raw {
				t.Fatalf("reader %d, event %d: %s, the log holds %s", i, k, evs[k].Raw, want[k].Raw)
			}
		}
	}
}
