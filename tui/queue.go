package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// QueuedPrompt is one prompt of the session's queue (GET /queue).
type QueuedPrompt struct {
	PromptID string `json:"promptId"`
	Message  string `json:"message"`
}

// QueueMsg is the session's queue as the server listed it after a
// queue action; Listed when a person asked for the list (/queue), which
// then says so when nothing is queued.
type QueueMsg struct {
	Prompts []QueuedPrompt
	Listed  bool
}

// maxQueueLines is how many queued prompts the screen lists.
const maxQueueLines = 3

// queueLines are the lines above the input box that list the queue
// (none when it is empty).
func (m *Model) queueLines() []string {
	if len(m.queue) == 0 {
		return nil
	}
	st := m.th.style(m.th.Status)
	w := max(10, m.width)
	clip := func(s string) string {
		s = strings.Join(strings.Fields(s), " ")
		for lipgloss.Width(s) > w {
			r := []rune(s)
			s = string(r[:len(r)-2]) + "…"
		}
		return s
	}
	out := []string{st.Render(clip(fmt.Sprintf("Queued (%d), run in this order when the turn ends · /queue edit|move|delete N", len(m.queue))))}
	for i, p := range m.queue {
		if i == maxQueueLines {
			out = append(out, st.Render(clip(fmt.Sprintf("  … and %d more (/queue)", len(m.queue)-i))))
			break
		}
		out = append(out, clip(fmt.Sprintf("  %d. %s", i+1, p.Message)))
	}
	return out
}

// runQueue carries out /queue: list, or change the Nth queued prompt.
func (m *Model) runQueue(c Command, refuse func(string) tea.Cmd) tea.Cmd {
	if m.act.QueueList == nil {
		return refuse("/queue is not available here")
	}
	if c.Sub == "" {
		return m.act.QueueList(true)
	}
	if c.Index > len(m.queue) {
		return refuse(fmt.Sprintf("/queue %s %d: there is no prompt %d (%d queued; /queue lists them again)", c.Sub, c.Index, c.Index, len(m.queue)))
	}
	id := m.queue[c.Index-1].PromptID
	switch c.Sub {
	case "edit":
		text := c.Arg
		return m.act.QueueEdit(id, &text, nil)
	case "move":
		to := c.To - 1
		return m.act.QueueEdit(id, nil, &to)
	default:
		return m.act.QueueDelete(id)
	}
}

// queueClient is the agent server's queue routes (agentserver/queue.go).

// queuePrompt queues text (POST /prompt {queue: true}); the turn starts at
// once when none runs any more.
func (c *client) queuePrompt(text string) tea.Cmd {
	return func() tea.Msg {
		b, _ := json.Marshal(map[string]any{"content": text, "queue": true})
		if err := c.send("POST", "/prompt", "queue", b); err != nil {
			return ErrMsg{err}
		}
		return c.listQueue(false)
	}
}

// steer puts text into the running turn (POST /steer, agentserver/steer.go);
// the stream shows it as the turn's user event, so success answers
// nothing.
func (c *client) steer(text string) tea.Cmd {
	return func() tea.Msg {
		b, _ := json.Marshal(map[string]string{"content": text})
		if err := c.send("POST", "/steer", "/steer", b); err != nil {
			return NoteMsg{Text: err.Error(), Err: true}
		}
		return nil
	}
}

func (c *client) queueList(asked bool) tea.Cmd { return func() tea.Msg { return c.listQueue(asked) } }

func (c *client) queueEdit(promptID string, message *string, position *int) tea.Cmd {
	return func() tea.Msg {
		b, _ := json.Marshal(struct {
			Message  *string `json:"message,omitempty"`
			Position *int    `json:"position,omitempty"`
		}{message, position})
		if err := c.send("PATCH", "/queue/"+url.PathEscape(promptID), "/queue", b); err != nil {
			return NoteMsg{Text: err.Error(), Err: true}
		}
		return c.listQueue(false)
	}
}

func (c *client) queueDelete(promptID string) tea.Cmd {
	return func() tea.Msg {
		if err := c.send("DELETE", "/queue/"+url.PathEscape(promptID), "/queue delete", nil); err != nil {
			return NoteMsg{Text: err.Error(), Err: true}
		}
		return c.listQueue(false)
	}
}

// listQueue is GET /queue as a QueueMsg (a NoteMsg when it fails).
func (c *client) listQueue(listed bool) tea.Msg {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	resp, err := c.req(ctx, "GET", "/queue", nil)
	if err != nil {
		return NoteMsg{Text: "/queue: " + err.Error(), Err: true}
	}
	defer resp.Body.Close()
	var l struct {
		Prompts []QueuedPrompt `json:"prompts"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&l) != nil {
		return NoteMsg{Text: fmt.Sprintf("/queue: the server answered %d", resp.StatusCode), Err: true}
	}
	return QueueMsg{Prompts: l.Prompts, Listed: listed}
}

// send is a queue request whose answer only says whether it was done
// (2xx); a refusal is an error with the server's why.
func (c *client) send(method, path, what string, body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	resp, err := c.req(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		why := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			why = e.Error
		}
		return fmt.Errorf("%s refused (%d): %s", what, resp.StatusCode, why)
	}
	return nil
}
