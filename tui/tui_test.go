package tui

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the golden frames in testdata/")

var ansi = regexp.MustCompile(`\x1b\[[0-9;:]*m`)

func plain(s string) string { return ansi.ReplaceAllString(s, "") }

// sgr reports whether s renders text with the SGR attribute code (1 bold,
// 3 italic, 2 faint, 4 underline) or a background colour ("48").
func sgr(s, text, code string) bool {
	i := strings.Index(s, text)
	if i < 0 {
		return false
	}
	before := s[:i]
	j := strings.LastIndex(before, "\x1b[")
	if j < 0 {
		return false
	}
	params := strings.Split(strings.TrimSuffix(before[j+2:], "m"), ";")
	for k, p := range params {
		if p == code || (code == "48" && p == "48" && k+1 < len(params)) {
			return true
		}
	}
	return false
}

func TestMarkdownTable(t *testing.T) {
	th := DefaultTheme
	one := func(md string) string { return strings.Join(RenderMarkdown(md, th), "\n") }
	cases := []struct {
		name, md, text string
		check          func(out string) bool
	}{
		{"bold", "a **strong** b", "a strong b", func(o string) bool { return sgr(o, "strong", "1") }},
		{"italic is dim italic", "a *soft* b", "a soft b", func(o string) bool { return sgr(o, "soft", "3") && sgr(o, "soft", "2") }},
		{"inline code", "run `go test` now", "run go test now", func(o string) bool { return sgr(o, "go test", "48") }},
		{"fenced block", "```go\nfmt.Println(1)\n```", "fmt.Println(1)", func(o string) bool { return strings.Contains(o, "48;2;61;58;40") }},
		{"dash item", "- first", "• first", nil},
		{"star item", "* second", "• second", nil},
		{"numbered", "1. one\n2. two", "1. one\n2. two", nil},
		{"link", "see [the docs](https://x.example/y) here", "see the docs here", func(o string) bool { return strings.Contains(o, "\x1b[4;4mt") }},
		{"heading", "# Title", "Title", func(o string) bool { return sgr(o, "Title", "1") }},
		{"nested bold italic", "**bold *italic***", "bold italic", func(o string) bool { return sgr(o, "bold", "1") && sgr(o, "italic", "1") && sgr(o, "italic", "3") }},
		{"unknown passes through", "> quote | table |", "> quote | table |", nil},
		{"unmatched marker is text", "a * b ** c", "a * b ** c", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := one(c.md)
			if got := plain(out); got != c.text {
				t.Fatalf("text %q, want %q", got, c.text)
			}
			if c.check != nil && !c.check(out) {
				t.Fatalf("styles wrong: %q", out)
			}
		})
	}
}

func TestHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "prompt_history")
	h := LoadHistory(path)
	if _, ok := h.Prev("draft"); ok {
		t.Fatal("an empty history moved")
	}
	for i := range 105 {
		h.Add("prompt " + strconv.Itoa(i))
	}
	h.Add("multi\nline \\ prompt")
	h2 := LoadHistory(path) // survives a restart
	e := h2.Entries()
	if len(e) != HistoryMax || e[0] != "prompt 6" || e[len(e)-1] != "multi\nline \\ prompt" {
		t.Fatalf("%d entries, first %q last %q", len(e), e[0], e[len(e)-1])
	}
	p, _ := h2.Prev("my draft")
	if p != "multi\nline \\ prompt" {
		t.Fatalf("Prev %q", p)
	}
	for range 200 {
		p, _ = h2.Prev("")
	}
	if p != "prompt 6" {
		t.Fatalf("the oldest is %q", p)
	}
	for range 200 {
		p, _ = h2.Next()
	}
	if p != "my draft" {
		t.Fatalf("past the newest: %q, want the draft back", p)
	}
}

func TestTruncateAndStatus(t *testing.T) {
	var lines []string
	for i := range 150 {
		lines = append(lines, "l"+strconv.Itoa(i))
	}
	out := Truncate(strings.Join(lines, "\n"), 100)
	if strings.Count(out, "\n") != 100 || !strings.HasSuffix(out, "... (50 more lines)") || Truncate("a\nb", 100) != "a\nb" {
		t.Fatalf("truncate: %q", out[len(out)-40:])
	}
	for state, want := range map[string]string{"idle": "", "thinking": "Thinking...", "running_tool": "Running: grep...", "error": "Error: boom"} {
		msg := map[string]string{"running_tool": "grep", "error": "boom"}[state]
		if got := StatusLine(state, msg); got != want {
			t.Errorf("%s: %q", state, got)
		}
	}
	if got := StatusLine("thinking", "Retrying 3/10 in 4 s — API unreachable"); got != "Thinking... Retrying 3/10 in 4 s — API unreachable" {
		t.Errorf("retry: %q", got)
	}
	m := NewModel(DefaultTheme, Actions{}, LoadHistory(""))
	for _, st := range []string{"thinking", "running_tool", "thinking", "idle", "error"} {
		m.Update(EventMsg{Type: "status", Timestamp: 1, State: st, Message: "x"})
		if m.status != st || m.busy() != (st == "thinking" || st == "running_tool") {
			t.Fatalf("after %s: status %s busy %v", st, m.status, m.busy())
		}
	}
}

func TestDecodeEvent(t *testing.T) {
	good := []string{
		`{"type":"user","timestamp":1,"content":"hi"}`,
		`{"type":"text","timestamp":1,"content":"a"}`,
		`{"type":"reasoning","timestamp":1,"content":"r"}`,
		`{"type":"tool_call","timestamp":1,"id":"t","name":"grep","input":{"pattern":"x"}}`,
		`{"type":"tool_result","timestamp":1,"id":"t","result":"","isError":false}`,
		`{"type":"status","timestamp":1,"state":"running_tool","message":"grep"}`,
	}
	for _, g := range good {
		if _, err := DecodeEvent([]byte(g)); err != nil {
			t.Errorf("%s: %v", g, err)
		}
	}
	for _, b := range []string{`{`, `{"type":"text","content":"a"}`, `{"type":"nope","timestamp":1}`,
		`{"type":"tool_call","timestamp":1,"name":"x"}`, `{"type":"tool_result","timestamp":1,"id":"t"}`,
		`{"type":"status","timestamp":1,"state":"dancing"}`, `{"type":"text","timestamp":"x"}`} {
		if _, err := DecodeEvent([]byte(b)); err == nil {
			t.Errorf("%s decoded", b)
		}
	}
}

func TestKeys(t *testing.T) {
	var sent, cancelled []string
	m := NewModel(DefaultTheme, Actions{
		Prompt: func(s string) tea.Cmd { sent = append(sent, s); return nil },
		Cancel: func() tea.Cmd { cancelled = append(cancelled, "x"); return nil },
	}, LoadHistory(""))
	typeText := func(s string) {
		for _, r := range s {
			m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
		}
	}
	press := func(code rune, mod tea.KeyMod) tea.Cmd {
		_, cmd := m.Update(tea.KeyPressMsg{Code: code, Mod: mod})
		return cmd
	}
	typeText("what? ")
	press('j', tea.ModCtrl) // newline
	typeText("line two")
	if string(m.input) != "what? \nline two" || m.help {
		t.Fatalf("input %q help %v: ? inside a message is text", string(m.input), m.help)
	}
	press(tea.KeyEnter, 0)
	if len(sent) != 1 || sent[0] != "what? \nline two" || len(m.input) != 0 {
		t.Fatalf("sent %q", sent)
	}
	press(tea.KeyUp, 0)
	if string(m.input) != "what? \nline two" {
		t.Fatalf("Up recalled %q", string(m.input))
	}
	press('u', tea.ModCtrl)
	if len(m.input) != 0 {
		t.Fatal("Ctrl+U did not clear")
	}
	typeText("?")
	if !m.help {
		t.Fatal("? on an empty input opens help")
	}
	press(tea.KeyEscape, 0)
	press(tea.KeyF1, 0)
	if !m.help {
		t.Fatal("F1 opens help")
	}
	press(tea.KeyEscape, 0)
	m.Update(EventMsg{Type: "status", Timestamp: 1, State: "thinking"})
	if cmd := press('c', tea.ModCtrl); cmd != nil || len(cancelled) != 1 {
		t.Fatal("Ctrl+C while running should cancel, not quit")
	}
	m.Update(EventMsg{Type: "status", Timestamp: 1, State: "idle"})
	if cmd := press('c', tea.ModCtrl); cmd == nil {
		t.Fatal("Ctrl+C when idle quits")
	}
	// Bindings have no duplicates.
	seen := map[string]bool{}
	for _, b := range Bindings {
		if b[0] == "" {
			continue // a description's second line
		}
		if seen[b[0]] {
			t.Fatalf("%s bound twice", b[0])
		}
		seen[b[0]] = true
	}
}

// An approval request is a card: a allows, d denies, w always allows
// (with the input empty; otherwise the letter is typed); the outcome
// replaces the keys.
func TestApprovalCard(t *testing.T) {
	var answers []string
	m := scripted(70, 30, Event{Type: "user", Content: "make a file"}, Event{Type: "status", State: "thinking"})
	m.act.Approve = func(id, d string) tea.Cmd { answers = append(answers, id+"="+d); return nil }
	for i, key := range []rune{'a', 'd', 'w'} {
		id := "req" + strconv.Itoa(i)
		m.Update(EventMsg{Type: "approval", Timestamp: 1, RequestID: id, Tool: "Bash", Input: []byte(`{"command":"touch x"}`)})
		f := plain(m.Frame())
		for _, want := range []string{"? Allow Bash?", `"command": "touch x"`, "a allow · d deny · w always allow", "Waiting for your answer: Bash"} {
			if !strings.Contains(f, want) {
				t.Fatalf("the card lacks %q:\n%s", want, f)
			}
		}
		if i == 0 { // typing first: the letter is text
			m.Update(tea.KeyPressMsg{Code: 'x', Text: "x"})
			m.Update(tea.KeyPressMsg{Code: 'a', Text: "a"})
			if string(m.input) != "xa" || len(answers) != 0 {
				t.Fatalf("input %q answers %q", string(m.input), answers)
			}
			m.Update(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
		}
		m.Update(tea.KeyPressMsg{Code: key, Text: string(key)})
		want := id + "=" + map[rune]string{'a': "allow", 'd': "deny", 'w': "always"}[key]
		if len(answers) != i+1 || answers[i] != want {
			t.Fatalf("answers %q, want %s last", answers, want)
		}
		decision := "allow"
		if key == 'd' {
			decision = "deny"
		}
		m.Update(EventMsg{Type: "approval_resolved", Timestamp: 1, RequestID: id, Decision: decision, By: "user"})
		f = plain(m.Frame())
		if outcome := map[string]string{"allow": "✓ allowed (user)", "deny": "✗ denied (user)"}[decision]; !strings.Contains(f, outcome) {
			t.Fatalf("no outcome %q:\n%s", outcome, f)
		}
		if strings.Contains(f, "Waiting for your answer") {
			t.Fatalf("still waiting:\n%s", f)
		}
	}
	// No card open: a, d and w are text.
	m.Update(tea.KeyPressMsg{Code: 'a', Text: "a"})
	if len(answers) != 3 || string(m.input) != "a" {
		t.Fatalf("answers %q input %q", answers, string(m.input))
	}
}

// Ctrl+C mid-turn leaves an "Interrupted" mark once the turn has
// stopped; so does a turn the server reports interrupted.
func TestInterruptedMark(t *testing.T) {
	m := scripted(60, 20, Event{Type: "user", Content: "long"}, Event{Type: "status", State: "thinking"}, Event{Type: "text_delta", Content: "half an ans"})
	m.Update(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
	if strings.Contains(plain(m.Frame()), "Interrupted") {
		t.Fatal("marked before the turn stopped")
	}
	m.Update(EventMsg{Type: "text", Timestamp: 1, Content: "half an ans"})
	m.Update(EventMsg{Type: "status", Timestamp: 1, State: "idle", Message: "interrupted"})
	f := plain(m.Frame())
	if strings.Count(f, "Interrupted") != 1 || !strings.Contains(f, "half an ans") {
		t.Fatalf("want one Interrupted mark after the text:\n%s", f)
	}
	m.Update(EventMsg{Type: "user", Timestamp: 1, Content: "again"})
	m.Update(EventMsg{Type: "status", Timestamp: 1, State: "idle"})
	if f := plain(m.Frame()); strings.Count(f, "Interrupted") != 1 {
		t.Fatalf("a completed turn was marked:\n%s", f)
	}
}

// Deltas build a part; the block's whole text replaces it, so one block is
// one part however it streamed, and two blocks are two parts.
func TestDeltasThenBlocks(t *testing.T) {
	m := scripted(60, 20, Event{Type: "text_delta", Content: "Hel"}, Event{Type: "text_delta", Content: "lo"}, Event{Type: "text", Content: "Hello!"},
		Event{Type: "text", Content: "Second block"})
	if len(m.parts) != 2 || m.parts[0].text != "Hello!" || m.parts[1].text != "Second block" {
		var got []string
		for _, p := range m.parts {
			got = append(got, p.kind+":"+p.text)
		}
		t.Fatalf("parts %q", got)
	}
}

// A long error on the status line is wrapped, never cut at the width.
func TestStatusLineWraps(t *testing.T) {
	msg := `Get "http://127.0.0.1:1/events?deltas=1": dial tcp 127.0.0.1:1: connect: connection refused`
	m := scripted(40, 20)
	m.Update(ConnMsg("disconnected (" + msg + "), retrying in 10s"))
	f := m.Frame()
	if lines := strings.Split(f, "\n"); len(lines) != 20 {
		t.Fatalf("%d lines for 20 rows", len(lines))
	}
	var joined strings.Builder
	for _, l := range strings.Split(plain(f), "\n") {
		if w := lipgloss.Width(l); w > 40 {
			t.Fatalf("a line %d wide: %q", w, l)
		}
		joined.WriteString(strings.TrimSpace(l) + " ")
	}
	if !strings.Contains(strings.Join(strings.Fields(joined.String()), ""), strings.Join(strings.Fields("["+"disconnected ("+msg+"), retrying in 10s]"), "")) {
		t.Fatalf("the error is not whole on the screen:\n%s", plain(f))
	}
}

// scripted builds a model and feeds it events.
func scripted(w, h int, evs ...Event) *Model {
	m := NewModel(DefaultTheme, Actions{}, LoadHistory(""))
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	for _, e := range evs {
		e.Timestamp = 1
		m.Update(EventMsg(e))
	}
	return m
}

func strp(s string) *string { return &s }
func boolp(b bool) *bool    { return &b }

func golden(t *testing.T, name, frame string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(path, []byte(frame), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -update)", err)
	}
	if string(want) != frame {
		t.Errorf("frame %s differs from its golden file:\n%s", name, plain(frame))
	}
}

func TestGoldenFrames(t *testing.T) {
	var long []string
	for i := range 150 {
		long = append(long, "result line "+strconv.Itoa(i))
	}
	answer := []Event{{Type: "user", Content: "What is here?"}, {Type: "status", State: "thinking"},
		{Type: "reasoning_delta", Content: "Let me "}, {Type: "reasoning_delta", Content: "look."}, {Type: "reasoning", Content: "Let me look."},
		{Type: "text_delta", Content: "## Files\n\n- **main.go**: the "}, {Type: "text", Content: "## Files\n\n- **main.go**: the entry point\n- `go.mod`"}}
	frames := map[string]*Model{
		"empty":  scripted(80, 20),
		"answer": scripted(80, 24, answer...),
		"tool": scripted(80, 40, Event{Type: "user", Content: "grep it"},
			Event{Type: "tool_call", ID: "t1", Name: "grep", Input: []byte(`{"pattern":"x","path":"."}`)},
			Event{Type: "tool_result", ID: "t1", Result: strp(strings.Join(long, "\n")), IsError: boolp(false)}),
		"error":  scripted(80, 16, Event{Type: "user", Content: "fail"}, Event{Type: "status", State: "error", Message: "API error 529: overloaded"}),
		"narrow": scripted(30, 24, answer...),
		"approval": scripted(80, 24, Event{Type: "user", Content: "make a marker"},
			Event{Type: "tool_call", ID: "t1", Name: "Bash", Input: []byte(`{"command":"touch marker.txt"}`)},
			Event{Type: "status", State: "running_tool", Message: "Bash"},
			Event{Type: "approval", RequestID: "apr_1", ToolUseID: "t1", Tool: "Bash", Input: []byte(`{"command":"touch marker.txt"}`)}),
		"interrupted": scripted(80, 16, Event{Type: "user", Content: "a long one"}, Event{Type: "status", State: "thinking"},
			Event{Type: "text_delta", Content: "It streams slowly and"}, Event{Type: "text", Content: "It streams slowly and"},
			Event{Type: "status", State: "idle", Message: "interrupted"}),
	}
	help := scripted(80, 24)
	help.help = true
	frames["help"] = help
	for name, m := range frames {
		t.Run(name, func(t *testing.T) {
			frame := m.Frame()
			if lines := strings.Split(frame, "\n"); len(lines) > m.height {
				t.Fatalf("%d lines for a %d-line terminal", len(lines), m.height)
			}
			for _, l := range strings.Split(frame, "\n") {
				if w := lipgloss.Width(l); w > m.width {
					t.Fatalf("a line %d wide in %d columns: %q", w, m.width, plain(l))
				}
			}
			golden(t, name, frame)
		})
	}
	if !strings.Contains(plain(frames["tool"].Frame()), "... (50 more lines)") {
		t.Error("the 150-line result is not truncated at 100")
	}
	if !strings.Contains(plain(frames["error"].Frame()), "Error: API error 529") {
		t.Error("no error status")
	}
}

func TestAutoScroll(t *testing.T) {
	m := scripted(60, 12)
	for i := range 40 {
		m.Update(EventMsg{Type: "user", Timestamp: 1, Content: "message " + strconv.Itoa(i)})
	}
	if !strings.Contains(plain(m.Frame()), "message 39") {
		t.Fatal("not at the bottom")
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyPgUp})
	m.Update(EventMsg{Type: "user", Timestamp: 1, Content: "message 40"})
	f := plain(m.Frame())
	if strings.Contains(f, "message 40") || !strings.Contains(f, "↓ New content") {
		t.Fatalf("scrolled up: new content must not move the view, and the hint shows:\n%s", f)
	}
	for range 10 {
		m.Update(tea.KeyPressMsg{Code: tea.KeyPgDown})
	}
	if f := plain(m.Frame()); !strings.Contains(f, "message 40") || strings.Contains(f, "New content") {
		t.Fatalf("back at the bottom:\n%s", f)
	}
}

// BenchmarkStream10k: Update+View per delta while 10,000 deltas stream
// into a long conversation (frame time p99, goal < 16 ms).
func BenchmarkStream10k(b *testing.B) {
	for range b.N {
		m := scripted(100, 40)
		for i := range 200 { // a long conversation before
			m.Update(EventMsg{Type: "user", Timestamp: 1, Content: "earlier question " + strconv.Itoa(i)})
			m.Update(EventMsg{Type: "text", Timestamp: 1, Content: "an **earlier** answer with `code` " + strconv.Itoa(i)})
		}
		lat := make([]time.Duration, 0, 10_000)
		for i := range 10_000 {
			t0 := time.Now()
			m.Update(EventMsg{Type: "text_delta", Timestamp: 1, Content: "tok" + strconv.Itoa(i%10) + " "})
			_ = m.View()
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// The event stream reconnects with back-off after the server drops it,
// says so on the status line, and skips (and logs) invalid events.
func TestStreamReconnects(t *testing.T) {
	var mu sync.Mutex
	conns := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns++
		n := conns
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if r.URL.Query().Get("deltas") != "1" {
			t.Errorf("the TUI asked for %s, without deltas=1", r.URL)
		}
		if n == 1 {
			if id := r.Header.Get("Last-Event-ID"); id != "" {
				t.Errorf("first connection with Last-Event-ID %q", id)
			}
			fmt.Fprint(w, "id: 1\ndata: {\"type\":\"bogus\",\"timestamp\":1}\n\nid: 2.1\ndata: {\"type\":\"user\",\"timestamp\":1,\"content\":\"first\"}\n\n")
			return // the connection drops
		}
		if id := r.Header.Get("Last-Event-ID"); id != "2.1" {
			t.Errorf("reconnected with Last-Event-ID %q, want 2.1", id)
		}
		fmt.Fprint(w, "id: 2\ndata: {\"type\":\"user\",\"timestamp\":1,\"content\":\"second\"}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	var logBuf strings.Builder
	var lmu sync.Mutex
	msgs := make(chan tea.Msg, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &client{url: srv.URL, http: srv.Client()}
	done := make(chan struct{})
	go func() {
		c.stream(ctx, func(m tea.Msg) { msgs <- m }, log.New(lockedWriter{&lmu, &logBuf}, "", 0))
		close(done)
	}()
	var got []string
	deadline := time.After(10 * time.Second)
	for len(got) < 5 {
		select {
		case m := <-msgs:
			switch m := m.(type) {
			case EventMsg:
				got = append(got, "event:"+m.Content)
			case ConnMsg:
				got = append(got, "conn:"+string(m))
			}
		case <-deadline:
			t.Fatalf("got %q", got)
		}
	}
	cancel()
	<-done
	want := []string{"conn:", "event:first", "conn:disconnected (the event stream ended), retrying in 500ms", "conn:", "event:second"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	lmu.Lock()
	defer lmu.Unlock()
	if !strings.Contains(logBuf.String(), `type "bogus"`) {
		t.Fatalf("the invalid event was not logged: %q", logBuf.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// FuzzDecodeEvent: no input panics the decoder, and what it accepts is a
// known type with the fields that type needs.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"text","timestamp":1,"content":"a"}`,
		`{"type":"tool_result","timestamp":1,"id":"t","result":"r","isError":true}`,
		`{"type":"status","timestamp":1,"state":"error","message":"m"}`, `{`, `null`, `{"type":"tool_call","timestamp":1}`,
		`{"type":"session","timestamp":1,"sessionId":"s","from":"f"}`, `{"type":"session","timestamp":1}`,
		`{"type":"rewound","timestamp":1,"toTurn":3,"files":["a"],"conversation":false}`, `{"type":"rewound","timestamp":1,"files":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := DecodeEvent(data)
		if err != nil {
			return
		}
		switch ev.Type {
		case "user", "text", "reasoning", "status", "text_delta", "reasoning_delta", "approval", "approval_resolved":
		case "session":
			if ev.SessionID == "" {
				t.Fatalf("accepted %s", data)
			}
		case "rewound":
			if ev.Conversation == nil {
				t.Fatalf("accepted %s", data)
			}
		case "tool_call":
			if ev.ID == "" || ev.Name == "" {
				t.Fatalf("accepted %s", data)
			}
		case "tool_result":
			if ev.Result == nil || ev.IsError == nil {
				t.Fatalf("accepted %s", data)
			}
		default:
			t.Fatalf("accepted type %q", ev.Type)
		}
		m := scripted(40, 10)
		m.Update(EventMsg(ev))
		_ = m.Frame()
	})
}

// An approval of a use that would run outside the agent's sandbox says
// so on its card and in the status line, and offers no "always": w is
// not an answer there (the core would allow it once, remembering
// nothing); a and d answer as on any card.
func TestApprovalCardUnsandboxed(t *testing.T) {
	var answers []string
	m := scripted(100, 30, Event{Type: "user", Content: "push it"}, Event{Type: "status", State: "thinking"})
	m.act.Approve = func(id, d string) tea.Cmd { answers = append(answers, id+"="+d); return nil }
	m.Update(EventMsg{Type: "approval", Timestamp: 1, RequestID: "req1", Tool: "Bash", Input: []byte(`{"command":"git push"}`), Unsandboxed: true})
	f := plain(m.Frame())
	for _, want := range []string{"? Allow Bash?", "OUTSIDE its sandbox once allowed", "a allow once · d deny", "Waiting for your answer: Bash, maybe OUTSIDE its sandbox"} {
		if !strings.Contains(f, want) {
			t.Fatalf("the card lacks %q:\n%s", want, f)
		}
	}
	if strings.Contains(f, "always") {
		t.Fatalf("the card offers always:\n%s", f)
	}
	m.Update(tea.KeyPressMsg{Code: 'w', Text: "w"})
	if len(answers) != 0 {
		t.Fatalf("w answered %q", answers)
	}
	m.Update(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
	m.Update(tea.KeyPressMsg{Code: 'a', Text: "a"})
	if len(answers) != 1 || answers[0] != "req1=allow" {
		t.Fatalf("answers %q, want req1=allow", answers)
	}
	// A sandboxed card after it has no warning and offers always.
	m.Update(EventMsg{Type: "approval_resolved", Timestamp: 1, RequestID: "req1", Decision: "allow", By: "user"})
	m.Update(EventMsg{Type: "approval", Timestamp: 1, RequestID: "req2", Tool: "Bash", Input: []byte(`{"command":"ls"}`)})
	f = plain(m.Frame())
	if !strings.Contains(f, "a allow · d deny · w always allow") || strings.Count(f, "OUTSIDE its sandbox") != 1 {
		t.Fatalf("the sandboxed card:\n%s", f)
	}
}
