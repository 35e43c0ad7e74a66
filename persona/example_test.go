package persona_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chirality/harness/persona"
)

func Example() {
	root, _ := os.MkdirTemp("", "project")
	defer os.RemoveAll(root)
	os.WriteFile(filepath.Join(root, "README.md"), []byte("# Demo project\n"), 0o644)

	// No agents/AGENT_REVIEWER.md in the project: the built-in one is used.
	p, err := persona.Load(root, "REVIEWER")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.SourceFile)
	fmt.Println("--tools", strings.Join(p.Tools, ","))
	fmt.Println("--permission-mode", p.PermissionMode)

	prompt, err := persona.BuildSystemPrompt(root, p, persona.ModeWorkbench)
	if err != nil {
		fmt.Println(err)
		return
	}
	path, err := persona.SavePrompt(root, "2f1c7a52-8d0e-4b7e-9a43-1f6f0e7d9c10", prompt)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(filepath.Base(path))
	fmt.Println(strings.SplitN(prompt, "\n", 3)[1])

	_, err = persona.Load(root, "NOPE")
	fmt.Println(err)
	// Output:
	// embedded:agents/AGENT_REVIEWER.md
	// --tools Read,Grep,Glob,Bash
	// --permission-mode default
	// 2f1c7a52-8d0e-4b7e-9a43-1f6f0e7d9c10-system.txt
	// You are operating within the Chirality Command Center.
	// persona NOPE not found
}

func ExampleParseContent() {
	_, err := persona.ParseContent("X", "agents/AGENT_X.md", []byte("---\ntools: Read\ncolor: blue\n---\nbody\n"))
	fmt.Println(err)
	// Output:
	// agents/AGENT_X.md:3: unknown key "color" (known: tools, disallowed_tools, auto_approve_tools, max_turns, max_cost_usd, max_tokens, model, permission_mode, description, engine, mcp_servers)
}
