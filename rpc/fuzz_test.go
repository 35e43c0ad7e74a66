package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
)

// FuzzDecode: no input makes the decoder panic, and what it accepts is a
// request with a method, at most MaxBatch of them; every rejected request
// gets a code the spec has. The corpus it found is kept in testdata.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"thread.list"},{"jsonrpc":"2.0","method":"x"}]`,
		`{"jsonrpc":"2.0","id":null,"method":"a"}`, `[]`, `{`, `"str"`, `{"jsonrpc":"2.0","id":[1],"method":"a"}`,
		`{"jsonrpc":"2.0","id":"x","method":"","params":3}`,
		"[" + strings.Repeat(`{"jsonrpc":"2.0","method":"x"},`, MaxBatch) + `{"jsonrpc":"2.0","method":"x"}]`,
		// the conversation control extensions
		`{"jsonrpc":"2.0","id":2,"method":"thread.update","params":{"threadId":"t","agent":"A","model":{"providerID":"anthropic","modelID":"m"},"permissionMode":"plan","effort":"low"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"thread.fork","params":{"threadId":"t","atSeq":7}}`,
		`{"jsonrpc":"2.0","id":4,"method":"thread.rollback","params":{"threadId":"t","toTurn":"turn_1","files":true,"conversation":false}}`,
		`[{"jsonrpc":"2.0","id":5,"method":"thread.turns","params":{"threadId":"t"}},{"jsonrpc":"2.0","method":"thread.fork","params":{"threadId":"t"}}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		items, _, err := DecodeMessage(line)
		if err != nil {
			if err.Code != CodeParseError && err.Code != CodeInvalidRequest {
				t.Fatalf("code %d", err.Code)
			}
			return
		}
		if len(items) > MaxBatch {
			t.Fatalf("a batch of %d accepted", len(items))
		}
		for _, raw := range items {
			req, id, derr := DecodeRequest(raw)
			if derr != nil {
				if derr.Code != CodeInvalidRequest {
					t.Fatalf("code %d", derr.Code)
				}
				if id != nil && !json.Valid(id) {
					t.Fatalf("invalid id %q", id)
				}
				continue
			}
			if req.Method == "" || (req.ID != nil && !json.Valid(req.ID)) {
				t.Fatalf("accepted %q as %+v", raw, req)
			}
			if b, err := response(req.ID, map[string]any{}, nil); err != nil || !json.Valid(b) {
				t.Fatalf("response for %q: %v", raw, err)
			}
		}
	})
}

// FuzzControlParams: the conversation control methods answer any params
// with one valid response line (a result, or an error with a code the
// protocol has), and never panic. The server has a thread without turns
// ("fresh") and knows no other; nothing reaches a model. Inputs it found
// are kept in testdata.
func FuzzControlParams(f *testing.F) {
	for _, s := range []string{
		`{"threadId":"fresh"}`, `{"threadId":"fresh","atSeq":3}`, `{"threadId":"fresh","toTurn":"turn_x","files":true}`,
		`{"threadId":"fresh","agent":"","model":{"providerID":"","modelID":null},"permissionMode":"plan","effort":"high","title":"t"}`,
		`{"threadId":"fresh","model":{"providerID":"nope"}}`, `{"threadId":"fresh","permissionMode":"bypassPermissions"}`,
		`{"threadId":"fresh","atSeq":-1}`, `{"threadId":"fresh","toTurn":""}`, `{"threadId":5}`, `[]`, `null`, `{"threadId":"other"}`,
	} {
		for m := range 4 {
			f.Add(byte(m), []byte(s))
		}
	}
	cwd, _ := filepath.EvalSymlinks(f.TempDir())
	h, err := harness.New(harness.Config{Roots: []string{cwd}, StateDir: f.TempDir(), NoProjectLogs: true, Aliases: engines.Aliases,
		DefaultEngine: engine.Anthropic, Engines: engines.Builtin(engines.Config{})})
	if err != nil {
		f.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	var out bytes.Buffer
	s, err := NewServer(h, &out, Options{Cwd: cwd})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close(context.Background())
	fresh := &thread{dir: filepath.Join(s.root, "fresh"), meta: meta{Thread: Thread{ThreadID: "fresh", Directory: cwd}}}
	s.threads["fresh"] = fresh
	methods := []string{"thread.update", "thread.fork", "thread.rollback", "thread.turns"}
	codes := map[int]bool{CodeInvalidParams: true, CodeThreadNotFound: true, CodeTurnBusy: true, CodeTurnNotFound: true, CodeUnsupported: true, CodeInvalidRequest: true, CodeParseError: true}
	f.Fuzz(func(t *testing.T, m byte, params []byte) {
		out.Reset()
		fresh.mu.Lock()
		fresh.meta = meta{Thread: Thread{ThreadID: "fresh", Directory: cwd}} // no session, no turn, every time
		fresh.mu.Unlock()
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": methods[int(m)%len(methods)], "params": json.RawMessage(params)})
		if !json.Valid(params) {
			line = []byte(`{"jsonrpc":"2.0","id":1,"method":"` + methods[int(m)%len(methods)] + `","params":` + string(params) + `}`)
		}
		s.Handle(context.Background(), line)
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var r struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  *Error          `json:"error"`
			}
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("%s → not JSON: %q", line, l)
			}
			if r.Method != "" {
				continue // a notification (thread.update makes no other)
			}
			if r.Error != nil && !codes[r.Error.Code] {
				t.Fatalf("%s → code %d: %s", line, r.Error.Code, r.Error.Message)
			}
			if r.Error == nil && len(r.Result) == 0 {
				t.Fatalf("%s → neither result nor error: %s", line, l)
			}
		}
	})
}
