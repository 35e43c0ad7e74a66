package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chirality/harness"
)

// mcpClient runs `harness mcp ARGS…` in process on pipes and connects the
// go-sdk's client to it; closing the client's pipes ends the command,
// whose exit status the returned func gives.
func mcpClient(t *testing.T, args ...string) (*mcp.ClientSession, func() int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &lockedBuilder{}
	code := make(chan int, 1)
	go func() {
		c := &cli{stdin: inR, stdout: outW, stderr: stderr}
		code <- c.run(append([]string{"mcp"}, args...))
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "cmd-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	var status *int
	end := func() int {
		if status == nil {
			cs.Close()
			inW.Close()
			select {
			case c := <-code:
				status = &c
			case <-time.After(time.Minute):
				t.Fatalf("harness mcp did not end at the end of its input; stderr:\n%s", stderr)
			}
		}
		return *status
	}
	t.Cleanup(func() { end() })
	return cs, end
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return "error: " + b.String()
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatal(err)
		}
	}
	return ""
}

// `harness mcp --demo`: the tools are listed, a session on the native
// engine runs a turn on the demo model offline, the transcript has it;
// a root outside --root and an unknown session are tool errors; the end
// of the input ends the command with 0.
func TestMCPCommandDemo(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	root, _ := filepath.EvalSymlinks(t.TempDir())
	cs, end := mcpClient(t, "--demo", "--root", root, "--state-dir", t.TempDir())
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 6 {
		t.Fatalf("tools %v %v", err, tools)
	}
	var s struct{ SessionID, Engine string }
	if msg := callTool(t, cs, "create_session", map[string]any{"projectRoot": root, "engine": "native"}, &s); msg != "" {
		t.Fatal(msg)
	}
	var turn struct {
		Status, Final string
		ToolCalls     []struct{ Name string }
	}
	if msg := callTool(t, cs, "run_turn", map[string]any{"sessionId": s.SessionID, "message": "hello"}, &turn); msg != "" {
		t.Fatal(msg)
	}
	if turn.Status != "completed" || turn.Final == "" {
		t.Fatalf("turn %+v", turn)
	}
	var tr struct{ Entries []struct{ Role, Text string } }
	callTool(t, cs, "get_transcript", map[string]any{"sessionId": s.SessionID}, &tr)
	if len(tr.Entries) < 2 || tr.Entries[0].Role != "user" || tr.Entries[0].Text != "hello" {
		t.Fatalf("transcript %+v", tr)
	}
	if msg := callTool(t, cs, "create_session", map[string]any{"projectRoot": t.TempDir()}, nil); !strings.Contains(msg, "outside the server's roots") {
		t.Errorf("a root outside --root: %q", msg)
	}
	if msg := callTool(t, cs, "run_turn", map[string]any{"sessionId": "0b6b2a3e-6a3f-4a53-9a5e-2c1f5f7d9e10", "message": "hi"}, nil); !strings.Contains(msg, "unknown session") {
		t.Errorf("an unknown session: %q", msg)
	}
	if code := end(); code != 0 {
		t.Errorf("exit %d at the end of input", code)
	}
}

// The demo's notices name the command that was run.
func TestDemoNoticeNamesTheCommand(t *testing.T) {
	for _, command := range []string{"harness serve", "harness agent serve", "harness mcp"} {
		var buf strings.Builder
		var cfg harness.Config
		undo, err := setUpDemo(&cfg, &buf, command)
		if err != nil {
			t.Fatal(err)
		}
		undo()
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			if !strings.HasPrefix(line, command+" --demo: ") {
				t.Errorf("%s: notice %q", command, line)
			}
		}
		if !strings.Contains(buf.String(), "scratch project root") || !strings.Contains(buf.String(), "demo model at") {
			t.Errorf("%s: notices %q", command, buf.String())
		}
	}
}

// Input that is not JSON-RPC ends `harness mcp` with exit 1 and the
// reason on stderr (issue 34.14): it exited 0 and silent, like a clean
// end of input. A clean end of input still exits 0.
func TestMCPCommandJunkInput(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	root := t.TempDir()
	for in, want := range map[string]int{"junk\n": 1, "[1]\n": 1, "": 0} {
		var out, errOut bytes.Buffer
		c := &cli{stdin: strings.NewReader(in), stdout: &out, stderr: &errOut}
		code := c.run([]string{"mcp", "--root", root})
		if code != want {
			t.Errorf("input %q: exit %d, want %d; stderr %q", in, code, want, errOut.String())
		}
		if want != 0 && !strings.Contains(errOut.String(), "harness mcp: input is not MCP") {
			t.Errorf("input %q: stderr does not say why: %q", in, errOut.String())
		}
		if want == 0 && errOut.Len() != 0 {
			t.Errorf("clean end of input: stderr %q", errOut.String())
		}
	}
	// the same with --demo (the reproduction: printf 'junk\n' |
	// harness mcp --demo), whose set-up and undo wrap the server
	var out, errOut bytes.Buffer
	c := &cli{stdin: strings.NewReader("junk\n"), stdout: &out, stderr: &errOut}
	if code := c.run([]string{"mcp", "--demo"}); code != 1 || !strings.Contains(errOut.String(), "harness mcp: input is not MCP") {
		t.Errorf("--demo, junk: exit %d, stderr %q", code, errOut.String())
	}
}
