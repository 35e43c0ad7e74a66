package native

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/chirality/harness/claudecode/claudetest"
)

// schemaTool is a tool with a given input schema.
type schemaTool struct {
	name   string
	schema string
}

func (s schemaTool) Name() string                 { return s.name }
func (s schemaTool) Description() string          { return "d" }
func (s schemaTool) InputSchema() json.RawMessage { return json.RawMessage(s.schema) }
func (s schemaTool) Execute(context.Context, json.RawMessage) (string, error) {
	return "", nil
}

// Harnesses made at once with the same tools share their parsed schemas
// (inputSchema): each request still carries each tool's schema as given,
// and one that is not JSON as the zero parameter, as before. Under
// -race this also checks that sharing only reads.
func TestSharedToolSchemas(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	var bodies [][]byte
	f.api.SetResponder(func(r *claudetest.Request) claudetest.Reply {
		mu.Lock()
		bodies = append(bodies, r.Body)
		mu.Unlock()
		return claudetest.TextReply("ok")
	})
	tools := []Tool{
		schemaTool{"a", `{"type":"object","properties":{"path":{"type":"string","description":"p"},"n":{"type":"integer"}},"required":["path"]}`},
		schemaTool{"b", `{"type":"object","properties":{}}`},
		schemaTool{"c", `not json`},
	}
	want := map[string]any{}
	for _, tl := range tools[:2] {
		var v any
		if err := json.Unmarshal(tl.InputSchema(), &v); err != nil {
			t.Fatal(err)
		}
		want[tl.Name()] = v
	}
	want["c"] = nil // not JSON: the zero parameter, as before the sharing
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := NewHarness(Config{APIKey: "k", BaseURL: f.api.URL, Options: []option.RequestOption{option.WithMaxRetries(0)}}, tools, nil)
			if err := h.Prompt(context.Background(), "hi"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if len(bodies) != 4 {
		t.Fatalf("%d requests, want 4", len(bodies))
	}
	for _, b := range bodies {
		var req struct {
			Tools []struct {
				Name        string `json:"name"`
				InputSchema any    `json:"input_schema"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatal(err)
		}
		got := map[string]any{}
		for _, tl := range req.Tools {
			got[tl.Name] = tl.InputSchema
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("request's tool schemas %v, want %v", got, want)
		}
	}
}

// The schemas kept are bounded: past maxSchemas a schema is parsed each
// time and not kept.
func TestSharedToolSchemasBounded(t *testing.T) {
	for i := range maxSchemas + 10 {
		inputSchema(json.RawMessage(fmt.Sprintf(`{"type":"object","description":"bounded %d"}`, i)))
	}
	n := 0
	schemas.Range(func(any, any) bool { n++; return true })
	if n > maxSchemas || nSchemas.Load() > maxSchemas {
		t.Fatalf("%d schemas kept (counted %d), at most %d", n, nSchemas.Load(), maxSchemas)
	}
	s := inputSchema(json.RawMessage(`{"type":"object","description":"past the bound"}`))
	if s.ExtraFields["description"] != "past the bound" {
		t.Fatalf("a schema past the bound parsed as %+v", s)
	}
}
