package mcpconfig_test

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/chirality/harness/mcpconfig"
)

// The README's .mcp.json example parses, and means what the README says.
func TestREADMEExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- mcp-json -->\\s*```json\\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README has no <!-- mcp-json --> example")
	}
	c, err := mcpconfig.Parse(m[1], "README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Names(), []string{"everything", "tracker"}) {
		t.Fatalf("servers %v", c.Names())
	}
	x, err := c.Expand(func(k string) (string, bool) { return "t0ken-value-123456", k == "TRACKER_TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	if tr, _ := x.Get("tracker"); tr.Type != mcpconfig.HTTP || tr.Headers["Authorization"] != "Bearer t0ken-value-123456" {
		t.Fatalf("tracker = %+v", tr)
	}
}
