package harness

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/session"
)

// A session created sandboxed keeps it in its file, and each of its turns
// asks its engine for the sandbox; another session does not, unless the
// server sandboxes every session.
func TestSandboxSessionRequest(t *testing.T) {
	for _, server := range []bool{false, true} {
		se := &scriptEngine{}
		e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{se}; c.DefaultEngine = "script"; c.Sandbox = server })
		boxed, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Sandbox: true})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
		if err != nil {
			t.Fatal(err)
		}
		e.turn(boxed.ID, "one")
		e.turn(plain.ID, "two")
		se.mu.Lock()
		reqs := slices.Clone(se.reqs)
		se.mu.Unlock()
		if len(reqs) != 2 || !reqs[0].Sandbox || reqs[1].Sandbox != server {
			t.Fatalf("server %v: requests sandboxed %v, %v; want true, %v", server, reqs[0].Sandbox, reqs[1].Sandbox, server)
		}
		if !slices.Contains(reqs[0].Protected, filepath.Join(e.root, ".chirality")+string(filepath.Separator)) {
			t.Errorf("protected %q lacks .chirality/", reqs[0].Protected)
		}
		b, err := os.ReadFile(session.FilePath(e.root, boxed.ID))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"sandbox": true`) && !strings.Contains(string(b), `"sandbox":true`) {
			t.Errorf("session file does not keep the sandbox: %s", b)
		}
		var back session.Session
		if err := back.UnmarshalJSON(b); err != nil || !back.Sandbox {
			t.Errorf("read back: %+v, %v", back.Sandbox, err)
		}
	}
}

// The session file is the agent's to write: a sandbox a person chose is
// kept in the trust record, so a file edited to drop it (by an agent in
// another, unsandboxed session, say) still runs sandboxed, also after a
// restart.
func TestSandboxSurvivesTheSessionFile(t *testing.T) {
	se := &scriptEngine{}
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{se}; c.DefaultEngine = "script" })
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Sandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	path := session.FilePath(e.root, s.ID)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.NewReplacer(`"sandbox": true`, `"sandbox": false`, `"sandbox":true`, `"sandbox":false`).Replace(string(b))
	if edited == string(b) {
		t.Fatalf("no sandbox field to edit in %s", b)
	}
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	e.turn(s.ID, "one")
	se.mu.Lock()
	reqs := slices.Clone(se.reqs)
	se.mu.Unlock()
	if len(reqs) != 1 || !reqs[0].Sandbox {
		t.Fatalf("the turn after the file dropped sandbox ran unsandboxed: %+v", reqs)
	}
}

// A sandboxed turn limits its agent's network unless the server names
// its engine (or "*") in SandboxOpenNetwork.
func TestSandboxOpenNetwork(t *testing.T) {
	for _, c := range []struct {
		open []string
		want bool
	}{{nil, false}, {[]string{"other"}, false}, {[]string{"script"}, true}, {[]string{"*"}, true}} {
		se := &scriptEngine{}
		e := newTestEnv(t, func(cfg *Config) {
			cfg.Engines = []engine.Engine{se}
			cfg.DefaultEngine = "script"
			cfg.Sandbox = true
			cfg.SandboxOpenNetwork = c.open
		})
		s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
		if err != nil {
			t.Fatal(err)
		}
		e.turn(s.ID, "one")
		se.mu.Lock()
		reqs := slices.Clone(se.reqs)
		se.mu.Unlock()
		if len(reqs) != 1 || !reqs[0].Sandbox || reqs[0].OpenNetwork != c.want {
			t.Errorf("SandboxOpenNetwork %q: sandbox %v, open network %v; want true, %v", c.open, reqs[0].Sandbox, reqs[0].OpenNetwork, c.want)
		}
	}
}
