package native_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/native"
	"github.com/chirality/harness/tool"
)

type printer struct{}

func (printer) OnText(text string) { fmt.Println("text:", text) }
func (printer) OnToolCall(id, name string, input json.RawMessage) {
	fmt.Println("tool call:", name, string(input))
}
func (printer) OnToolResult(id, result string, isError bool) {
	fmt.Println("tool result: isError", isError)
}

// A prompt whose answer uses a tool, against the fake Messages API.
func Example() {
	api, _ := claudetest.NewFakeAPI()
	defer api.Close()
	api.Script(
		claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("t1", "read", map[string]any{"path": "go.mod", "end_line": 1})}},
		claudetest.TextReply("This is a Go module."),
	)
	wd, _ := os.Getwd()
	tools := []native.Tool{}
	for _, t := range tool.All(wd + "/..") {
		tools = append(tools, t)
	}
	h := native.NewHarness(native.Config{APIKey: "test", BaseURL: api.URL}, tools, printer{})
	if err := h.Prompt(context.Background(), "What is this project?"); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// tool call: read {"end_line":1,"path":"go.mod"}
	// tool result: isError false
	// text: This is a Go module.
}
