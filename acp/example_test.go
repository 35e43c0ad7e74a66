package acp_test

import (
	"context"
	"fmt"
	"os"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/acp/acptest"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// An ACP engine for an agent command (here the fake agent of package
// acptest: this test binary started with acptest.AgentEnv), one turn.
func Example() {
	eng, err := acp.NewEngine(acp.Config{
		Name: "fake", Command: []string{"fakeagent"}, Binary: os.Args[0],
		ExtraEnv: []string{acptest.AgentEnv},
	})
	if err != nil {
		panic(err)
	}
	defer eng.Shutdown(context.Background()) // stops the session's agent
	t, err := eng.StartTurn(context.Background(), engine.Request{SessionKey: "s1", Message: "hello", Cwd: os.TempDir()})
	if err != nil {
		panic(err)
	}
	defer t.Close()
	for t.Next() {
		switch ev := t.Event(); ev.Type {
		case event.TypeChatDelta:
		case event.TypeChatComplete:
			fmt.Println(ev.Type, ev.Text)
		default:
			fmt.Println(ev.Type)
		}
	}
	fmt.Println(t.Err())
	// Output:
	// session:init
	// thinking:delta
	// usage:update
	// chat:complete echo: hello
	// session:complete
	// process:exit
	// <nil>
}
