package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildFakeACP builds acptest's fake agent command.
func buildFakeACP(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fakeacp")
	out, err := exec.Command("go", "build", "-o", bin, "../../acp/acptest/cmd/fakeacp").CombinedOutput()
	if err != nil {
		t.Fatalf("go build fakeacp: %v\n%s", err, out)
	}
	return bin
}

// An engines file's ACP agent through the JSON-RPC door: `harness rpc
// --engines FILE`, a thread whose turn names the engine as the model's
// provider, answered by the agent (two turns: the second remembers).
func TestRPCWithAnEnginesFile(t *testing.T) {
	bin := buildFakeACP(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "engines.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf("engines:\n  - name: fakeacp\n    kind: acp\n    command: [%s]\n    env: [ACPTEST_STATE=%s]\n", bin, dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := rpcMain(inR, []string{"--cwd", project, "--engines", file, "--permission-mode", "dontAsk"}, outW, io.Discard)
		outW.Close()
		done <- code
	}()
	lines := make(chan map[string]any, 256)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
		close(lines)
	}()
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// wait reads until a message matches, returning the text deltas seen.
	wait := func(match func(m map[string]any) bool) (string, map[string]any) {
		t.Helper()
		var text strings.Builder
		deadline := time.After(60 * time.Second)
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatal("harness rpc ended")
				}
				if m["method"] == "item.delta" {
					p, _ := m["params"].(map[string]any)
					if d, ok := p["delta"].(string); ok {
						text.WriteString(d)
					}
				}
				if match(m) {
					return text.String(), m
				}
			case <-deadline:
				t.Fatal("timed out")
			}
		}
	}
	isResponse := func(id float64) func(map[string]any) bool {
		return func(m map[string]any) bool { return m["id"] == id }
	}
	turnEnded := func(m map[string]any) bool {
		return m["method"] == "turn.completed" || m["method"] == "turn.failed"
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"test"}}}`)
	wait(isResponse(1))
	send(`{"jsonrpc":"2.0","id":2,"method":"thread.create","params":{"title":"acp"}}`)
	_, r := wait(isResponse(2))
	res, _ := r["result"].(map[string]any)
	th, _ := res["thread"].(map[string]any)
	tid, _ := th["threadId"].(string)
	if tid == "" {
		t.Fatalf("thread.create: %v", r)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"turn.start","params":{"threadId":"` + tid + `","input":[{"type":"text","text":"hello there"}],"model":{"providerID":"fakeacp","modelID":""}}}`)
	text, end := wait(turnEnded)
	// The fake echoes the prompt's blocks: the persona's preamble, then the message.
	if end["method"] != "turn.completed" || !strings.Contains(text, "echo: Instructions for this whole session") || !strings.HasSuffix(text, "| hello there") {
		t.Fatalf("first turn: %v %q", end, text)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"turn.start","params":{"threadId":"` + tid + `","input":[{"type":"text","text":"recall"}]}}`)
	text, end = wait(turnEnded)
	if end["method"] != "turn.completed" || !strings.HasPrefix(text, "you said: Instructions") || !strings.HasSuffix(text, "hello there") {
		t.Fatalf("second turn: %v %q", end, text)
	}
	inW.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("harness rpc exited %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("harness rpc did not end at the end of its input")
	}
	for range lines {
	}
}
