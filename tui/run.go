// Package tui is `harness tui`: a conversation with an agent in the
// terminal, a client of `harness agent serve` (GET /events?deltas=1,
// POST /prompt, POST /cancel, POST /approval, and for the commands POST
// /session, /fork and /rewind, /queue, and /steer; package agentserver).
//
//	err := tui.Run(ctx, tui.Options{URL: "http://127.0.0.1:8788"})
//
// The screen is the conversation (user parts, markdown answers, tool parts
// with their results, reasoning, approval cards, an "Interrupted" mark),
// a status line and an input box. Answers stream by their deltas; each
// block's whole text then replaces what the deltas built. An approval
// request is a card answered with a (allow), d (deny) or w (always) — a
// use that would run outside the agent's sandbox says so on its card and
// has no w (the core would allow it once, remembering nothing); a
// plan (plan review) a card answered with a (approve), e (approve, accept
// edits) or feedback typed and Enter (keep planning). The
// commands /model, /agent, /mode, /fork and /rewind (ParseCommand) control
// the conversation, /sessions lists the project's sessions with each
// worktree session's branch, /steer TEXT puts a message into the running
// turn (where the session's engine can take one: the server's POST /steer;
// the turn then shows it as a user part; refused outside a turn); their
// results, and the server's session and rewound
// events, show as notes in it. Events
// are decoded strictly (DecodeEvent); an invalid one is written to the log
// file and skipped. The event stream reconnects by itself with back-off
// and Last-Event-ID, so nothing is lost or shown twice, and the status
// line says so. Model is the Bubble Tea model; Frame is the screen as
// text.
package tui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
)

// Options configure Run.
type Options struct {
	// URL of the agent server; Token its bearer token ("" = none).
	URL, Token string
	// HistoryFile ("" = ~/.harness/prompt_history) and LogFile ("" = no
	// log) are the prompt history and where invalid events are logged.
	HistoryFile, LogFile string
	// In and Out are the terminal (nil = stdin, stdout).
	In  io.Reader
	Out io.Writer
}

// DefaultHistoryFile is ~/.harness/prompt_history.
func DefaultHistoryFile() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".harness", "prompt_history")
}

// Run shows the TUI until the user quits or ctx ends.
func Run(ctx context.Context, opts Options) error {
	if opts.HistoryFile == "" {
		opts.HistoryFile = DefaultHistoryFile()
	}
	logger := log.New(io.Discard, "", log.LstdFlags)
	if opts.LogFile != "" {
		_ = os.MkdirAll(filepath.Dir(opts.LogFile), 0o700)
		f, err := os.OpenFile(opts.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		logger.SetOutput(f)
	}
	c := &client{url: strings.TrimRight(opts.URL, "/"), token: opts.Token, http: &http.Client{}}
	m := NewModel(DefaultTheme, Actions{Prompt: c.prompt, Cancel: c.cancel, Approve: c.approve, DecidePlan: c.decidePlan, Copy: copyOSC52,
		Switch: c.switchTo, Fork: c.fork, Rewind: c.rewind, Preview: c.preview, Trust: c.trust, Sessions: c.sessions,
		Queue: c.queuePrompt, QueueList: c.queueList, QueueEdit: c.queueEdit, QueueDelete: c.queueDelete,
		Steer: c.steer}, LoadHistory(opts.HistoryFile))
	popts := []tea.ProgramOption{tea.WithContext(ctx)}
	if opts.In != nil {
		popts = append(popts, tea.WithInput(opts.In))
	}
	if opts.Out != nil {
		popts = append(popts, tea.WithOutput(opts.Out))
	}
	p := tea.NewProgram(m, popts...)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go c.stream(sctx, p.Send, logger)
	_, err := p.Run()
	if err == tea.ErrProgramKilled && ctx.Err() != nil {
		return nil
	}
	return err
}

type client struct {
	url, token string
	http       *http.Client
}

func (c *client) req(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	r, err := http.NewRequestWithContext(ctx, method, c.url+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		r.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	return c.http.Do(r)
}

// post sends body and turns a refusal into an ErrMsg.
func (c *client) post(path, what string, body []byte) tea.Msg {
	if err := c.call(path, what, body, nil); err != nil {
		return ErrMsg{err}
	}
	return nil
}

// call POSTs body to path and decodes a 200 answer into v (nil: ignored);
// a refusal is an error saying what was refused and the server's why.
func (c *client) call(path, what string, body []byte, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	resp, err := c.req(ctx, "POST", path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != 200 {
		var e struct {
			Error string `json:"error"`
		}
		why := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			why = e.Error
		}
		return fmt.Errorf("%s refused (%d): %s", what, resp.StatusCode, why)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("%s: the server's answer: %w", what, err)
		}
	}
	return nil
}

// requestTimeout bounds a command's request (a rewind restores files).
const requestTimeout = 2 * time.Minute

// preview is what /rewind asks with: GET /rewind?turns=N.
func (c *client) preview(turns int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		resp, err := c.req(ctx, "GET", fmt.Sprintf("/rewind?turns=%d", turns), nil)
		if err != nil {
			return PreviewMsg{Turns: turns, Err: err}
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var p struct {
			Text  string `json:"text"`
			Files []struct {
				Path string `json:"path"`
				Op   string `json:"op"`
			} `json:"files"`
			FilesError string `json:"filesError"`
			Error      string `json:"error"`
		}
		if jerr := json.Unmarshal(b, &p); resp.StatusCode != 200 || jerr != nil {
			why := p.Error
			if why == "" {
				why = strings.TrimSpace(string(b))
			}
			return PreviewMsg{Turns: turns, Err: fmt.Errorf("/rewind refused (%d): %s", resp.StatusCode, why)}
		}
		out := PreviewMsg{Turns: turns, Text: p.Text, FilesError: p.FilesError}
		for _, f := range p.Files {
			out.Files = append(out.Files, f.Path+" ("+f.Op+")")
		}
		return out
	}
}

// switchTo is /model, /agent and /mode: POST /session.
func (c *client) switchTo(what, name string) tea.Cmd {
	return func() tea.Msg {
		b, _ := json.Marshal(map[string]string{what: name})
		label := map[string]string{"model": "model", "persona": "agent", "permissionMode": "permission mode"}[what]
		if err := c.call("/session", "/"+map[string]string{"model": "model", "persona": "agent", "permissionMode": "mode"}[what], b, nil); err != nil {
			return NoteMsg{Text: err.Error(), Err: true}
		}
		return NoteMsg{Text: "The next turns run with " + label + " " + name}
	}
}

// fork is /fork: POST /fork; the event stream says where the server
// moved (a session event).
func (c *client) fork() tea.Cmd {
	return func() tea.Msg {
		if err := c.call("/fork", "/fork", []byte("{}"), nil); err != nil {
			return NoteMsg{Text: err.Error(), Err: true}
		}
		return nil
	}
}

// trust is /trust: POST /trust with what a trust event showed.
func (c *client) trust(kind, name, path, hash string) tea.Cmd {
	return func() tea.Msg {
		b, _ := json.Marshal(map[string]string{"kind": kind, "name": name, "path": path, "hash": hash})
		if err := c.call("/trust", "/trust", b, nil); err != nil {
			return NoteMsg{Text: err.Error(), Err: true}
		}
		what := name
		if path != "" {
			what = path
		}
		return NoteMsg{Text: "Trusted " + kind + " " + what + ": it counts from the next turn"}
	}
}

// rewind is /rewind: POST /rewind; the event stream says what changed
// (a rewound event).
func (c *client) rewind(turns int, files, conversation bool) tea.Cmd {
	return func() tea.Msg {
		b, _ := json.Marshal(map[string]any{"turns": turns, "files": files, "conversation": conversation})
		if err := c.call("/rewind", "/rewind", b, nil); err != nil {
			return NoteMsg{Text: err.Error(), Err: true}
		}
		return nil
	}
}

func (c *client) approve(id, decision string) tea.Cmd {
	return func() tea.Msg {
		b, _ := json.Marshal(map[string]string{"requestId": id, "decision": decision})
		return c.post("/approval", "answer", b)
	}
}

func (c *client) decidePlan(decision, mode, feedback string) tea.Cmd {
	return func() tea.Msg {
		b, _ := json.Marshal(map[string]string{"decision": decision, "mode": mode, "feedback": feedback})
		return c.post("/plan", "decide the plan", b)
	}
}

func (c *client) prompt(text string) tea.Cmd {
	return func() tea.Msg {
		b, _ := json.Marshal(map[string]string{"content": text})
		return c.post("/prompt", "prompt", b)
	}
}

func (c *client) cancel() tea.Cmd {
	return func() tea.Msg {
		resp, err := c.req(context.Background(), "POST", "/cancel", nil)
		if err != nil {
			return ErrMsg{err}
		}
		resp.Body.Close()
		return nil
	}
}

// stream reads /events?deltas=1 until ctx ends, reconnecting with
// back-off (0.5 s doubling to 10 s) and Last-Event-ID set to the last
// event's id, so the server sends what was missed and nothing twice; the
// status line shows the state.
func (c *client) stream(ctx context.Context, send func(tea.Msg), logger *log.Logger) {
	backoff := 500 * time.Millisecond
	lastID := ""
	for ctx.Err() == nil {
		r, err := http.NewRequestWithContext(ctx, "GET", c.url+"/events?deltas=1&usage=1", nil)
		if err != nil {
			send(ConnMsg(err.Error()))
			return
		}
		if c.token != "" {
			r.Header.Set("Authorization", "Bearer "+c.token)
		}
		if lastID != "" {
			r.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := c.http.Do(r)
		why := ""
		switch {
		case err != nil:
			why = err.Error()
		case resp.StatusCode != 200:
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			why = fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
			resp.Body.Close()
		default:
			send(ConnMsg(""))
			backoff = 500 * time.Millisecond
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 64<<20)
			id := ""
			for sc.Scan() {
				line := sc.Text()
				if line == "" { // the end of an event
					if id != "" {
						lastID = id
					}
					id = ""
					continue
				}
				if v, ok := strings.CutPrefix(line, "id: "); ok {
					id = v
					continue
				}
				data, ok := strings.CutPrefix(line, "data: ")
				if !ok {
					continue
				}
				ev, derr := DecodeEvent([]byte(data))
				if derr != nil {
					logger.Printf("skipped: %v: %s", derr, data)
					continue
				}
				send(EventMsg(ev))
			}
			resp.Body.Close()
			why = "the event stream ended"
		}
		if ctx.Err() != nil {
			return
		}
		logger.Printf("event stream: %s", why)
		send(ConnMsg(fmt.Sprintf("disconnected (%s), retrying in %s", why, backoff)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// copyOSC52 puts text on the terminal's clipboard (OSC 52).
func copyOSC52(text string) tea.Cmd {
	return tea.Raw("\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte(text)) + "\a")
}
