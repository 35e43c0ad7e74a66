package codex

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/chirality/harness/engine"
)

// BenchmarkMap1000Deltas: the harness's own path for 1,000 deltas (line
// reading, decoding, mapping, the stream), without the agent or the fake.
func BenchmarkMap1000Deltas(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&sb, `{"method":"item/agentMessage/delta","params":{"threadId":"01a203e3-94de-7b63-a20b-7be89e1d05a2","turnId":"01a203e3-9513-7b11-9261-155d75b2bac2","itemId":"msg_2","delta":"tok "},"emittedAtMs":1795361576552}`+"\n")
	}
	lines := sb.String()
	b.SetBytes(int64(len(lines)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		t := newTurn(NewEngine(Config{}), engine.Request{SessionKey: "k"})
		t.peer = newPeer(strings.NewReader(lines), io.Discard, nil, nil)
		m := newMapper(t)
		done := make(chan int)
		go func() {
			n := 0
			for t.Next() {
				n++
			}
			done <- n
		}()
		for msg := range t.peer.in {
			m.handle(msg)
		}
		t.s.End(nil)
		if n := <-done; n != 1000 {
			b.Fatalf("%d events", n)
		}
	}
}
