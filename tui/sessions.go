package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/chirality/harness/agentserver"
)

// SessionItem is one session of the agent server's GET /sessions.
type SessionItem = agentserver.SessionItem

// sessions is /sessions: GET /sessions, shown as a note.
func (c *client) sessions() tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		resp, err := c.req(ctx, "GET", "/sessions", nil)
		if err != nil {
			return NoteMsg{Text: "/sessions: " + err.Error(), Err: true}
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		var list struct {
			agentserver.SessionList
			Error string `json:"error"`
		}
		if jerr := json.Unmarshal(b, &list); resp.StatusCode != 200 || jerr != nil {
			why := list.Error
			if why == "" {
				why = strings.TrimSpace(string(b))
			}
			return NoteMsg{Text: fmt.Sprintf("/sessions refused (%d): %s", resp.StatusCode, why), Err: true}
		}
		return NoteMsg{Text: SessionsText(list.Sessions)}
	}
}

// SessionsText is /sessions' note: one line a session, the current one
// marked "*", each worktree session with its branch and base:
//
//   - 1a2b3c4d  harness/1a2b3c4d ← main  running  Fix the parser
//     5e6f7a8b  (project tree)           idle     Write the docs
func SessionsText(list []SessionItem) string {
	if len(list) == 0 {
		return "No sessions in this project."
	}
	where := make([]string, len(list))
	wide := 0
	for i, s := range list {
		where[i] = "(project tree)"
		if s.Isolation == "worktree" {
			where[i] = s.Branch
			if s.Base != "" {
				where[i] += " ← " + s.Base
			}
		}
		wide = max(wide, len([]rune(where[i])))
	}
	var b strings.Builder
	b.WriteString("Sessions of this project (* this one):")
	for i, s := range list {
		mark := " "
		if s.Current {
			mark = "*"
		}
		state := "idle"
		switch {
		case s.PendingApprovals > 0:
			state = "waiting"
		case s.Running:
			state = "running"
		}
		id := s.SessionID
		if len(id) > 8 {
			id = id[:8]
		}
		title := []rune(strings.Join(strings.Fields(s.Title), " "))
		if len(title) > 48 {
			title = append(title[:48], '…')
		}
		pad := strings.Repeat(" ", wide-len([]rune(where[i])))
		fmt.Fprintf(&b, "\n%s %s  %s%s  %-7s  %s", mark, id, where[i], pad, state, string(title))
	}
	return b.String()
}
