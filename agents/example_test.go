package agents_test

import (
	"fmt"
	"io/fs"

	"github.com/chirality/harness/agents"
)

func Example() {
	names, _ := fs.Glob(agents.FS, "AGENT_*.md")
	for _, name := range names {
		fmt.Println(name)
	}
	// Output:
	// AGENT_DECOMP.md
	// AGENT_ORCHESTRATOR.md
	// AGENT_REVIEWER.md
}
