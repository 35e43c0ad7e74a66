package codex_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chirality/harness/codex"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

func TestPolicyFor(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		approver bool
		want     codex.Policy
	}{
		{"", true, codex.Policy{ApprovalPolicy: "never", Sandbox: "workspace-write"}},
		{"dontAsk", true, codex.Policy{ApprovalPolicy: "never", Sandbox: "workspace-write"}},
		{"default", true, codex.Policy{ApprovalPolicy: "untrusted", Sandbox: "workspace-write"}},
		{"acceptEdits", true, codex.Policy{ApprovalPolicy: "untrusted", Sandbox: "workspace-write"}},
		{"default", false, codex.Policy{ApprovalPolicy: "never", Sandbox: "workspace-write"}},
		{"plan", true, codex.Policy{ApprovalPolicy: "untrusted", Sandbox: "read-only"}},
		{"plan", false, codex.Policy{ApprovalPolicy: "never", Sandbox: "read-only"}},
		{"bypassPermissions", true, codex.Policy{ApprovalPolicy: "never", Sandbox: "danger-full-access"}},
	} {
		if got := codex.PolicyFor(tc.mode, tc.approver); got != tc.want {
			t.Errorf("PolicyFor(%q, %v) = %+v, want %+v", tc.mode, tc.approver, got, tc.want)
		}
	}
}

func TestChildEnv(t *testing.T) {
	base := []string{"PATH=/bin", "CODEX_HOME=/h", "OPENAI_API_KEY=o", "CODEX_API_KEY=c", "ANTHROPIC_API_KEY=a", "GITHUB_TOKEN=g", "MY_SECRET=s", "HOME=/home"}
	got := codex.ChildEnv(base, []string{"EXTRA=1", "DB_PASSWORD=p"}, []string{"MY_SECRET"})
	want := []string{"PATH=/bin", "CODEX_HOME=/h", "OPENAI_API_KEY=o", "CODEX_API_KEY=c", "MY_SECRET=s", "HOME=/home", "EXTRA=1"}
	if !slices.Equal(got, want) {
		t.Errorf("ChildEnv = %q, want %q", got, want)
	}
}

func TestLineReader(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     []string
		err      error
	}{
		{"lines", "a\nbb\r\n\nccc", 10, []string{"a", "bb", "", "ccc"}, io.EOF},
		{"exact bound", "abcd\n", 4, []string{"abcd"}, io.EOF},
		{"too long", "abcde\nx\n", 4, nil, codex.ErrLineTooLong},
		{"too long no newline", "abcdefgh", 4, nil, codex.ErrLineTooLong},
		{"long over buffer", strings.Repeat("x", 200000) + "\ny\n", 300000, []string{strings.Repeat("x", 200000), "y"}, io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lr := codex.NewLineReader(strings.NewReader(tc.in), tc.max)
			var got []string
			var err error
			for {
				var l []byte
				l, err = lr.Line()
				if err != nil {
					break
				}
				got = append(got, string(l))
			}
			if !slices.Equal(got, tc.want) || !errors.Is(err, tc.err) {
				t.Errorf("got %d lines %v, err %v; want %d, %v", len(got), len(got) > 0, err, len(tc.want), tc.err)
			}
		})
	}
}

func TestDecodeMessage(t *testing.T) {
	for _, tc := range []struct {
		in      string
		ok, req bool
	}{
		{`{"id":1,"result":{}}`, true, false},
		{`{"id":"a","error":{"code":1,"message":"x"}}`, true, false},
		{`{"method":"turn/started","params":{}}`, true, false},
		{`{"id":0,"method":"item/commandExecution/requestApproval","params":{}}`, true, true},
		{`{"jsonrpc":"2.0","id":2,"result":null}`, true, false}, // a null result is a result
		{`{"id":1}`, false, false},
		{`{}`, false, false},
		{`[]`, false, false},
		{`{"id":{},"method":"x"}`, false, false},
		{`not json`, false, false},
	} {
		m, err := codex.DecodeMessage([]byte(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.in, err)
			continue
		}
		if err != nil && !errors.Is(err, codex.ErrBadMessage) {
			t.Errorf("%s: %v is not ErrBadMessage", tc.in, err)
		}
		if err == nil && m.IsRequest() != tc.req {
			t.Errorf("%s: IsRequest %v", tc.in, m.IsRequest())
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"id":1,"result":{}}`, `{"method":"item/agentMessage/delta","params":{"itemId":"m","delta":"hi"}}`, "a\nb\r\n", `{"id":"x","method":"m"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		lr := codex.NewLineReader(bytes.NewReader(b), 1<<10)
		for {
			l, err := lr.Line()
			if err != nil {
				break
			}
			if len(l) > 1<<10 || bytes.HasSuffix(l, []byte("\n")) {
				t.Fatalf("bad line %q", l)
			}
			m, err := codex.DecodeMessage(l)
			if err == nil && m.Method == "" && len(m.ID) == 0 {
				t.Fatalf("accepted %q", l)
			}
		}
	})
}

func TestEngineErrors(t *testing.T) {
	eng := codex.NewEngine(codex.Config{Binary: "/nonexistent/codex"})
	if eng.Name() != "codex" {
		t.Errorf("Name %q", eng.Name())
	}
	_, err := eng.StartTurn(context.Background(), engine.Request{SessionKey: "k", Message: "m"})
	if !errors.Is(err, engine.ErrUnavailable) || !errors.Is(err, engine.ErrBinaryNotFound) {
		t.Errorf("missing binary: %v", err)
	}
	st := eng.Check(context.Background())
	if st.Available || st.Kind != "codex" || !strings.Contains(st.Reason, "npm install @openai/codex@0.169.0") {
		t.Errorf("Check %+v", st)
	}

	ok := codex.NewEngine(codex.Config{Binary: codexBin(t)})
	st = ok.Check(context.Background())
	if !st.Available || st.Version != "0.169.0" {
		t.Errorf("Check %+v", st)
	}
	if err := ok.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := ok.StartTurn(context.Background(), engine.Request{SessionKey: "k", Message: "m"}); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("after Shutdown: %v", err)
	}
}

// TestChildDiesEarly: a "codex" that dies at once ends the stream with
// session:error kind start (its stderr's tail kept) and process:exit.
func TestChildDiesEarly(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'boom on stderr' >&2\necho 'not json on stdout'\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	eng := codex.NewEngine(codex.Config{Binary: bin})
	tr, err := eng.StartTurn(context.Background(), engine.Request{SessionKey: "k", Message: "m", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var evs []event.Event
	for tr.Next() {
		evs = append(evs, tr.Event())
	}
	if len(evs) != 2 || evs[0].Type != event.TypeSessionError || evs[1].Type != event.TypeProcessExit {
		t.Fatalf("events %+v", evs)
	}
	se := evs[0].Error
	if se.Kind != event.ErrorStart || !strings.Contains(se.StderrTail, "boom on stderr") || se.ExitCode == nil || *se.ExitCode != 3 || evs[1].Exit.Code != 3 {
		t.Errorf("session:error %+v exit %+v", se, evs[1].Exit)
	}
	var te *engine.TurnError
	if !errors.As(tr.Err(), &te) || te.Kind != event.ErrorStart {
		t.Errorf("Err %v", tr.Err())
	}
	if err := tr.Interrupt(); err != nil {
		t.Errorf("Interrupt after the end: %v", err)
	}
}
