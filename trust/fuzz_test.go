package trust

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Any bytes in a record file either read as the project's record or are
// ErrCorrupt (nothing trusted); reading never panics, and what reads
// back is bounded.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"version":1,"projectRoot":"/p","sessions":{"s":{"rules":["Bash(ls)"]}},"mcp":{"a":"sha256:00"}}`))
	f.Add([]byte(`{"version":1,"projectRoot":"/p","personas":{"/p/agents/AGENT_x.md":{"hash":"h","grants":{"tools":null,"disallowedTools":null,"autoApproveTools":["Bash"]},"trustedAt":"2026-01-01T00:00:00Z"}}}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "r.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := read(path, "/p")
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			if len(r.Sessions)+len(r.Personas)+len(r.MCP) != 0 {
				t.Fatalf("a corrupt record trusts something: %+v", r)
			}
			return
		}
		if r.Version != recordVersion || r.ProjectRoot != "/p" {
			t.Fatalf("read %+v", r)
		}
	})
}
