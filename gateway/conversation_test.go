package gateway

import (
	"strings"
	"testing"

	"github.com/chirality/harness/internal/httpguard"
)

// Requests to the conversation routes that the gateway refuses itself,
// before the core sees them: every answer is a JSON error of the right
// status that the OpenAPI document lists (s.send validates each against
// it), none echoes a huge input, and no session is made.
func TestConversationRequestsRefused(t *testing.T) {
	s := newServer(t, nil)
	id := s.create("", "direct")
	sp := "/api/harness/session/" + id
	long := strings.Repeat("9", 100<<10)
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		// Seqs: negative, zero, absurd, not integers.
		{"POST", sp + "/fork", `{"atSeq":-1}`, 400},
		{"POST", sp + "/fork", `{"atSeq":1e400}`, 400},
		{"POST", sp + "/fork", `{"atSeq":1.5}`, 400},
		{"POST", sp + "/fork", `{"atSeq":"1"}`, 400},
		{"POST", sp + "/fork", `{"atSeq":99999999999999999999}`, 400},
		{"POST", sp + "/fork", `{"atSeq":` + long + `}`, 400},
		{"POST", sp + "/rewind", `{"toTurn":-5,"files":true}`, 400},
		{"POST", sp + "/rewind", `{"toTurn":0,"conversation":true}`, 400},
		{"POST", sp + "/rewind", `{"files":true}`, 400},
		{"POST", sp + "/rewind", `{"toTurn":3}`, 400}, // nothing to rewind
		{"POST", sp + "/rewind", `{"toTurn":3,"files":false,"conversation":false}`, 400},
		{"GET", sp + "/rewind?toTurn=-1", "", 400},
		{"GET", sp + "/rewind?toTurn=0", "", 400},
		{"GET", sp + "/rewind?toTurn=abc", "", 400},
		{"GET", sp + "/rewind?toTurn=1e3", "", 400},
		{"GET", sp + "/rewind?toTurn=99999999999999999999", "", 400},
		{"GET", sp + "/rewind?toTurn=" + long, "", 400},
		{"GET", sp + "/rewind", "", 400},
		// Unknown fields, wrong types, two values, not JSON, no body.
		{"POST", sp + "/rewind", `{"toTurn":3,"files":true,"force":true}`, 400},
		{"POST", sp + "/rewind", `{"toTurn":3,"files":"yes"}`, 400},
		{"POST", sp + "/fork", `{"atSeq":0,"engine":"codex"}`, 400},
		{"POST", sp + "/fork", `{}{}`, 400},
		{"PATCH", sp, `{"model":"m","allowedTools":["Bash"]}`, 400},
		{"PATCH", sp, `{"model":7}`, 400},
		{"PATCH", sp, `{"model":"m"}{"model":"n"}`, 400},
		{"PATCH", sp, `{}`, 400},
		{"PATCH", sp, `null`, 400},
		{"POST", sp + "/rewind", `[`, 400},
		{"POST", sp + "/rewind", "", 400},
		// Huge bodies: 413 before anything is read.
		{"POST", sp + "/fork", `{"atSeq":` + strings.Repeat("1", 2<<20) + `}`, 413},
		{"POST", sp + "/rewind", `{"toTurn":1,"files":true,"x":"` + strings.Repeat("x", 2<<20) + `"}`, 413},
		{"PATCH", sp, `{"title":"` + strings.Repeat("t", 2<<20) + `"}`, 413},
		// Paths that leave the session: not routed.
		{"POST", "/api/harness/session/../session/list/fork", `{}`, 404},
		{"GET", "/api/harness/session/" + id + "/turns/x", "", 404},
		{"DELETE", sp + "/rewind", "", 405},
	} {
		code, out := s.do(c.method, c.path, c.body)
		if code != c.want {
			t.Errorf("%s %.80s %.60s: %d, want %d (%.200s)", c.method, c.path, c.body, code, c.want, out)
		}
		if len(out) > httpguard.MaxMessage+64 {
			t.Errorf("%s %.40s: %d bytes back, the input echoed", c.method, c.path, len(out))
		}
	}
	if code, out := s.do("GET", "/api/harness/session/list", ""); code != 200 || strings.Count(out, `"id"`) != 1 {
		t.Fatalf("sessions after the refused requests: %d %s", code, out)
	}
}
