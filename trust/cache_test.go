package trust

import (
	"errors"
	"os"
	"slices"
	"testing"
)

// The readers keep a record decoded between reads, yet each read says
// what the file says now: a write by another Store (another process) is
// seen at once, also one of the same size, and a record made corrupt
// behind their back trusts nothing. What they hand out is a copy.
func TestReadersSeeEveryWrite(t *testing.T) {
	dir := t.TempDir()
	reader, _ := Open(dir)
	writer, _ := Open(dir)
	const root = "/p/a"
	if g, err := reader.Session(root, "s1"); g != nil || err != nil {
		t.Fatalf("no record yet: %+v %v", g, err)
	}
	for i, rule := range []string{"Bash(a)", "Bash(b)", "Bash(c)"} {
		if err := writer.AddRule(root, "s1", rule); err != nil {
			t.Fatal(err)
		}
		got, err := reader.Rules(root, "s1")
		if err != nil || len(got) != i+1 || got[i] != rule {
			t.Fatalf("after adding %s: %q %v", rule, got, err)
		}
	}
	// Same length, other bytes: another rule in place of one.
	before, _ := os.ReadFile(reader.Path(root))
	if err := writer.Update(root, func(r *Record) error {
		r.Sessions["s1"].Rules[0] = "Bash(z)"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(reader.Path(root))
	if len(after) != len(before) {
		t.Fatalf("the test wants a write of the same size: %d, %d bytes", len(before), len(after))
	}
	if got, _ := reader.Rules(root, "s1"); !slices.Equal(got, []string{"Bash(z)", "Bash(b)", "Bash(c)"}) {
		t.Fatalf("after a same-size write: %q", got)
	}
	// A copy: changing what was handed out changes nothing kept.
	g, _ := reader.Session(root, "s1")
	g.Rules[0] = "Bash(anything)"
	if err := writer.TrustPersona(root, "/p/a/agents/AGENT_X.md", "h1", Grants{Tools: []string{"Read"}}); err != nil {
		t.Fatal(err)
	}
	pt, _ := reader.Persona(root, "/p/a/agents/AGENT_X.md")
	pt.Grants.Tools[0] = "Bash"
	if got, _ := reader.Rules(root, "s1"); got[0] != "Bash(z)" {
		t.Fatalf("a caller's change reached the record: %q", got)
	}
	if pt, _ := reader.Persona(root, "/p/a/agents/AGENT_X.md"); pt.Grants.Tools[0] != "Read" {
		t.Fatalf("a caller's change reached the record: %q", pt.Grants.Tools)
	}
	// Corrupt behind the reader's back: nothing is trusted.
	if err := os.WriteFile(reader.Path(root), []byte(`{"version":1,"projectRoot":"/p/a","sessions":{"s1":{"rules":["Bash(*)"]}},"extra":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := reader.Rules(root, "s1"); got != nil || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt record: %q %v", got, err)
	}
	if err := os.Remove(reader.Path(root)); err != nil {
		t.Fatal(err)
	}
	if got, err := reader.Rules(root, "s1"); got != nil || err != nil {
		t.Fatalf("removed record: %q %v", got, err)
	}
}
