package rpc

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/chirality/harness/claudecode/claudetest"
)

// Transcripts, in the conformance style of the MCP go-sdk: each file of
// testdata/transcripts is a txtar archive whose comment says what it shows
// and whose files are
//
//	-- model --   the fake model's replies, one text reply per line (optional)
//	-- client --  the lines the client writes, one JSON-RPC message a line
//	-- server --  every line the server writes, in order
//
// TestTranscripts sends the client's lines to a real server (the Claude
// Code CLI against the fake Messages API), one at a time: after a line
// that asks for an answer (every line but a notification, an object
// without "id") it waits for that answer, and after a turn.start for the
// turn's end, so what the server writes is in one order only. It then
// compares the server's lines with the expected ones, both normalised
// (normalise): ids become the names T, U, I1…, times fixed numbers, the
// project's directory /work/project, costUsd (the engine's) is cut to 6
// decimals and usage to its input_tokens and output_tokens, and keys are
// sorted. Client lines use
// those names for the ids the server made; they are replaced by the real
// ones before a line is sent.
//
// go test ./rpc -run TestTranscripts -update rewrites the server sections
// from what the server wrote (review the diff).
var update = flag.Bool("update", false, "rewrite the server section of testdata/transcripts/*.txtar")

// Sections of a transcript.
type transcript struct {
	comment               string
	model, client, server []string
}

func readTranscript(t *testing.T, path string) (*txtar.Archive, transcript) {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := transcript{comment: string(a.Comment)}
	for _, f := range a.Files {
		lines := nonEmptyLines(string(f.Data))
		switch f.Name {
		case "model":
			tr.model = lines
		case "client":
			tr.client = lines
		case "server":
			tr.server = lines
		default:
			t.Fatalf("%s: unknown section %q (model, client, server)", path, f.Name)
		}
	}
	if len(tr.client) == 0 {
		t.Fatalf("%s: no client lines", path)
	}
	return a, tr
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func TestTranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/transcripts/*.txtar")
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a, tr := readTranscript(t, path)
			got := replayTranscript(t, tr)
			if *update {
				for i := range a.Files {
					if a.Files[i].Name == "server" {
						a.Files[i].Data = []byte(strings.Join(got, "\n") + "\n")
					}
				}
				if err := os.WriteFile(path, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for i := 0; i < max(len(got), len(tr.server)); i++ {
				var want, have string
				if i < len(tr.server) {
					want = canonical(t, tr.server[i])
				}
				if i < len(got) {
					have = got[i]
				}
				if want != have {
					t.Fatalf("server line %d differs:\n want %s\n  got %s\n(all it wrote:\n%s)", i+1, want, have, strings.Join(got, "\n"))
				}
			}
		})
	}
}

// replayTranscript runs tr's client lines against a new server and returns
// what it wrote, normalised.
func replayTranscript(t *testing.T, tr transcript) []string {
	e := newEnv(t)
	for _, m := range tr.model {
		e.api.Script(claudetest.TextReply(m))
	}
	c := e.start(t)
	n := newNormaliser(e.cwd)
	var got []string
	take := func(what string, pred func(msg) bool) msg {
		m := c.next(what, func(msg) bool { return true })
		got = append(got, n.line(t, m.raw))
		for !pred(m) {
			m = c.next(what, func(msg) bool { return true })
			got = append(got, n.line(t, m.raw))
		}
		return m
	}
	for _, line := range tr.client {
		line = n.real(line)
		c.send(line)
		var req struct {
			ID     *json.RawMessage `json:"id"`
			Method string           `json:"method"`
		}
		isObject := json.Unmarshal([]byte(line), &req) == nil
		if isObject && req.ID == nil {
			continue // a notification: never answered
		}
		ans := take("the answer to "+clip(line), func(m msg) bool {
			return m.Method == "" // a response (or a batch's array)
		})
		if isObject && req.Method == "turn.start" && ans.Error == nil {
			var r struct {
				TurnID string `json:"turnId"`
			}
			if json.Unmarshal(ans.Result, &r) == nil && r.TurnID != "" {
				take("the end of turn "+r.TurnID, func(m msg) bool {
					return (m.Method == "turn.completed" || m.Method == "turn.error") && m.Params["turnId"] == r.TurnID
				})
			}
		}
	}
	c.in.Close()
	for m := range c.out {
		got = append(got, n.line(t, m.raw))
	}
	if err := <-c.done; err != nil {
		t.Fatal(err)
	}
	return got
}

// normaliser gives the ids a server makes stable names, in the order it
// first meets them: threads T, T2, …; turns U, U2, …; items I1, I2, …;
// approval requests R1, R2, ….
type normaliser struct {
	cwd   string
	names map[string]string // real id → name
	reals map[string]string // name → real id
	count map[string]int    // per kind
}

func newNormaliser(cwd string) *normaliser {
	return &normaliser{cwd: cwd, names: map[string]string{}, reals: map[string]string{}, count: map[string]int{}}
}

// idKinds are the keys whose string values are ids, and the kind of each.
var idKinds = map[string]string{
	"threadId": "T", "forkedFrom": "T", "from": "T",
	"turnId": "U", "toTurn": "U",
	"itemId": "I", "toolItemId": "I",
	"requestId": "R",
}

// timeValues are the fixed numbers the times of a Thread or Turn become.
var timeValues = map[string]int{"created": 1, "updated": 1, "started": 2, "completed": 3}

func (n *normaliser) name(kind, id string) string {
	if nm, ok := n.names[id]; ok {
		return nm
	}
	n.count[kind]++
	nm := fmt.Sprintf("%s%d", kind, n.count[kind])
	if (kind == "T" || kind == "U") && n.count[kind] == 1 {
		nm = kind // the example's T and U
	}
	n.names[id], n.reals[nm] = nm, id
	return nm
}

// real replaces the names in a client line by the ids they stand for.
func (n *normaliser) real(line string) string {
	for nm, id := range n.reals {
		line = strings.ReplaceAll(line, `"`+nm+`"`, `"`+id+`"`)
	}
	return line
}

// line normalises one line the server wrote.
func (n *normaliser) line(t *testing.T, raw string) string {
	t.Helper()
	v := n.walk("", decodeLine(t, "the server wrote", raw))
	// Ids inside messages ("thread not found: …").
	b := marshalSorted(v)
	for id, nm := range n.names {
		b = strings.ReplaceAll(b, id, nm)
	}
	return strings.ReplaceAll(b, n.cwd, "/work/project")
}

func (n *normaliser) walk(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			x[k] = n.walkField(key, k, x[k])
		}
		return x
	case []any:
		for i := range x {
			x[i] = n.walk(key, x[i])
		}
	}
	return v
}

func (n *normaliser) walkField(parent, k string, v any) any {
	if kind, ok := idKinds[k]; ok {
		if s, ok := v.(string); ok && s != "" {
			return n.name(kind, s)
		}
	}
	switch k {
	case "costUsd": // the engine's: rounded
		if num, ok := v.(json.Number); ok {
			f, _ := num.Float64()
			return json.Number(strconv.FormatFloat(math.Round(f*1e6)/1e6, 'f', -1, 64))
		}
	case "usage": // the engine's: kept to its token counts
		if u, ok := v.(map[string]any); ok {
			out := map[string]any{}
			for _, key := range []string{"input_tokens", "output_tokens"} {
				if x, ok := u[key]; ok {
					out[key] = x
				}
			}
			return out
		}
	}
	if tv, ok := timeValues[k]; ok && parent == "time" {
		if _, ok := v.(json.Number); ok {
			return tv
		}
	}
	return n.walk(k, v)
}

// marshalSorted writes v as compact JSON with sorted keys (as
// encoding/json does for maps), keeping numbers as written.
func marshalSorted(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(buf.String(), "\n")
}

// decodeLine decodes one JSON line, keeping numbers as written.
func decodeLine(t *testing.T, what, line string) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s %q: %v", what, line, err)
	}
	return v
}

// canonical is line with sorted keys (how an expected line is compared).
func canonical(t *testing.T, line string) string {
	t.Helper()
	return marshalSorted(decodeLine(t, "expected line", line))
}

// TestTranscriptsMatchProtocolExample: PROTOCOL.md's example session is
// the transcript testdata/transcripts/protocol-example.txtar, line for
// line (→ its client lines, ← its server lines), so the example shown is
// what a real server writes.
func TestTranscriptsMatchProtocolExample(t *testing.T) {
	doc, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, tr := readTranscript(t, "testdata/transcripts/protocol-example.txtar")
	parts := strings.SplitN(string(doc), "<!-- rpc-example -->\n```\n", 2)
	if len(parts) != 2 {
		t.Fatal("PROTOCOL.md has no <!-- rpc-example --> block")
	}
	block := strings.SplitN(parts[1], "```", 2)[0]
	var client, server []string
	for _, line := range nonEmptyLines(block) {
		dir, text, _ := strings.Cut(line, " ")
		switch dir {
		case "→":
			client = append(client, canonical(t, text))
		case "←":
			server = append(server, canonical(t, text))
		default:
			t.Fatalf("PROTOCOL.md example line %q", line)
		}
	}
	compare := func(what string, doc, file []string) {
		t.Helper()
		for i := 0; i < max(len(doc), len(file)); i++ {
			var d, f string
			if i < len(doc) {
				d = doc[i]
			}
			if i < len(file) {
				f = canonical(t, file[i])
			}
			if d != f {
				t.Fatalf("%s line %d: PROTOCOL.md and protocol-example.txtar differ:\n PROTOCOL.md %s\n       txtar %s", what, i+1, d, f)
			}
		}
	}
	compare("client", client, tr.client)
	compare("server", server, tr.server)
}
