package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chirality/harness/session"
	"github.com/chirality/harness/usage"
)

const usageHelp = `usage:
  harness usage [--by session|engine|model|day] [--since TIME] [--project-root DIR] [--state-dir DIR] [--json]

What the project's sessions cost: the tokens and cost of their turns, from
their event logs (the usage:update events; older sessions count their
session:complete), read offline through the index in the state directory,
as GET /api/harness/usage answers. --since takes RFC 3339 or YYYY-MM-DD.
Costs the engine did not report are priced from the table of package
usage (dated ` + usage.PricesDated + `).
`

func (c *cli) usageCmd() *cobra.Command {
	var root, stateDir, by, since string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "usage [--by session|engine|model|day]",
		Short: "what the sessions' turns used and cost (tokens, USD), grouped",
		Long:  usageHelp,
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			return exitWith(usageReport(root, stateDir, by, since, asJSON, c.stdout, c.stderr))
		},
	}
	cmd.Flags().StringVar(&by, "by", "", "group by session, engine, model or day")
	cmd.Flags().StringVar(&since, "since", "", "count from this time (RFC 3339 or YYYY-MM-DD, UTC)")
	flagProjectRoot(cmd, &root, ".", "project root directory")
	flagStateDir(cmd.Flags(), &stateDir)
	flagJSON(cmd.Flags(), &asJSON, "print the report as GET /api/harness/usage does")
	return cmd
}

func usageReport(root, stateDir, by, since string, asJSON bool, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(stderr, "harness usage:", err)
		return 2
	}
	if !usage.ValidBy(by) {
		return fail(fmt.Errorf("--by must be session, engine, model or day, not %q", by))
	}
	var q usage.Query
	q.By = by
	if since != "" {
		t, err := usage.ParseSince(since)
		if err != nil {
			return fail(err)
		}
		q.Since = t
	}
	abs, err := filepath.Abs(root)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return fail(fmt.Errorf("project root: %w", err))
	}
	if stateDir == "" {
		if stateDir, err = session.DefaultStateDir(); err != nil {
			return fail(err)
		}
	}
	ix := usage.Load(usage.IndexFile(stateDir))
	if err := ix.Refresh([]string{abs}, session.SessionsDir, usage.IndexFile(stateDir)); err != nil {
		fmt.Fprintln(stderr, "harness usage: the index was not saved:", err)
	}
	rep := ix.Report([]string{abs}, q)
	if asJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	printUsage(stdout, by, rep)
	return 0
}

// printUsage writes the report as a table: one row a group, then the
// total, then the rate limits.
func printUsage(w io.Writer, by string, rep usage.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := by
	if head == "" {
		head = "total"
	}
	fmt.Fprintf(tw, "%s\tturns\tinput\toutput\tcache read\tcache write\tcost (USD)\t\n", head)
	row := func(key string, t usage.Totals) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.4f\t\n", key, t.Turns, t.InputTokens, t.OutputTokens, t.CacheReadTokens, t.CacheWriteTokens, t.CostUSD)
	}
	for _, g := range rep.Groups {
		row(g.Key, g.Totals)
	}
	if by != "" {
		row("total", rep.Total)
	} else {
		row("", rep.Total)
	}
	_ = tw.Flush()
	for _, rl := range rep.RateLimits {
		used := "?"
		if rl.UsedPercent >= 0 {
			used = fmt.Sprintf("%.0f%%", rl.UsedPercent)
		}
		fmt.Fprintf(w, "rate limit %s %s: %s used", rl.Engine, rl.Limit, used)
		if rl.ResetsAt > 0 {
			fmt.Fprintf(w, ", resets %s", time.Unix(rl.ResetsAt, 0).UTC().Format(time.RFC3339))
		}
		fmt.Fprintln(w)
	}
}
