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
	benchMentions(b, newBenchRig(b, n.Addr(), n.Addr(), 1))
}

// BenchmarkMentionToPromptAcrossLink is the same with the sender on
// another server of the network (two linked ngircd; issue 22): the
// PRIVMSG crosses the server link before it reaches the agent.
//
//	go test -run '^$' -bench MentionToPromptAcrossLink -benchtime 100x ./daemon/
func BenchmarkMentionToPromptAcrossLink(b *testing.B) {
	a, other := irctest.StartLinkedNgircd(b)
	benchMentions(b, newBenchRig(b, a.Addr(), other.Addr(), 1))
}

// BenchmarkMentionBurst: how fast one daemon takes mentions sent as
// fast as a client can post them (ngircd's flood penalty off), and
// whether it loses any: b.N mentions from one sender, timed from the
// first Send to the last prompt handed to the (fake) runner.
//
//	go test -run '^$' -bench MentionBurst -benchtime 2000x ./daemon/
func BenchmarkMentionBurst(b *testing.B) {
	n := irctest.StartNgircd(b)
	r := newBenchRig(b, n.Addr(), n.Addr(), b.N)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := r.bob.Send("#dev", fmt.Sprintf("@lab-alice burst %d", i)); err != nil {
			b.Fatal(err)
		}
	}
	got := 0
	timeout := time.After(60 * time.Second)
	for got < b.N {
		select {
		case <-r.agent.promptAdded:
			got++
			<-r.recv
		case <-timeout:
			b.Fatalf("%d of %d mentions reached the runner", got, b.N)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "mentions/s")
	b.ReportMetric(float64(b.N-got), "lost")
}

func benchMentions(b *testing.B, r *benchRig) {
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

// newBenchRig runs agent alice on agentAddr with a fake runner whose
// prompt channel holds buffered prompts, and bob on bobAddr in #dev,
// waiting until bob sees alice there (across a link, the JOIN may take a
// moment).
func newBenchRig(b *testing.B, agentAddr, bobAddr string, buffered int) *benchRig {
	addr := agentAddr
	b.Helper()
	dir := shortTemp(b)
	b.Setenv("XDG_RUNTIME_DIR", dir)
	host, port, _ := strings.Cut(addr, ":")
	cfg, err := ParseConfig([]byte("server: {name: lab, host: "+host+", port: "+port+"}\nagents:\n  - {nick: alice, agent: claude, directory: "+dir+", channels: [\"#dev\"]}\n"), "")
	if err != nil {
		b.Fatal(err)
	}
	r := &benchRig{rig: &rig{agent: newFakeAgent()}, recv: make(chan time.Duration, buffered)}
	r.agent.promptAdded = make(chan string, buffered)
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
	r.bob, r.bobGot = human(b, bobAddr, "bob", "#dev")
	deadline := time.Now().Add(30 * time.Second)
	for {
		who, _ := r.bob.Who(context.Background(), "#dev")
		if slices.ContainsFunc(who, func(w irc.WhoEntry) bool { return w.Nick == "lab-alice" }) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("bob never saw lab-alice in #dev")
		}
		time.Sleep(50 * time.Millisecond) // poll: the JOIN crosses the link
	}
	return r
}
