package claudecode_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// Decoding a recorded transcript: what the driver does to a child's stdout.
func ExampleDecoder() {
	f, err := os.Open("testdata/transcripts/tool.ndjson")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	d := claudecode.NewDecoder(f, claudecode.DecoderOptions{SessionID: "demo"})
	for d.Next() {
		ev := d.Event()
		switch ev.Type {
		case event.TypeToolStart:
			fmt.Printf("%s %s %s\n", ev.Type, ev.ToolStart.Name, ev.ToolStart.Input)
		case event.TypeToolResult:
			fmt.Printf("%s %q\n", ev.Type, ev.ToolResult.Content)
		case event.TypeChatComplete:
			fmt.Printf("%s %q\n", ev.Type, ev.Text)
		}
	}
	// Output:
	// tool:start Bash {"command":"echo hi-from-tool","description":"say hi"}
	// tool:result "hi-from-tool"
	// chat:complete "Done."
}

// One turn of the real CLI against the fake Messages API, offline.
func ExampleManager_StartTurn() {
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer api.Close()
	api.Script(claudetest.TextReply("Hello from the fake model."))

	bin, err := claudetest.LookupCLI()
	if err != nil {
		fmt.Println(err)
		return
	}
	home, _ := os.MkdirTemp("", "example-home")
	defer os.RemoveAll(home)
	m := claudecode.NewManager(claudecode.Config{
		Binary: bin,
		Env:    append(claudetest.BaseEnv(home), api.Env()...),
	})
	t, err := m.StartTurn(context.Background(), "example", "Say hello", claudecode.TurnOpts{Cwd: home})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer t.Close()
	var text strings.Builder
	for t.Next() {
		ev := t.Event()
		switch ev.Type {
		case event.TypeChatDelta:
			text.WriteString(ev.Text)
		case event.TypeProcessExit:
			fmt.Println("answer:", text.String())
			fmt.Println("exit code:", ev.Exit.Code)
		}
	}
	fmt.Println("error:", t.Err())
	// Output:
	// answer: Hello from the fake model.
	// exit code: 0
	// error: <nil>
}

func ExampleTurnOpts_Args() {
	o := claudecode.TurnOpts{Resume: "0b7e4c8a-1111-4222-8333-944455556666", Tools: []string{"Read", "Grep"}, PermissionMode: "dontAsk"}
	fmt.Println(strings.Join(o.Args(), " "))
	// Output: -p --input-format stream-json --output-format stream-json --verbose --include-partial-messages --max-turns=25 --resume=0b7e4c8a-1111-4222-8333-944455556666 --tools=Read,Grep --permission-mode=dontAsk
}
