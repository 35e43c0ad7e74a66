package session_test

import (
	"fmt"
	"os"

	"github.com/chirality/harness/session"
)

func Example() {
	state, _ := os.MkdirTemp("", "state")
	root, _ := os.MkdirTemp("", "project")
	defer os.RemoveAll(state)
	defer os.RemoveAll(root)

	st, err := session.Open(session.Config{StateDir: state})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	s, err := st.Create(root, "REVIEWER", "workbench")
	if err != nil {
		fmt.Println(err)
		return
	}

	// Record the UI events of a turn.
	log, _ := st.EventLog(s.ID)
	log.Append([]byte(`{"type":"session:init","claudeSessionId":"c-1"}`))
	log.Append([]byte(`{"type":"chat:delta","text":"Hello"}`))
	s.ConversationID = "c-1"
	st.Save(s)

	// Later, maybe in another process: find the session by ID alone and
	// replay the events a client has not seen.
	st2, _ := session.Open(session.Config{StateDir: state})
	got, _ := st2.Get(s.ID)
	fmt.Println(got.Persona, got.Mode, got.ConversationID)
	recs, _ := log.ReadAfter(1)
	for _, r := range recs {
		fmt.Println(r.Seq, string(r.Event))
	}
	// Output:
	// REVIEWER workbench c-1
	// 2 {"seq":2,"type":"chat:delta","text":"Hello"}
}
