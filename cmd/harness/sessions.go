package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/event/fold"
	"github.com/chirality/harness/session"
)

const sessionsUsage = `usage:
  harness sessions list [--project-root DIR] [--json]
  harness sessions show ID [--project-root DIR] [--json]
  harness sessions rm ID [--project-root DIR]

list  the project's sessions, most recently updated first; unreadable
      session files are reported on stderr and skipped
show  one session, found by ID (through the index in the state directory,
      else in --project-root)
rm    delete a session: its file, event log and saved prompt

The index lives in $XDG_STATE_HOME/harness (default ~/.local/state/harness).
`

func (c *cli) sessionsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions list|show|rm",
		Short: "list, show or remove stored sessions",
		Long:  sessionsUsage,
		Args:  cobra.ArbitraryArgs,
	}
	cmd.RunE = c.group("subcommand")
	var root string
	var asJSON bool
	list := &cobra.Command{
		Use: "list [--project-root DIR] [--json]", Aliases: []string{"ls"}, Short: "the project's sessions, most recently updated first",
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return exitWith(sessionsList(root, asJSON, c.stdout, c.stderr)) },
	}
	show := &cobra.Command{
		Use: "show ID [--project-root DIR] [--json]", Short: "one session and its transcript",
		Args: exactArgs("ID"),
		RunE: func(_ *cobra.Command, args []string) error {
			return exitWith(sessionsShow(root, args[0], asJSON, c.stdout, c.stderr))
		},
	}
	rm := &cobra.Command{
		Use: "rm ID [--project-root DIR]", Aliases: []string{"delete"}, Short: "delete a session: its file, event log and saved prompt",
		Args: exactArgs("ID"),
		RunE: func(_ *cobra.Command, args []string) error {
			return exitWith(sessionsRm(root, args[0], c.stdout, c.stderr))
		},
	}
	for _, sub := range []*cobra.Command{list, show, rm} {
		flagProjectRoot(sub, &root, ".", "project root directory")
		if sub != rm {
			flagJSON(sub.Flags(), &asJSON, "print JSON")
		}
		cmd.AddCommand(sub)
	}
	return cmd
}

// runSessions is `harness sessions ARGS…`.
func runSessions(args []string, stdout, stderr io.Writer) int {
	return run(append([]string{"sessions"}, args...), stdout, stderr)
}

func sessionsOpenStore(stderr io.Writer) (*session.Store, bool) {
	st, err := session.Open(session.Config{})
	if err != nil {
		fmt.Fprintf(stderr, "harness: %s\n", userError(err))
		return nil, false
	}
	return st, true
}

func sessionsList(root string, asJSON bool, stdout, stderr io.Writer) int {
	st, ok := sessionsOpenStore(stderr)
	if !ok {
		return 1
	}
	defer st.Close()
	sessions, problems, err := st.List(root)
	if err != nil {
		fmt.Fprintf(stderr, "harness: %s\n", userError(err))
		return 1
	}
	for _, p := range problems {
		fmt.Fprintf(stderr, "harness: warning: skipped %v\n", p)
	}
	if asJSON {
		if sessions == nil {
			sessions = []*session.Session{}
		}
		if err := writeIndentedJSON(stdout, sessions); err != nil {
			fmt.Fprintf(stderr, "harness: %s\n", userError(err))
			return 1
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tENGINE\tMODE\tPERSONA\tCONVERSATION\tTITLE")
	for _, s := range sessions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.UpdatedAt.Local().Format(time.DateTime), engineOf(s), s.Mode,
			orDash(s.Persona), orDash(s.ConversationID), orDash(oneLine(s.Title, 50)))
	}
	tw.Flush()
	return 0
}

func engineOf(s *session.Session) string {
	if s.Engine == "" {
		return "claude-code"
	}
	return s.Engine
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sessionsFind looks id up through the index, then in projectRoot.
func sessionsFind(st *session.Store, projectRoot, id string) (*session.Session, error) {
	s, err := st.Get(id)
	if errors.Is(err, session.ErrNotFound) {
		if s2, err2 := st.GetIn(projectRoot, id); err2 == nil || !errors.Is(err2, session.ErrNotFound) {
			return s2, err2
		}
	}
	return s, err
}

func sessionsShow(root, id string, asJSON bool, stdout, stderr io.Writer) int {
	st, ok := sessionsOpenStore(stderr)
	if !ok {
		return 1
	}
	defer st.Close()
	s, err := sessionsFind(st, root, id)
	if err != nil {
		fmt.Fprintf(stderr, "harness: %s\n", userError(err))
		return failCode(err)
	}
	if asJSON {
		if err := writeIndentedJSON(stdout, s); err != nil {
			fmt.Fprintf(stderr, "harness: %s\n", userError(err))
			return 1
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id:\t%s\n", s.ID)
	fmt.Fprintf(tw, "project root:\t%s\n", s.ProjectRoot)
	fmt.Fprintf(tw, "persona:\t%s\n", orDash(s.Persona))
	fmt.Fprintf(tw, "mode:\t%s\n", s.Mode)
	fmt.Fprintf(tw, "engine:\t%s\n", engineOf(s))
	fmt.Fprintf(tw, "title:\t%s\n", orDash(s.Title))
	fmt.Fprintf(tw, "cost:\t$%.4f\n", s.CostUSD)
	fmt.Fprintf(tw, "conversation:\t%s\n", orDash(s.ConversationID))
	if len(s.Rules) > 0 {
		fmt.Fprintf(tw, "always allowed:\t%s\n", strings.Join(s.Rules, ", "))
	}
	fmt.Fprintf(tw, "created:\t%s\n", s.CreatedAt.Format(time.RFC3339))
	fmt.Fprintf(tw, "updated:\t%s\n", s.UpdatedAt.Format(time.RFC3339))
	fmt.Fprintf(tw, "file:\t%s\n", session.FilePath(s.ProjectRoot, s.ID))
	fmt.Fprintf(tw, "event log:\t%s\n", s.EventLogPath())
	tw.Flush()
	if err := printTranscript(stdout, st, s.ID); err != nil {
		fmt.Fprintf(stderr, "harness: %s\n", userError(err))
		return 1
	}
	return 0
}

// printTranscript prints the conversation from the event log, both sides:
// each turn's user:message, then the answer, tools and how it ended.
func printTranscript(w io.Writer, st *session.Store, id string) error {
	log, err := st.EventLog(id)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\ntranscript:")
	var f fold.Fold
	for rec, err := range log.Records(0) {
		if err != nil {
			return err
		}
		var ev event.Event
		if json.Unmarshal(rec.Event, &ev) != nil || ev.ParentToolUseID != "" {
			continue // a subagent's: its result is its tool call's
		}
		u := f.Add(&ev)
		for _, it := range u.Items() {
			transcriptItem(w, &it)
		}
	}
	u := f.Flush()
	for _, it := range u.Items() {
		transcriptItem(w, &it)
	}
	return nil
}

// transcriptItem prints one update of an item of the fold: the user's
// messages, the answer's text blocks, tool calls, approvals, plans as
// decided and errors.
func transcriptItem(w io.Writer, it *fold.Item) {
	switch it.Kind {
	case fold.KindUser:
		fmt.Fprintf(w, "\nuser: %s\n", it.Text)
	case fold.KindText:
		if t := strings.TrimSpace(it.Text); it.Done && t != "" {
			fmt.Fprintf(w, "assistant: %s\n", t)
		}
	case fold.KindTool:
		if t := it.Tool; it.New && t.Start != nil {
			fmt.Fprintf(w, "tool: %s %s\n", t.Name, oneLine(string(t.Input), 120))
		}
	case fold.KindApproval:
		if r := it.Approval.Resolved; it.Done {
			fmt.Fprintf(w, "approval: %s (%s)\n", r.Decision, r.By)
		}
	case fold.KindPlan:
		if r := it.Plan.Resolved; it.Done {
			plan := ""
			if it.Plan.Ready != nil {
				plan = " " + oneLine(it.Plan.Ready.Plan, 120)
			}
			fmt.Fprintf(w, "plan: %s (%s)%s\n", r.Decision, r.By, plan)
		}
	case fold.KindStatus, fold.KindEnd:
		if e := it.Event.Error; it.Event.Type == event.TypeSessionError && e != nil {
			fmt.Fprintf(w, "error (%s): %s\n", e.Kind, e.Error)
		}
	}
}

func sessionsRm(root, id string, stdout, stderr io.Writer) int {
	st, ok := sessionsOpenStore(stderr)
	if !ok {
		return 1
	}
	defer st.Close()
	err := st.Delete(id)
	if errors.Is(err, session.ErrNotFound) {
		if err2 := st.DeleteIn(root, id); err2 == nil || !errors.Is(err2, session.ErrNotFound) {
			err = err2
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "harness: %s\n", userError(err))
		return failCode(err)
	}
	fmt.Fprintf(stdout, "deleted session %s\n", id)
	return 0
}
