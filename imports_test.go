package harness

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoEngineInTheCoreOrTheDoors: the core and the doors know engines
// only through the seam (package engine). Package engines builds the
// concrete ones and the commands hand them over; none of these packages
// may depend on one, directly or through another package.
func TestNoEngineInTheCoreOrTheDoors(t *testing.T) {
	const mod = "github.com/chirality/harness"
	core := []string{".", "./gateway", "./rpc", "./agentserver", "./tui", "./runner", "./supervisor", "./mcpserver"}
	concrete := map[string]bool{mod + "/claudecode": true, mod + "/codex": true, mod + "/acp": true, mod + "/native": true}
	for _, pkg := range core {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed only %q", pkg, deps)
		}
		for _, d := range deps {
			if concrete[d] || strings.HasPrefix(d, mod+"/claudecode/") || strings.HasPrefix(d, mod+"/codex/") || strings.HasPrefix(d, mod+"/acp/") || strings.HasPrefix(d, mod+"/native/") {
				t.Errorf("%s depends on the engine %s", pkg, d)
			}
		}
	}
}
