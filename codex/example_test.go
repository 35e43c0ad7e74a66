package codex_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chirality/harness/codex"
	"github.com/chirality/harness/codex/codextest"
	"github.com/chirality/harness/engine"
)

// A turn of the real codex against the fake Responses API.
func Example() {
	fake, _ := codextest.NewFakeAPI(codextest.Reply{Text: "Hello!", Deltas: 2})
	defer fake.Close()
	home, _ := os.MkdirTemp("", "codex-example")
	defer os.RemoveAll(home)
	_, _ = fake.WriteConfig(filepath.Join(home, "codex"))

	bin, _ := filepath.Abs("../node_modules/.bin/codex")
	eng := codex.NewEngine(codex.Config{
		Binary: bin,
		Env:    []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + filepath.Join(home, "codex")},
	})
	defer eng.Shutdown(context.Background())

	t, err := eng.StartTurn(context.Background(), engine.Request{SessionKey: "demo", Message: "hi", Cwd: home})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer t.Close()
	for t.Next() {
		ev := t.Event()
		switch ev.Type {
		case "chat:delta":
			fmt.Printf("%s %q\n", ev.Type, ev.Text)
		case "process:exit":
			fmt.Println(ev.Type, ev.Exit.Code)
		default:
			fmt.Println(ev.Type)
		}
	}
	fmt.Println("err:", t.Err())
	// Output:
	// session:init
	// chat:delta "Hel"
	// chat:delta "lo!"
	// chat:complete
	// usage:update
	// session:complete
	// process:exit 0
	// err: <nil>
}
