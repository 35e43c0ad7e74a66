package acp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/event"
)

// The contract with each real agent: the shapes of the ACP messages the
// client consumes (initialize, session/new and session/prompt answers,
// the mapped session/update kinds, session/request_permission), merged
// over a recorded run: every key with the types of its values, arrays by
// their elements, agents' private _meta left out. TestRealAgents compares
// a fresh run with testdata/NAME.shapes.json and fails loudly when a new
// agent version changes them; -update rewrites the recording
// (testdata/NAME.acp.jsonl) and the shapes.

func recordingPath(name string) string { return filepath.Join("testdata", name+".acp.jsonl") }
func shapesPath(name string) string    { return filepath.Join("testdata", name+".shapes.json") }
func eventsPath(name string) string    { return filepath.Join("testdata", name+".events.json") }

func writeRecording(t *testing.T, name string, lines []recLine) {
	t.Helper()
	var b bytes.Buffer
	for _, l := range lines {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recordingPath(name), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sh, _ := json.MarshalIndent(shapes(t, lines), "", "  ")
	if err := os.WriteFile(shapesPath(name), append(sh, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readRecording(t *testing.T, name string) []recLine {
	t.Helper()
	f, err := os.Open(recordingPath(name))
	if err != nil {
		t.Fatalf("%v (record it: go test ./acp -run TestRealAgents -update)", err)
	}
	defer f.Close()
	var out []recLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l recLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

var mappedKinds = []string{acp.KindAgentMessageChunk, acp.KindAgentThoughtChunk, acp.KindToolCall, acp.KindToolCallUpdate, acp.KindPlan, acp.KindUsageUpdate}

// shapes merges the consumed messages' shapes by signature.
func shapes(t *testing.T, lines []recLine) map[string]any {
	methodOf := map[string]string{} // request id → method, of what the client sent
	out := map[string]any{}
	for _, l := range lines {
		var m wireMsg
		if json.Unmarshal(l.Msg, &m) != nil {
			continue
		}
		if l.Dir == "out" {
			if m.Method != "" && len(m.ID) > 0 {
				methodOf[string(m.ID)] = m.Method
			}
			continue
		}
		var sig string
		var body json.RawMessage
		switch {
		case m.Method == "session/update":
			var p struct {
				Update json.RawMessage `json:"update"`
			}
			_ = json.Unmarshal(m.Params, &p)
			var k struct {
				Kind string `json:"sessionUpdate"`
			}
			_ = json.Unmarshal(p.Update, &k)
			if !slices.Contains(mappedKinds, k.Kind) {
				continue
			}
			sig, body = "session/update "+k.Kind, p.Update
		case m.Method == "session/request_permission":
			sig, body = m.Method, m.Params
		case m.Method == "" && len(m.Result) > 0:
			meth := methodOf[string(m.ID)]
			switch meth {
			case "initialize", "session/new", "session/prompt":
				sig, body = meth+" result", m.Result
			default:
				continue
			}
		default:
			continue
		}
		var v any
		if json.Unmarshal(body, &v) != nil {
			continue
		}
		out[sig] = merge(out[sig], shapeOf(v))
	}
	return out
}

// shapeOf: objects → map of key → shape, arrays → {"[]": element shape},
// scalars → their JSON type name.
func shapeOf(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			if k == "_meta" {
				continue
			}
			m[k] = shapeOf(e)
		}
		return m
	case []any:
		var el any
		for _, e := range x {
			el = merge(el, shapeOf(e))
		}
		if el == nil {
			el = "empty"
		}
		return map[string]any{"[]": el}
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	}
	return "null"
}

// merge unites two shapes: objects key by key, differing scalars as
// "a|b" (sorted).
func merge(a, b any) any {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		out := map[string]any{}
		for k, v := range am {
			out[k] = v
		}
		for k, v := range bm {
			out[k] = merge(out[k], v)
		}
		return out
	}
	as, bs := fmt.Sprint(a), fmt.Sprint(b)
	if aok {
		as = "object"
	}
	if bok {
		bs = "object"
	}
	set := map[string]bool{}
	for _, s := range append(strings.Split(as, "|"), strings.Split(bs, "|")...) {
		set[s] = true
	}
	var parts []string
	for s := range set {
		parts = append(parts, s)
	}
	sort.Strings(parts)
	return strings.Join(parts, "|")
}

func checkShapes(t *testing.T, name string, lines []recLine) {
	t.Helper()
	want, err := os.ReadFile(shapesPath(name))
	if err != nil {
		t.Fatalf("%v (record it: go test ./acp -run TestRealAgents -update)", err)
	}
	got, _ := json.MarshalIndent(shapes(t, lines), "", "  ")
	var w, g any
	_ = json.Unmarshal(want, &w)
	_ = json.Unmarshal(got, &g)
	var diff []string
	for _, d := range diffShapes("", w, g) {
		if consumed(d) {
			diff = append(diff, d)
		} else {
			t.Logf("%s: shape difference in what the client does not read: %s", name, d)
		}
	}
	if len(diff) > 0 {
		t.Errorf("%s's ACP messages changed shape (a new version?): check the mapping in package acp, then rerun with -update:\n  %s",
			name, strings.Join(diff, "\n  "))
	}
}

// consumedPaths are the fields the client reads (the mapping's inputs):
// a difference there fails; elsewhere (new fields, fields an agent sends
// only sometimes, like claude-agent-acp's rawInput in tool_call) it is
// logged. New fields never fail.
var consumedPaths = []string{
	"initialize result.protocolVersion", "initialize result.agentCapabilities.loadSession", "initialize result.agentInfo.version",
	"session/new result.sessionId",
	"session/prompt result.stopReason",
	"session/update agent_message_chunk.content.type", "session/update agent_message_chunk.content.text",
	"session/update agent_thought_chunk.content.type", "session/update agent_thought_chunk.content.text",
	"session/update tool_call.toolCallId", "session/update tool_call.kind",
	"session/update tool_call_update.toolCallId", "session/update tool_call_update.status",
	"session/update tool_call_update.content.[].type",
	"session/request_permission.options.[].optionId", "session/request_permission.options.[].kind",
	"session/request_permission.toolCall.toolCallId",
}

func consumed(diff string) bool {
	path, what, _ := strings.Cut(strings.TrimPrefix(diff, "."), ": ")
	if what == "new" {
		return false
	}
	for _, c := range consumedPaths {
		if path == c || strings.HasPrefix(c, path+".") || strings.HasPrefix(path, c+".") {
			return true
		}
	}
	return false
}

func diffShapes(path string, want, got any) []string {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if want == "empty" || got == "empty" {
		return nil // an array empty in one run says nothing of its elements
	}
	if !wok || !gok {
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return []string{fmt.Sprintf("%s: was %v, now %v", path, want, got)}
		}
		return nil
	}
	var out []string
	for k, v := range wm {
		if gv, ok := gm[k]; !ok {
			out = append(out, fmt.Sprintf("%s.%s: gone", path, k))
		} else {
			out = append(out, diffShapes(path+"."+k, v, gv)...)
		}
	}
	for k := range gm {
		if _, ok := wm[k]; !ok {
			out = append(out, fmt.Sprintf("%s.%s: new", path, k))
		}
	}
	sort.Strings(out)
	return out
}

// replay feeds a recording's agent-to-client stream through the decoder
// and the mapper, as a turn does (permission requests start their tool).
func replay(t *testing.T, lines []recLine) []event.Event {
	t.Helper()
	var out []event.Event
	m := acp.NewMapper()
	for _, l := range lines {
		if l.Dir != "in" {
			continue
		}
		var w wireMsg
		if err := json.Unmarshal(l.Msg, &w); err != nil {
			t.Fatal(err)
		}
		switch w.Method {
		case "session/update":
			n, err := acp.DecodeUpdate(w.Params)
			if err != nil {
				t.Fatalf("recorded update rejected: %v: %s", err, w.Params)
			}
			out = append(out, m.Handle(n.Update)...)
		case "session/request_permission":
			var p struct {
				ToolCall json.RawMessage `json:"toolCall"`
			}
			_ = json.Unmarshal(w.Params, &p)
			n, err := acp.DecodeUpdate([]byte(`{"update":` + strings.Replace(string(p.ToolCall), "{", `{"sessionUpdate":"tool_call_update",`, 1) + `}`))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m.EnsureStarted(n.Update)...)
		case "":
			var r struct {
				StopReason string `json:"stopReason"`
			}
			if json.Unmarshal(w.Result, &r) == nil && r.StopReason != "" {
				out = append(out, m.Flush()...)
				m = acp.NewMapper()
			}
		}
	}
	return out
}

// TestReplayRecordings replays each recorded real-agent stream: the
// mapper must keep the contract (one tool:start per tool call, before its
// result) and give the golden events (testdata/NAME.events.json,
// rewritten with -update).
func TestReplayRecordings(t *testing.T) {
	for _, spec := range realAgents {
		t.Run(spec.name, func(t *testing.T) {
			lines := readRecording(t, spec.name)
			evs := replay(t, lines)
			starts := map[string]int{}
			for _, e := range evs {
				switch e.Type {
				case event.TypeToolStart:
					starts[e.ToolStart.ToolUseID]++
					if starts[e.ToolStart.ToolUseID] > 1 {
						t.Errorf("tool %s started twice", e.ToolStart.ToolUseID)
					}
				case event.TypeToolResult:
					if starts[e.ToolResult.ToolUseID] != 1 {
						t.Errorf("result of %s without its start", e.ToolResult.ToolUseID)
					}
				}
			}
			if !strings.Contains(chat(evs), "Hello from the fake model.") || count(evs, event.TypeToolStart) < 3 {
				t.Errorf("replay: chat %q, %d tool starts", chat(evs), count(evs, event.TypeToolStart))
			}
			got, _ := json.MarshalIndent(evs, "", " ")
			if *update {
				if err := os.WriteFile(eventsPath(spec.name), append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(eventsPath(spec.name))
			if err != nil {
				t.Fatalf("%v (go test ./acp -run TestReplayRecordings -update)", err)
			}
			if !bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(got)) {
				t.Errorf("replayed events differ from %s (rerun with -update after checking)", eventsPath(spec.name))
			}
		})
	}
}

func TestContractDiffs(t *testing.T) {
	for d, want := range map[string]bool{
		".session/update tool_call.rawInput.command: new":                          false,
		".session/update tool_call.rawInput.command: gone":                         false,
		".session/prompt result.stopReason: gone":                                  true,
		".session/update tool_call_update: gone":                                   true,
		".session/update agent_message_chunk.content.text: was string, now number": true,
		".session/request_permission.options.[].kind: gone":                        true,
	} {
		if got := consumed(d); got != want {
			t.Errorf("consumed(%q) = %v", d, got)
		}
	}
	a := shapeOf(map[string]any{"a": []any{map[string]any{"x": "s"}, map[string]any{"y": 1.0}}, "_meta": map[string]any{"z": true}})
	b := shapeOf(map[string]any{"a": []any{}})
	if d := diffShapes("", a, b); len(d) != 0 {
		t.Errorf("an empty array differs: %v", d)
	}
	if d := diffShapes("", a, shapeOf(map[string]any{"a": []any{map[string]any{"x": 2.0}}})); len(d) != 2 {
		t.Errorf("diff = %v, want x's type and y gone", d)
	}
}
