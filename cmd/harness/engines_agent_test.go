package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An engines file's ACP agent through `harness agent serve --engines FILE
// --engine NAME`: a prompt's answer streams as text events, and the agent
// is gone when the server stops.
func TestAgentServeWithAnEnginesFile(t *testing.T) {
	bin := buildFakeACP(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "engines.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf("engines:\n  - name: fakeacp\n    command: [%s]\n", bin)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- agentServe(ctx, nil, []string{"--addr", "127.0.0.1:0", "--cwd", t.TempDir(), "--engines", file, "--engine", "fakeacp"}, &out, &out)
	}()
	url := ""
	deadline := time.Now().Add(30 * time.Second)
	for url == "" {
		if _, after, ok := strings.Cut(out.String(), "listening on "); ok {
			url = strings.TrimSpace(strings.SplitN(after, "\n", 2)[0])
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ready line: %s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Get(url + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if r, err := http.Post(url+"/prompt", "application/json", strings.NewReader(`{"content":"hi agent"}`)); err != nil || r.StatusCode != 200 {
		t.Fatalf("prompt: %v %v", r, err)
	} else {
		r.Body.Close()
	}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct{ Type, Content, State, Message string }
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		if ev.Type == "text" {
			text.WriteString(ev.Content)
		}
		if ev.Type == "status" && (ev.State == "idle" || ev.State == "error") {
			if ev.State == "error" {
				t.Fatalf("turn failed: %s", ev.Message)
			}
			break
		}
	}
	// On the core, the session's first message carries the persona's
	// system prompt before the prompt (an ACP agent has no system prompt
	// of its own); the fake agent echoes both.
	if !strings.HasPrefix(text.String(), "echo: ") || !strings.HasSuffix(text.String(), "hi agent") {
		t.Errorf("answer %q", text.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("agent serve exited %d: %s", code, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent serve did not stop")
	}
}
