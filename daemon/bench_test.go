package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/irc"
	"github.com/chirality/harness/irc/irctest"
)

// BenchmarkMentionToPrompt measures a mention's way through the daemon
// on ngircd with a fake runner: from the moment the IRC client has the
// PRIVMSG (irc.Message.Time, set in the ircevent callback) to the
// runner's SendPrompt — the latency the daemon adds — and, beside it,
// from the sender's Send to SendPrompt (ngircd's relay included).
//
//	go test -run '^$' -bench MentionToPrompt -benchtime 2000x ./daemon/
func BenchmarkMentionToPrompt(b *testing.B) {
	n := irctest.StartNgircd(b)
	r := newBenchRig(b, n.Addr())
	added := make([]time.Duration, 0, b.N)
	total := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sent := time.Now()
		if err := r.bob.Send("#dev", fmt.Sprintf("@lab-alice ping %d", i)); err != nil {
			b.Fatal(err)
		}
		select {
		case p := <-r.agent.promptAdded:
			got := time.Now()
			if !strings.HasSuffix(p, fmt.Sprintf("ping %d", i)) {
				b.Fatalf("prompt %q", p)
			}
			total = append(total, got.Sub(sent))
			added = append(added, <-r.recv)
		case <-time.After(10 * time.Second):
			b.Fatal("no prompt")
		}
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(float64(len(d))*p))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(added, 0.50), "added-p50-ms")
	b.ReportMetric(pct(added, 0.99), "added-p99-ms")
	b.ReportMetric(pct(total, 0.50), "send-to-prompt-p50-ms")
	b.ReportMetric(pct(total, 0.99), "send-to-prompt-p99-ms")
}

type benchRig struct {
	*rig
	recv chan time.Duration
}

func newBenchRig(b *testing.B, addr string) *benchRig {
	b.Helper()
	dir := shortTemp(b)
	b.Setenv("XDG_RUNTIME_DIR", dir)
	host, port, _ := strings.Cut(addr, ":")
	cfg, err := ParseConfig([]byte("server: {name: lab, host: "+host+", port: "+port+"}\nagents:\n  - {nick: alice, agent: claude, directory: "+dir+", channels: [\"#dev\"]}\n"), "")
	if err != nil {
		b.Fatal(err)
	}
	r := &benchRig{rig: &rig{agent: newFakeAgent()}, recv: make(chan time.Duration, 1)}
	r.agent.promptAdded = make(chan string, 1)
	d, err := New(Options{Config: cfg, Agent: cfg.Agents[0],
		NewAgent: func(Hooks) (Agent, Supervisor, error) { return r.agent, nil, nil }})
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Stop(context.Background()) })
	r.d = d
	// wrap the daemon's IRC handler to time it from the message's receipt
	d.irc.OnMessage(func(m irc.Message) {
		d.onIRC(m)
		r.recv <- time.Since(m.Time)
	})
	r.bob, r.bobGot = human(b, addr, "bob", "#dev")
	return r
}
