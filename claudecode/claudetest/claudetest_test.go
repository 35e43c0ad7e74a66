package claudetest_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
)

func TestFakeAPIStreamsScriptedReplies(t *testing.T) {
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	api.Script(claudetest.Reply{Blocks: []claudetest.Block{
		claudetest.Thinking("hmm"), claudetest.Text("héllo wörld"), claudetest.ToolUse("t1", "Bash", map[string]any{"command": "ls"}),
	}, ChunkSize: 4})
	body := `{"model":"m","stream":true,"max_tokens":100,"system":[{"type":"text","text":"sys A"}],"tools":[{"name":"Bash"}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"out"}]}]}]}`
	resp, err := http.Post(api.URL+"/v1/messages?beta=true", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var events []string
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, name)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"text_delta"`) {
			i := strings.Index(data, `"text":"`) + len(`"text":"`)
			text.WriteString(data[i : i+strings.Index(data[i:], `"`)])
		}
	}
	if events[0] != "message_start" || events[len(events)-1] != "message_stop" || events[len(events)-2] != "message_delta" {
		t.Errorf("events %v", events)
	}
	if text.String() != "héllo wörld" {
		t.Errorf("streamed text %q", text.String())
	}
	reqs := api.Requests()
	if len(reqs) != 1 || reqs[0].SystemText() != "sys A" || reqs[0].Tools[0] != "Bash" || reqs[0].LastUserText() != "hiout" || api.Pending() != 0 {
		t.Errorf("recorded request %+v", reqs[0])
	}
}

func TestFakeAPIErrorsAndDefault(t *testing.T) {
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	api.Script(claudetest.ErrorReply(400, "nope"))
	post := func() (*http.Response, string) {
		resp, err := http.Post(api.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","stream":true,"max_tokens":10,"messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, b := post()
	if resp.StatusCode != 400 || !strings.Contains(b, `"message":"nope"`) {
		t.Errorf("error reply: %d %s", resp.StatusCode, b)
	}
	resp, b = post()
	if resp.StatusCode != 200 || !strings.Contains(b, `"text":"OK"`) {
		t.Errorf("default reply: %d %s", resp.StatusCode, b)
	}
	if r, err := http.Post(api.URL+"/v1/messages", "application/json", strings.NewReader("{")); err != nil || r.StatusCode != 400 {
		t.Errorf("malformed request: %v %v", r, err)
	}
}

func TestReplayerAnswersControlAndInterrupts(t *testing.T) {
	transcript := strings.Repeat(`{"type":"stream_event","session_id":"abc","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}}`+"\n", 1000)
	stdinR, stdinW := io.Pipe()
	var out bytes.Buffer
	done := make(chan error, 1)
	r := &claudetest.Replayer{Transcript: strings.NewReader(transcript), LineDelay: time.Millisecond}
	go func() { done <- r.Run(stdinR, &out) }()
	io.WriteString(stdinW, `{"type":"user","message":{"role":"user","content":"go"}}`+"\n")
	io.WriteString(stdinW, `{"type":"control_request","request_id":"r1","request":{"subtype":"interrupt"}}`+"\n")
	stdinW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, `"request_id":"r1"`) || !strings.Contains(s, `"subtype":"error_during_execution"`) || !strings.Contains(s, "[Request interrupted by user]") {
		t.Errorf("replayer output lacks the control response or the interrupted ending:\n%.400s", s)
	}
	if n := strings.Count(s, "text_delta"); n >= 1000 {
		t.Errorf("interrupt did not stop playback (%d lines played)", n)
	}
}

func TestReplayerNeedsAPrompt(t *testing.T) {
	r := &claudetest.Replayer{Transcript: strings.NewReader("{}\n")}
	if err := r.Run(strings.NewReader(""), io.Discard); err == nil {
		t.Error("a replayer whose stdin closed before any user message should fail")
	}
}

// Issue 24.6: the fake keeps a bounded window of requests, so a
// long-lived demo does not grow with every conversation it answers.
func TestFakeAPIKeepsABoundedWindow(t *testing.T) {
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	post := func(text string) {
		t.Helper()
		body := `{"model":"m","max_tokens":100,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"` + text + `"}]}`
		resp, err := http.Post(api.URL+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	texts := func() []string {
		var out []string
		for _, r := range api.Requests() {
			out = append(out, r.LastUserText())
		}
		return out
	}
	api.SetRequestWindow(3, 0)
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		post(s)
	}
	if got := strings.Join(texts(), ","); got != "c,d,e" {
		t.Fatalf("window of 3 kept %s", got)
	}
	// By bytes: each body is ~100 bytes plus its text; 2,000 bytes (twice the bodies) keep
	// the last requests that fit, and a request bigger than the whole
	// window is still kept alone as the newest.
	api.SetRequestWindow(100, 2000)
	big := strings.Repeat("x", 2000)
	post(big)
	if got := texts(); len(got) != 1 || got[0] != big {
		t.Fatalf("after a big request the window is %d requests", len(got))
	}
	for _, s := range []string{strings.Repeat("f", 300), strings.Repeat("g", 300), strings.Repeat("h", 300)} {
		post(s)
	}
	if got := texts(); len(got) != 2 || got[0][0] != 'g' || got[1][0] != 'h' {
		t.Fatalf("a byte window of 2000 kept %d requests", len(got))
	}
}
