package agentserver

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chirality/harness/claudecode/claudetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// stream is one SSE client of /events.
type stream struct {
	resp  *http.Response
	lines chan string
}

func openStream(t *testing.T, url, token string) *stream {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/events", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %v %v", resp, err)
	}
	s := &stream{resp: resp, lines: make(chan string, 4096)}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if l := sc.Text(); l != "" {
				s.lines <- l
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return s
}

// until reads events until one matches stop, returning them all.
func (s *stream) until(t *testing.T, stop func(Event) bool) []Event {
	t.Helper()
	var out []Event
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("stream ended after %d events", len(out))
			}
			if !strings.HasPrefix(l, "data: ") {
				continue
			}
			var ev Event
			if err := json.Unmarshal([]byte(l[6:]), &ev); err != nil || ev.Type == "" || ev.Timestamp == 0 {
				t.Fatalf("bad event %q: %v", l, err)
			}
			out = append(out, ev)
			if stop(ev) {
				return out
			}
		case <-timeout:
			t.Fatalf("timed out after %d events", len(out))
		}
	}
}

func post(t *testing.T, url, token, body string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func serve(t *testing.T, opts Options) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	opts.Addr = "127.0.0.1:0"
	go func() { done <- Run(ctx, opts, func(u string) { urls <- u }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case u := <-urls:
		return u
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	return ""
}

func isIdle(ev Event) bool { return ev.Type == "status" && (ev.State == "idle" || ev.State == "error") }

func TestDemoEndToEnd(t *testing.T) {
	cwd := t.TempDir()
	os.WriteFile(filepath.Join(cwd, "hello.go"), []byte("package hello\n"), 0o644)
	url := serve(t, Options{Demo: true, Cwd: cwd, Heartbeat: 50 * time.Millisecond, Token: "tok"})
	a, b := openStream(t, url, "tok"), openStream(t, url, "tok")

	if code := post(t, url+"/prompt", "", `{"content":"hi"}`); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	for _, body := range []string{``, `{`, `{"content":""}`, `{"content":"  "}`, `{"content":"x","extra":1}`, `{"content":"a"} {"content":"b"}`} {
		if code := post(t, url+"/prompt", "tok", body); code != 400 {
			t.Errorf("body %q: %d, want 400", body, code)
		}
	}
	if code := post(t, url+"/cancel", "tok", ""); code != 200 {
		t.Fatalf("cancel when idle: %d", code)
	}
	if code := post(t, url+"/prompt", "tok", `{"content":"what is here?"}`); code != 200 {
		t.Fatalf("prompt: %d", code)
	}
	evA := a.until(t, isIdle)
	evB := b.until(t, isIdle)
	typesOf := func(evs []Event) []string {
		var out []string
		for _, e := range evs {
			if len(out) == 0 || out[len(out)-1] != e.Type || e.Type == "status" || e.Type == "tool_call" || e.Type == "tool_result" {
				out = append(out, e.Type)
			}
		}
		return out
	}
	want := []string{"user", "status", "reasoning", "text", "tool_call", "status", "tool_result", "status", "text", "status"}
	if got := typesOf(evA); !slices.Equal(got, want) {
		t.Fatalf("events %v\nwant %v", got, want)
	}
	if len(evA) != len(evB) {
		t.Fatalf("client A got %d events, client B %d", len(evA), len(evB))
	}
	for i := range evA {
		if evA[i].Type != evB[i].Type || evA[i].Content != evB[i].Content {
			t.Fatalf("event %d differs between clients", i)
		}
	}
	for _, e := range evA {
		if e.Type == "tool_call" && e.Name != "list_dir" {
			t.Errorf("tool %s", e.Name)
		}
		if e.Type == "tool_result" && (e.Result == nil || !strings.Contains(*e.Result, "hello.go") || *e.IsError) {
			t.Errorf("tool result %+v", e)
		}
		if e.Type == "status" && e.State == "running_tool" && e.Message != "list_dir" {
			t.Errorf("running_tool %+v", e)
		}
	}
	// The heartbeat comes on its own.
	deadline := time.After(5 * time.Second)
	for beat := false; !beat; {
		select {
		case l := <-a.lines:
			beat = l == ": heartbeat"
		case <-deadline:
			t.Fatal("no heartbeat")
		}
	}

	// A long answer: a second prompt meanwhile is 409; cancel ends it idle.
	if code := post(t, url+"/prompt", "tok", `{"content":"tell me something long"}`); code != 200 {
		t.Fatalf("prompt: %d", code)
	}
	a.until(t, func(e Event) bool { return e.Type == "text" })
	if code := post(t, url+"/prompt", "tok", `{"content":"again"}`); code != 409 {
		t.Fatalf("prompt while busy: %d, want 409", code)
	}
	if code := post(t, url+"/cancel", "tok", ""); code != 200 {
		t.Fatalf("cancel: %d", code)
	}
	end := a.until(t, isIdle)
	if last := end[len(end)-1]; last.State != "idle" {
		t.Fatalf("a cancelled prompt ends %+v, want idle", last)
	}
	// The conversation goes on after a cancel.
	if code := post(t, url+"/prompt", "tok", `{"content":"an error please"}`); code != 200 {
		t.Fatalf("prompt after cancel: %d", code)
	}
	end = a.until(t, isIdle)
	if last := end[len(end)-1]; last.State != "error" || !strings.Contains(last.Message, "400") {
		t.Fatalf("a failed prompt ends %+v, want status error", last)
	}
}

func TestRunRefusesAnOpenAddressWithoutToken(t *testing.T) {
	err := Run(context.Background(), Options{Addr: "0.0.0.0:0", Demo: true}, nil)
	if err == nil || !strings.Contains(err.Error(), "--token") {
		t.Fatalf("Run: %v", err)
	}
}

func TestHostAllowlist(t *testing.T) {
	api, _ := claudetest.NewFakeAPI()
	defer api.Close()
	url := serve(t, Options{Demo: true, Cwd: t.TempDir()})
	req, _ := http.NewRequest("POST", url+"/cancel", nil)
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("foreign Host: %v %v", resp, err)
	}
	resp.Body.Close()
}

// engine claude-code: the real CLI behind the same contract.
func TestClaudeCodeEngine(t *testing.T) {
	url := serve(t, Options{Demo: true, Engine: "claude-code", ClaudeBinary: claudetest.FindCLI(t), Cwd: t.TempDir()})
	s := openStream(t, url, "")
	if code := post(t, url+"/prompt", "", `{"content":"hello"}`); code != 200 {
		t.Fatalf("prompt: %d", code)
	}
	evs := s.until(t, isIdle)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Type)
	}
	j := strings.Join(kinds, ",")
	if !strings.HasPrefix(j, "user,status,reasoning") || !strings.Contains(j, "tool_call,status,tool_result") || evs[len(evs)-1].State != "idle" {
		t.Fatalf("events %s (last %+v)", j, evs[len(evs)-1])
	}
}
