package harness

import (
	"testing"

	"github.com/chirality/harness/persona"
	"github.com/chirality/harness/session"
)

func TestBrokerBackPressure(t *testing.T) {
	b := newBroker(2)
	slow, fast := b.subscribe(), b.subscribe()
	for seq := int64(1); seq <= 3; seq++ {
		b.publish(&session.Record{Seq: seq}, false)
		<-fast.ch // the fast reader keeps up
	}
	// The slow reader's queue held 2; the third ordinary event dropped it.
	if !isClosed(slow.ch, 2) || !slow.dropped {
		t.Fatal("a full subscriber was not dropped")
	}
	if b.subscribers() != 1 {
		t.Errorf("%d subscribers, want 1", b.subscribers())
	}
	// Terminal events use the reserved room even when the queue is full.
	b.publish(&session.Record{Seq: 4}, false)
	b.publish(&session.Record{Seq: 5}, false)
	b.publish(&session.Record{Seq: 6}, true)
	b.publish(&session.Record{Seq: 7}, true)
	b.finish()
	var got []int64
	for rec := range fast.ch {
		got = append(got, rec.Seq)
	}
	if len(got) != 4 || got[3] != 7 || fast.dropped {
		t.Errorf("fast reader got %v (dropped %v), want 4 5 6 7", got, fast.dropped)
	}
	// Subscribing to a finished broker gives a closed, not dropped, channel.
	late := b.subscribe()
	if _, ok := <-late.ch; ok || late.dropped {
		t.Error("late subscriber not closed cleanly")
	}
	b.unsubscribe(late) // safe after finish
}

// isClosed drains n buffered records and reports whether ch is closed.
func isClosed(ch chan *session.Record, n int) bool {
	for range n {
		if _, ok := <-ch; !ok {
			return false
		}
	}
	_, ok := <-ch
	return !ok
}

func TestPermissionAndMaxTurnsPrecedence(t *testing.T) {
	p := func(mode string, turns int) *personaT { return &personaT{PermissionMode: mode, MaxTurns: turns} }
	cases := []struct {
		cfg      Config
		persona  *personaT
		want     string
		wantErr  error
		mode     string
		maxTurns int
	}{
		{Config{}, nil, "dontAsk", nil, "workbench", 25},
		{Config{}, nil, "dontAsk", nil, "pipeline", 25},
		{Config{}, p("plan", 7), "plan", nil, "direct", 7},
		{Config{PermissionMode: "acceptEdits", MaxTurns: 3}, p("plan", 7), "acceptEdits", nil, "workbench", 3},
		{Config{DefaultPermissionMode: "default"}, p("", 0), "default", nil, "workbench", 25},
		{Config{}, p("bypassPermissions", 0), "", ErrBypassRefused, "workbench", 25},
		{Config{PermissionMode: "bypassPermissions"}, nil, "", ErrBypassRefused, "workbench", 25},
		{Config{AllowBypass: true}, p("bypassPermissions", 0), "bypassPermissions", nil, "workbench", 25},
	}
	for i, c := range cases {
		cfg := c.cfg.clone()
		got, err := cfg.permissionMode(c.persona.toPersona())
		if got != c.want || err != c.wantErr {
			t.Errorf("case %d: permission mode %q, %v; want %q, %v", i, got, err, c.want, c.wantErr)
		}
		if n := cfg.maxTurns(c.persona.toPersona(), personaMode(c.mode)); n != c.maxTurns {
			t.Errorf("case %d: max turns %d, want %d", i, n, c.maxTurns)
		}
	}
}

type personaT struct {
	PermissionMode string
	MaxTurns       int
}

func (p *personaT) toPersona() *persona.Persona {
	if p == nil {
		return nil
	}
	return &persona.Persona{PermissionMode: p.PermissionMode, MaxTurns: p.MaxTurns}
}

func personaMode(s string) persona.Mode { return persona.Mode(s) }
