package harness

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/chirality/harness/engine"
)

// closingEngine is a scriptEngine that records Close(key), as an engine
// keeping an agent per session does.
type closingEngine struct {
	scriptEngine
	mu     sync.Mutex
	closed []string
}

func (c *closingEngine) Close(key string) {
	c.mu.Lock()
	c.closed = append(c.closed, key)
	c.mu.Unlock()
}

func TestACPEnginesAreBuiltIn(t *testing.T) {
	e := newTestEnv(t, nil)
	kinds := map[string]string{}
	for _, st := range e.h.Engines(context.Background()) {
		kinds[st.Name] = st.Kind
		if !st.Available && st.Reason == "" {
			t.Errorf("%s unavailable without a reason", st.Name)
		}
	}
	for _, name := range []string{"opencode", "claude-acp", "copilot"} {
		if kinds[name] != "acp" {
			t.Errorf("engine %s: kind %q", name, kinds[name])
		}
	}
}

func TestDeleteSessionClosesTheEnginesSession(t *testing.T) {
	ce := &closingEngine{}
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{ce} })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "script"})
	if err != nil {
		t.Fatal(err)
	}
	e.turn(s.ID, "hi")
	if err := e.h.DeleteSession(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
	ce.mu.Lock()
	defer ce.mu.Unlock()
	if !slices.Equal(ce.closed, []string{s.ID}) {
		t.Errorf("Close calls %v, want [%s]", ce.closed, s.ID)
	}
}
