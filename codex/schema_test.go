package codex_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The requests the engine sends and the results it reads, checked
// against the pinned codex's own schema (`codex app-server
// generate-json-schema`): a version that renames, drops or adds a field
// of them fails here, before a turn misbehaves.
var (
	// schemaCalls are the methods the engine calls.
	schemaCalls = []string{"initialize", "thread/start", "thread/resume", "thread/fork", "turn/start", "turn/interrupt", "turn/steer"}
	// schemaResults are the results it reads, by the file the schema
	// bundle keeps them in.
	schemaResults = map[string]string{"thread/start": "v2/ThreadStartResponse.json", "thread/resume": "v2/ThreadResumeResponse.json",
		"thread/fork": "v2/ThreadForkResponse.json", "turn/start": "v2/TurnStartResponse.json", "turn/completed": "v2/TurnCompletedNotification.json"}
	// schemaRelied are the lines the engine cannot do without (turn.go,
	// map.go); -update cannot drop them silently.
	schemaRelied = []string{
		"thread/fork params threadId*", "thread/fork params lastTurnId", "thread/fork params excludeTurns",
		"thread/fork params cwd", "thread/fork params approvalPolicy", "thread/fork params sandbox", "thread/fork params model",
		"thread/fork params baseInstructions", "thread/fork params config",
		"thread/resume params threadId*", "thread/start params cwd", "turn/start params threadId*", "turn/start params input*",
		"turn/start params effort", "turn/interrupt params threadId*", "turn/interrupt params turnId*",
		"thread/fork result thread*", "thread/fork result thread.id*", "thread/start result thread.id*",
		"thread/resume result thread.id*", "turn/start result turn.id*", "turn/completed result turn.id*",
		"turn/completed result turn.status*",
		"turn/steer params threadId*", "turn/steer params expectedTurnId*", "turn/steer params input*",
	}
)

// TestSchemaContract compares the pinned codex's schema of the methods
// the engine uses with testdata/schema.golden (-update rewrites it after
// the engine was checked against the change).
func TestSchemaContract(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command(codexBin(t), "app-server", "generate-json-schema", "--out", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("generate-json-schema: %v: %s", err, out)
	}
	got := schemaLines(t, dir)
	for _, r := range schemaRelied {
		if !slices.Contains(got, r) {
			t.Errorf("the pinned codex's schema lacks %q, which the engine relies on", r)
		}
	}
	path := filepath.Join("testdata", "schema.golden")
	text := strings.Join(got, "\n") + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != text {
		old := strings.Split(strings.TrimSpace(string(want)), "\n")
		for _, l := range old {
			if !slices.Contains(got, l) {
				t.Errorf("codex's schema no longer has %q (recorded in %s)", l, path)
			}
		}
		for _, l := range got {
			if !slices.Contains(old, l) {
				t.Errorf("codex's schema has %q, not recorded in %s", l, path)
			}
		}
		t.Log("check the engine against the change, then rerun with -update")
	}
}

// schemaDoc is the part of a JSON schema the test reads.
type schemaDoc struct {
	Ref         string                `json:"$ref"`
	Properties  map[string]*schemaDoc `json:"properties"`
	Required    []string              `json:"required"`
	AllOf       []*schemaDoc          `json:"allOf"`
	AnyOf       []*schemaDoc          `json:"anyOf"`
	OneOf       []json.RawMessage     `json:"oneOf"`
	Definitions map[string]*schemaDoc `json:"definitions"`
}

// schemaLines lists "METHOD params NAME" for every property of each
// called method's params and "METHOD result NAME" (and NAME.SUB one level
// down) for each read result; "*" marks a required one.
func schemaLines(t *testing.T, dir string) []string {
	t.Helper()
	var reqs schemaDoc
	readSchema(t, filepath.Join(dir, "ClientRequest.json"), &reqs)
	params := map[string]string{}
	for _, raw := range reqs.OneOf {
		var o struct {
			Properties struct {
				Method struct {
					Enum []string `json:"enum"`
				} `json:"method"`
				Params schemaDoc `json:"params"`
			} `json:"properties"`
		}
		if json.Unmarshal(raw, &o) == nil && len(o.Properties.Method.Enum) == 1 {
			params[o.Properties.Method.Enum[0]] = o.Properties.Params.Ref
		}
	}
	var out []string
	for _, m := range schemaCalls {
		ref, ok := params[m]
		if !ok {
			t.Errorf("the pinned codex no longer has the method %s", m)
			continue
		}
		out = append(out, propLines(m+" params ", resolve(&reqs, &schemaDoc{Ref: ref}), &reqs, 0)...)
	}
	for m, file := range schemaResults {
		var doc schemaDoc
		readSchema(t, filepath.Join(dir, file), &doc)
		out = append(out, propLines(m+" result ", &doc, &doc, 1)...)
	}
	sort.Strings(out)
	return out
}

// UnmarshalJSON takes a boolean schema (true: anything) as an empty one.
func (d *schemaDoc) UnmarshalJSON(b []byte) error {
	if s := string(b); s == "true" || s == "false" {
		return nil
	}
	type plain schemaDoc
	return json.Unmarshal(b, (*plain)(d))
}

func readSchema(t *testing.T, path string, into *schemaDoc) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the schema bundle lacks %s: %v", filepath.Base(path), err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// resolve follows a $ref, an allOf of one and an anyOf with null to the
// object schema.
func resolve(root, d *schemaDoc) *schemaDoc {
	for range 8 {
		switch {
		case d == nil:
			return nil
		case d.Ref != "":
			d = root.Definitions[strings.TrimPrefix(d.Ref, "#/definitions/")]
		case len(d.AllOf) == 1:
			d = d.AllOf[0]
		case len(d.AnyOf) == 2 && d.Properties == nil:
			if d.AnyOf[0].Ref != "" || d.AnyOf[0].Properties != nil {
				d = d.AnyOf[0]
			} else {
				d = d.AnyOf[1]
			}
		default:
			return d
		}
	}
	return d
}

func propLines(prefix string, d, root *schemaDoc, depth int) []string {
	d = resolve(root, d)
	if d == nil {
		return nil
	}
	var out []string
	for name, p := range d.Properties {
		line := prefix + name
		if slices.Contains(d.Required, name) {
			line += "*"
		}
		out = append(out, line)
		if depth > 0 {
			out = append(out, propLines(prefix+name+".", p, root, depth-1)...)
		}
	}
	return out
}
