package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/event"
)

// One turn of a persona session, end to end: the events are stored with
// their seq and can be followed (or replayed later) by anyone.
func Example() {
	root := "/path/to/project"
	// The core runs the engines it is given: here the built-in ones.
	all := engines.Builtin(engines.Config{})
	h, err := harness.New(harness.Config{Roots: []string{root}, Engines: all, Aliases: engines.Aliases})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h.Shutdown(ctx) // interrupt running turns, wait, kill what is left
	}()
	s, err := h.NewSession(harness.SessionSpec{ProjectRoot: root, Persona: "REVIEWER", Mode: "workbench"})
	if err != nil {
		log.Fatal(err)
	}
	t, err := h.StartTurn(context.Background(), s.ID, "Review the last commit.")
	if err != nil {
		log.Fatal(err) // harness.ErrBusy, ErrNotFound, …
	}
	events, err := h.Follow(context.Background(), s.ID, t.StartSeq)
	if err != nil {
		log.Fatal(err)
	}
	for rec, err := range events {
		if err != nil {
			log.Fatal(err)
		}
		var ev event.Event
		if json.Unmarshal(rec.Event, &ev) == nil && ev.Type == event.TypeChatDelta {
			fmt.Print(ev.Text)
		}
	}
	<-t.Done()
	if err := t.Err(); err != nil {
		log.Println("turn ended:", err)
	}
}
