package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestDecodeDialects(t *testing.T) {
	for _, tc := range []struct {
		in           string
		strict, lax  int // 0 accepted, else the code
		strictID     string
		isReq, isNot bool
	}{
		{in: `{"jsonrpc":"2.0","id":1,"method":"a"}`, isReq: true, strictID: "1"},
		{in: `{"jsonrpc":"2.0","method":"a","params":[1]}`, isNot: true, strictID: "null"},
		{in: `{"jsonrpc":"2.0","id":null,"method":"a"}`, isReq: true, strictID: "null"},
		{in: `{"id":"x","method":"a"}`, strict: CodeInvalidRequest, strictID: `"x"`, isReq: true},
		{in: `{"jsonrpc":"1.0","id":2,"method":"a"}`, strict: CodeInvalidRequest, strictID: "2", isReq: true},
		{in: `{"jsonrpc":"2.0","id":[1],"method":"a"}`, strict: CodeInvalidRequest, lax: CodeInvalidRequest, strictID: "null"},
		{in: `{"jsonrpc":"2.0","id":true,"method":"a"}`, strict: CodeInvalidRequest, lax: CodeInvalidRequest, strictID: "null"},
		{in: `{"jsonrpc":"2.0","id":3,"method":""}`, strict: CodeInvalidRequest, lax: CodeInvalidRequest, strictID: "3"},
		{in: `{"jsonrpc":"2.0","id":3,"method":7}`, strict: CodeInvalidRequest, lax: CodeInvalidRequest, strictID: "3"},
		// Member names are case-sensitive (JSON-RPC 2.0): "ID" is no id,
		// so this is a notification; "JSONRPC" is no "jsonrpc"; "Method"
		// is no method. A member of the wrong type keeps the id answered.
		{in: `{"jsonrpc":"2.0","ID":1,"method":"a"}`, isNot: true, strictID: "null"},
		{in: `{"jsonrpc":"2.0","Id":1,"id":2,"method":"a"}`, isReq: true, strictID: "2"},
		{in: `{"JSONRPC":"2.0","id":1,"method":"a"}`, strict: CodeInvalidRequest, strictID: "1", isReq: true},
		{in: `{"jsonrpc":"2.0","id":1,"Method":"a"}`, strict: CodeInvalidRequest, lax: CodeInvalidRequest, strictID: "1"},
		{in: `{"jsonrpc":2,"id":5,"method":"a"}`, strict: CodeInvalidRequest, strictID: "5", isReq: true},
		{in: `{"jsonrpc":"2.0","id":6,"method":"a","Params":3}`, isReq: true, strictID: "6"},
		{in: `{"id":7,"error":"boom"}`, strict: CodeInvalidRequest, lax: CodeInvalidRequest, strictID: "7"},
		{in: `{"jsonrpc":"2.0","id":4,"method":"a","params":3}`, strict: CodeInvalidRequest, lax: CodeInvalidRequest, strictID: "4"},
		{in: `{"id":1,"result":{}}`, strict: CodeInvalidRequest, strictID: "1"},
		{in: `{"id":"a","error":{"code":1,"message":"x"}}`, strict: CodeInvalidRequest, strictID: `"a"`},
		{in: `{"id":1}`, strict: CodeInvalidRequest, lax: CodeInvalidRequest, strictID: "1"},
		{in: `{"id":null,"result":1}`, strict: CodeInvalidRequest, lax: CodeInvalidRequest, strictID: "null"},
		{in: `{}`, strict: CodeInvalidRequest, lax: CodeInvalidRequest, strictID: "null"},
		{in: `[]`, strict: CodeInvalidRequest, lax: CodeInvalidRequest, strictID: "null"},
		{in: `"str"`, strict: CodeInvalidRequest, lax: CodeInvalidRequest, strictID: "null"},
		{in: `{`, strict: CodeParseError, lax: CodeParseError, strictID: "null"},
	} {
		m, id, err := Strict.Decode([]byte(tc.in))
		if code := codeOf(err); code != tc.strict || string(id) != tc.strictID {
			t.Errorf("strict %s: code %d id %s, want %d %s", tc.in, code, id, tc.strict, tc.strictID)
		}
		if err == nil && (m.IsRequest() != tc.isReq || m.IsNotification() != tc.isNot) {
			t.Errorf("strict %s: request %v notification %v", tc.in, m.IsRequest(), m.IsNotification())
		}
		_, _, err = Codex.Decode([]byte(tc.in))
		if code := codeOf(err); code != tc.lax {
			t.Errorf("codex %s: code %d, want %d", tc.in, code, tc.lax)
		}
	}
}

func codeOf(e *Error) int {
	if e == nil {
		return 0
	}
	return e.Code
}

func TestSplitBatchRules(t *testing.T) {
	many := func(n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"a"},`, n), ",") + "]"
	}
	for _, tc := range []struct {
		in    string
		n     int
		batch bool
		code  int
	}{
		{in: `{"jsonrpc":"2.0","method":"a"}`, n: 1},
		{in: `[1,2]`, n: 2, batch: true}, // elements are checked one by one, later
		{in: many(3), n: 3, batch: true},
		{in: many(3), n: 0, batch: true, code: CodeInvalidRequest}, // max 2 below
		{in: `[]`, batch: true, code: CodeInvalidRequest},
		{in: `[{"a":1},`, code: CodeParseError},
		{in: `nonsense`, code: CodeParseError},
	} {
		max := 100
		if tc.n == 0 && tc.code == CodeInvalidRequest && tc.in != `[]` {
			max = 2
		}
		items, batch, err := Split([]byte(tc.in), max)
		if codeOf(err) != tc.code || (err == nil && (len(items) != tc.n || batch != tc.batch)) {
			t.Errorf("%s: %d items batch %v err %v", tc.in, len(items), batch, err)
		}
	}
}

func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		got  func() ([]byte, error)
		want string
	}{
		{func() ([]byte, error) {
			return Strict.AppendResponse(nil, json.RawMessage("7"), map[string]int{"a": 1}, nil)
		},
			`{"jsonrpc":"2.0","id":7,"result":{"a":1}}`},
		{func() ([]byte, error) { return Strict.AppendResponse(nil, nil, nil, Errorf(CodeParseError, "bad")) },
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}`},
		{func() ([]byte, error) { return Strict.AppendResponse(nil, json.RawMessage(`"x"`), nil, nil) },
			`{"jsonrpc":"2.0","id":"x","result":{}}`},
		{func() ([]byte, error) {
			return Codex.AppendRequest(nil, json.RawMessage("3"), "turn/start", map[string]any{"x": 1})
		},
			`{"id":3,"method":"turn/start","params":{"x":1}}`},
		{func() ([]byte, error) { return Codex.AppendRequest(nil, nil, "initialized", nil) }, `{"method":"initialized"}`},
		{func() ([]byte, error) {
			return Codex.AppendResponse(nil, json.RawMessage("0"), nil, &Error{Code: -32601, Message: "no"})
		}, `{"id":0,"error":{"code":-32601,"message":"no"}}`},
		{func() ([]byte, error) {
			return append(Strict.AppendResponseHead(nil, json.RawMessage("1")), `[1]`+ResponseTail...), nil
		}, `{"jsonrpc":"2.0","id":1,"result":[1]}`},
	} {
		b, err := tc.got()
		if err != nil || string(b) != tc.want {
			t.Errorf("got %s (%v), want %s", b, err, tc.want)
		}
	}
	if _, err := Strict.AppendResponse(nil, nil, func() {}, nil); err == nil {
		t.Error("an unencodable result encoded")
	}
}

func TestLineReader(t *testing.T) {
	lr := NewLineReader(strings.NewReader("a\r\n"+strings.Repeat("x", 100)+"\nb\n"+strings.Repeat("y", 70000)+"\nc"), 10)
	var got []string
	for {
		l, err := lr.Line()
		if errors.Is(err, ErrLineTooLong) {
			got = append(got, "<long>")
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(l))
	}
	if strings.Join(got, ",") != "a,<long>,b,<long>,c" {
		t.Errorf("lines %q: an overlong line is skipped whole and reading goes on", got)
	}
}

// FuzzDecode: no input panics the codec; what either dialect accepts is
// a request, a notification or (Codex) a response with a valid id; every
// rejection carries a code of the specification and a valid id to answer
// with; what is accepted re-encodes to valid JSON.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"thread.list"},{"jsonrpc":"2.0","method":"x"}]`,
		`{"id":1,"result":{}}`, `{"method":"item/agentMessage/delta","params":{"itemId":"m","delta":"hi"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"a"}`, `[]`, `{`, `"str"`, `{"id":{},"method":"x"}`, "a\nb\r\n",
		`{"jsonrpc":"2.0","ID":1,"Method":"a","id":2,"method":3}`, `{"JSONRPC":"2.0","id":1,"method":"a","error":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		lr := NewLineReader(bytes.NewReader(b), 1<<10)
		for {
			line, err := lr.Line()
			if errors.Is(err, ErrLineTooLong) {
				continue
			}
			if err != nil {
				break
			}
			if len(line) > 1<<10 || bytes.ContainsRune(line, '\n') {
				t.Fatalf("bad line %q", line)
			}
			items, _, serr := Split(line, 4)
			if serr != nil && serr.Code != CodeParseError && serr.Code != CodeInvalidRequest {
				t.Fatalf("split code %d", serr.Code)
			}
			if len(items) > 4 {
				t.Fatalf("%d items over the bound", len(items))
			}
			for _, d := range []Dialect{Strict, Codex} {
				for _, raw := range append(items, line) {
					m, id, err := d.Decode(raw)
					if !json.Valid(id) {
						t.Fatalf("invalid id %q for %q", id, raw)
					}
					if err != nil {
						if err.Code != CodeParseError && err.Code != CodeInvalidRequest {
							t.Fatalf("code %d", err.Code)
						}
						continue
					}
					if m.Method == "" && (d.RequestsOnly || m.ID == nil || (m.Result == nil && m.Error == nil)) {
						t.Fatalf("%+v accepted %q as %+v", d, raw, m)
					}
					if out, err := d.AppendResponse(nil, m.ID, map[string]any{}, nil); err != nil || !json.Valid(out) {
						t.Fatalf("response for %q: %s %v", raw, out, err)
					}
				}
			}
		}
	})
}
