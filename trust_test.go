package harness

import (
	"testing"

	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/trust"
)

// trustProjectMCP trusts every server of root's .mcp.json, as a person
// would (harness trust accept mcp NAME).
func trustProjectMCP(t *testing.T, h *Harness, root string) {
	t.Helper()
	proj, err := mcpconfig.Project(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range proj.Servers {
		if _, err := h.AcceptTrust(root, trust.KindMCP, s.Name, "", trust.ServerHash(s)); err != nil {
			t.Fatal(err)
		}
	}
}
