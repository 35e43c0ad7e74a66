package web_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/chirality/harness/gateway"
)

// TestConsoleUsesTheWireNames: every event type the console's scripts
// name and every field the transcript reads off an event is in the Event
// schema of the gateway's OpenAPI document (generated from the Go types),
// so a renamed field or type fails here, not in a browser.
func TestConsoleUsesTheWireNames(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(gateway.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	ev := doc.Components.Schemas["Event"]
	types := ev.Properties["type"].Enum
	if len(types) == 0 {
		t.Fatal("the Event schema lists no types")
	}
	typeRE := regexp.MustCompile(`"((?:user|session|chat|thinking|tool|process|approval|trust|prompt):[a-z_]+)"`)
	fieldRE := regexp.MustCompile(`\bev\.([a-zA-Z]+)\b`)
	seen := 0
	for _, name := range []string{"static/transcript.js", "static/app.js"} {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range typeRE.FindAllStringSubmatch(string(src), -1) {
			seen++
			if !slices.Contains(types, m[1]) {
				t.Errorf("%s names event type %q, which the gateway does not send", name, m[1])
			}
		}
		if name != "static/transcript.js" { // app.js's ev is also a DOM event
			continue
		}
		for _, m := range fieldRE.FindAllStringSubmatch(string(src), -1) {
			seen++
			if _, ok := ev.Properties[m[1]]; !ok {
				t.Errorf("%s reads ev.%s, which no event has", name, m[1])
			}
		}
	}
	if seen == 0 {
		t.Fatal("found no event names in the console's scripts")
	}
}
