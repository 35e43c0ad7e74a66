package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
)

// The TypeScript SDK's client (@modelcontextprotocol/sdk, pinned in
// package.json: software nobody here wrote) against the real binary's
// `harness mcp --demo` on stdio: it lists the six tools, creates a
// session on the native engine, runs a turn (with progress
// notifications), reads the transcript, answers an approval the Claude
// Code engine asks through elicitation (the tool then runs), and gets a
// tool error for a bad session id.
func TestMCPTypeScriptSDKClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is needed (the pinned agents need it too):", err)
	}
	if _, err := os.Stat("../../node_modules/@modelcontextprotocol/sdk/package.json"); err != nil {
		t.Fatal("@modelcontextprotocol/sdk is not installed: run npm install (it is pinned in package.json):", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "harness")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "../../mcpserver/testdata/ts_client.mjs", bin, root, t.TempDir())
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir(), "HARNESS_CLAUDE_BIN="+claudetest.FindCLI(t))
	var stderr lockedBuilder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	var got struct {
		Server struct{ Name string }
		Tools  []string
		Turn   struct {
			Status, Final string
			Tools         []string
		}
		Progress   int
		Transcript []struct{ Role, Text string }
		Approval   struct {
			Elicited []string
			Tools    []struct {
				Name    string
				IsError bool
			}
			Status string
		}
		BadCall struct {
			IsError bool
			Text    string
		}
		Sessions int
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Server.Name != "harness" || strings.Join(got.Tools, ",") != "create_session,get_transcript,get_usage,interrupt,list_engines,list_sessions,run_turn" {
		t.Errorf("server %+v tools %v", got.Server, got.Tools)
	}
	if got.Turn.Status != "completed" || got.Turn.Final == "" || len(got.Turn.Tools) == 0 || got.Progress == 0 {
		t.Errorf("turn %+v, %d progress notifications", got.Turn, got.Progress)
	}
	if len(got.Transcript) < 3 || got.Transcript[0].Role != "user" || got.Transcript[0].Text != "hello from TypeScript" ||
		!slices.ContainsFunc(got.Transcript, func(e struct{ Role, Text string }) bool { return e.Role == "assistant" }) {
		t.Errorf("transcript %+v", got.Transcript)
	}
	if len(got.Approval.Elicited) != 1 || !strings.Contains(got.Approval.Elicited[0], "touch demo-marker.txt") ||
		len(got.Approval.Tools) != 1 || got.Approval.Tools[0].IsError {
		t.Errorf("approval %+v", got.Approval)
	}
	if _, err := os.Stat(filepath.Join(root, "demo-marker.txt")); err != nil {
		t.Errorf("the tool the client allowed did not run: %v", err)
	}
	if !got.BadCall.IsError || !strings.Contains(got.BadCall.Text, "invalid sessionId") || got.Sessions != 2 {
		t.Errorf("bad call %+v, %d sessions", got.BadCall, got.Sessions)
	}
}
