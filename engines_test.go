package harness

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// scriptEngine is an in-process engine: each turn answers "echo: <msg>"
// and reports conversation "conv-<n>". It records the requests it got.
type scriptEngine struct {
	mu   sync.Mutex
	reqs []engine.Request
}

func (s *scriptEngine) Name() string { return "script" }
func (s *scriptEngine) Check(context.Context) engine.Status {
	return engine.Status{Kind: "script", Available: true}
}
func (s *scriptEngine) Shutdown(context.Context) error { return nil }

func (s *scriptEngine) StartTurn(_ context.Context, req engine.Request) (engine.Turn, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	n := len(s.reqs)
	s.mu.Unlock()
	k := req.SessionKey
	return &sliceTurn{evs: []event.Event{
		{Type: event.TypeSessionInit, SessionID: k, Init: &event.SessionInit{Model: "script-1", Engine: "script", ConversationID: "conv-" + string(rune('0'+n))}},
		{Type: event.TypeChatDelta, SessionID: k, Text: "echo: " + req.Message},
		{Type: event.TypeSessionComplete, SessionID: k, Complete: &event.SessionComplete{CostUSD: 0.25}},
		{Type: event.TypeProcessExit, SessionID: k, Exit: &event.ProcessExit{}},
	}, i: -1}, nil
}

type sliceTurn struct {
	evs []event.Event
	i   int
}

func (t *sliceTurn) Next() bool         { t.i++; return t.i < len(t.evs) }
func (t *sliceTurn) Event() event.Event { return t.evs[t.i] }
func (t *sliceTurn) Err() error         { return nil }
func (t *sliceTurn) Interrupt() error   { return nil }
func (t *sliceTurn) Kill() error        { return nil }
func (t *sliceTurn) Close() error       { return nil }

func TestSessionOnAnotherEngine(t *testing.T) {
	se := &scriptEngine{}
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{se} })

	if _, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct", Engine: "nope"}); !errors.Is(err, ErrUnknownEngine) {
		t.Fatalf("unknown engine: %v", err)
	}
	// A persona's engine: is the default for its sessions.
	writeFile(t, filepath.Join(e.root, "agents", "AGENT_SCRIPTED.md"), "---\nengine: script\n---\nBe brief.\n")
	s, err := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Persona: "SCRIPTED", Mode: "direct"})
	if err != nil || s.Engine != "script" {
		t.Fatalf("session %+v, %v: want the persona's engine", s, err)
	}

	evs, _ := e.turn(s.ID, "first words\nsecond line")
	if evs[0].Type != event.TypeUserMessage || evs[0].Text != "first words\nsecond line" || evs[1].Type != event.TypeSessionInit {
		t.Fatalf("turn starts %s, %s", evs[0].Type, evs[1].Type)
	}
	e.turn(s.ID, "again")

	se.mu.Lock()
	reqs := slices.Clone(se.reqs)
	se.mu.Unlock()
	if len(reqs) != 2 || reqs[0].Resume != "" || reqs[1].Resume != "conv-1" {
		t.Fatalf("resumes %q, %q: the second turn must continue the engine's conversation", reqs[0].Resume, reqs[1].Resume)
	}
	if reqs[0].SystemPrompt == "" || reqs[0].Cwd != e.root || reqs[0].StateDir == "" {
		t.Fatalf("request %+v lacks the persona prompt, cwd or state dir", reqs[0])
	}
	got, _ := e.h.Session(s.ID)
	if got.Title != "first words" || got.CostUSD != 0.5 || got.ConversationID != "conv-2" {
		t.Fatalf("session after two turns: %+v", got)
	}
	list, _ := e.h.ListSessions(e.root)
	if len(list) != 1 || list[0].Engine != "script" || list[0].Title != "first words" {
		t.Fatalf("list %+v", list)
	}

	st := e.h.Engines(context.Background())
	names := []string{}
	for _, x := range st {
		names = append(names, x.Name)
	}
	if !slices.Contains(names, engine.ClaudeCode) || !slices.Contains(names, "script") {
		t.Fatalf("engines %v", names)
	}
	if renamed, err := e.h.SetTitle(s.ID, "Renamed"); err != nil || renamed.Title != "Renamed" {
		t.Fatalf("SetTitle: %+v %v", renamed, err)
	}
}

// Errors a newcomer meets read as one sentence that says what to do, and
// still match their sentinels.
func TestErrorWording(t *testing.T) {
	e := newTestEnv(t, nil)
	_, err := e.h.Session("0b7e4c8a-1111-4222-8333-944455556666")
	if !errors.Is(err, ErrNotFound) || err.Error() != "session 0b7e4c8a-1111-4222-8333-944455556666 not found; list the sessions with `harness sessions list` (or GET /api/harness/session/list)" {
		t.Errorf("not found: %v", err)
	}
	_, err = e.h.NewSession(SessionSpec{ProjectRoot: e.root, Persona: "reviewer", Mode: "direct"})
	if !errors.Is(err, ErrPersonaNotFound) || !strings.Contains(err.Error(), "persona reviewer not found (IDs are case-sensitive: did you mean REVIEWER?)") ||
		!strings.Contains(err.Error(), "DECOMP, ORCHESTRATOR, REVIEWER") {
		t.Errorf("persona: %v", err)
	}
	_, err = New(Config{Roots: []string{"/does/not/exist"}})
	if err == nil || err.Error() != "harness: root /does/not/exist does not exist; give an existing directory" {
		t.Errorf("root: %v", err)
	}
}

// Follow marks a record More when the next one is already at hand: from
// the log every record but the last.
func TestFollowMarksBursts(t *testing.T) {
	se := &scriptEngine{}
	e := newTestEnv(t, func(c *Config) { c.Engines = []engine.Engine{se}; c.DefaultEngine = "script" })
	s, _ := e.h.NewSession(SessionSpec{ProjectRoot: e.root, Mode: "direct"})
	e.turn(s.ID, "one")
	seq, err := e.h.Follow(context.Background(), s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var more []bool
	var recs []string
	for rec, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		more = append(more, rec.More)
		recs = append(recs, string(rec.Event))
	}
	// At least 6 records: the script's turn and the usage:update the core
	// makes of its session:complete's usage (usageturn.go). More when a
	// secret registered in this process (the scrubber is process-wide:
	// other tests register theirs) begins like the end of the delta: the
	// stream holds that end back and sends it as a delta of its own.
	if len(more) < 6 || slices.Contains(more[:len(more)-1], false) || more[len(more)-1] ||
		!strings.Contains(recs[len(recs)-1], `"type":"process:exit"`) {
		t.Fatalf("More flags %v of %q: want true for all but the last, process:exit", more, recs)
	}
}

// Config.Effort reaches every turn as Request.Effort; a level no engine
// knows is refused by New.
func TestEffortReachesTheEngine(t *testing.T) {
	if _, err := New(Config{Roots: []string{t.TempDir()}, StateDir: t.TempDir(), Engines: []engine.Engine{&scriptEngine{}}, Effort: "max"}); !errors.Is(err, engine.ErrInvalidEffort) {
		t.Fatalf("effort max: %v", err)
	}
	se := &scriptEngine{}
	root := realDir(t)
	h, err := New(Config{Roots: []string{root}, StateDir: t.TempDir(), Engines: []engine.Engine{se}, Effort: "high", NoProjectLogs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	s, err := h.NewSession(SessionSpec{ProjectRoot: root, Mode: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := h.StartTurn(context.Background(), TurnRequest{SessionID: s.ID, Message: "think"})
	if err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	se.mu.Lock()
	defer se.mu.Unlock()
	if len(se.reqs) != 1 || se.reqs[0].Effort != "high" {
		t.Fatalf("requests %+v", se.reqs)
	}
}
