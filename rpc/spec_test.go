package rpc

import (
	"testing"
)

// JSON-RPC 2.0 member names are case-sensitive: a request whose id is
// spelt "ID" has no id, so it is a notification and is never answered;
// and an id that can be read is answered even when another member is of
// the wrong type ("If there was an error in detecting the id … it MUST be
// Null": here there is none). Driven through the door (Serve).
func TestMemberNamesAreExact(t *testing.T) {
	e := newEnv(t)
	c := e.start(t)
	defer c.close()
	c.send(`{"jsonrpc":"2.0","ID":1,"method":"thread.list"}`) // a notification: no answer
	c.send(`{"JSONRPC":"2.0","id":2,"method":"thread.list"}`) // no "jsonrpc": -32600, id 2
	c.send(`{"jsonrpc":"2.0","id":3,"method":7}`)             // method not a string: -32600, id 3
	c.send(`{"jsonrpc":"2.0","id":4,"Method":"thread.list"}`) // no "method": -32600, id 4
	c.send(`{"jsonrpc":"2.0","id":5,"method":"thread.list"}`) // answered in order after them
	want := []struct {
		id   string
		code int
	}{{"2", CodeInvalidRequest}, {"3", CodeInvalidRequest}, {"4", CodeInvalidRequest}, {"5", 0}}
	for _, w := range want {
		m := c.next("an answer", func(m msg) bool { return m.Method == "" })
		code := 0
		if m.Error != nil {
			code = m.Error.Code
		}
		if string(m.ID) != w.id || code != w.code {
			t.Fatalf("answer %s, want id %s code %d (the \"ID\" notification must not be answered)", m.raw, w.id, w.code)
		}
	}
}
