package harness_test

import (
	"context"
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
	t, err := h.StartTurn(context.Background(), harness.TurnRequest{SessionID: s.ID, Message: "Review the last commit."})
	if err != nil {
		log.Fatal(err) // harness.ErrBusy, ErrNotFound, …
	}
	// Cancelling the context given to Events stops the reading, never the
	// turn: it stops only by t.Interrupt, its own end, or Shutdown.
	for rec, err := range t.Events(context.Background()) {
		if err != nil {
			log.Fatal(err)
		}
		if rec.Typed.Type == event.TypeChatDelta {
			fmt.Print(rec.Typed.Text)
		}
	}
	<-t.Done()
	if err := t.Err(); err != nil {
		log.Println("turn ended:", err)
	}
}
