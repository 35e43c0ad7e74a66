package rpc

import (
	"encoding/json"
	"strings"
	"testing"
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
