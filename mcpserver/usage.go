package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chirality/harness"
	"github.com/chirality/harness/usage"
)

// GetUsageIn is get_usage's input: GET /api/harness/usage's query.
type GetUsageIn struct {
	By          string `json:"by,omitempty" jsonschema:"group by session, engine, model or day"`
	Since       string `json:"since,omitempty" jsonschema:"count from this time: RFC 3339 or YYYY-MM-DD (UTC)"`
	ProjectRoot string `json:"projectRoot,omitempty" jsonschema:"one project's sessions (absolute); every project the server knows when empty"`
}

// GetUsageOut is get_usage's result: the totals, groups and rate limits.
type GetUsageOut = usage.Report

// addUsageTool adds get_usage: what the sessions' turns used.
func (s *Server) addUsageTool(ro *mcp.ToolAnnotations) {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "get_usage", Description: "What the sessions' turns used: tokens and cost in USD, in total and grouped by session, engine, model or day, and the latest rate limits.", Annotations: ro},
		func(_ context.Context, _ *mcp.CallToolRequest, in GetUsageIn) (*mcp.CallToolResult, GetUsageOut, error) {
			if err := firstErr(tooLong("projectRoot", in.ProjectRoot, MaxPathBytes), tooLong("by", in.By, MaxNameBytes),
				tooLong("since", in.Since, MaxNameBytes)); err != nil {
				return nil, GetUsageOut{}, err
			}
			q := harness.UsageQuery{By: in.By, ProjectRoot: in.ProjectRoot}
			if in.Since != "" {
				t, err := usage.ParseSince(in.Since)
				if err != nil {
					return nil, GetUsageOut{}, fmt.Errorf("since: %w", err)
				}
				q.Since = t
			}
			rep, err := s.h.Usage(q)
			if err != nil {
				return nil, GetUsageOut{}, toolError(err)
			}
			return nil, rep, nil
		})
}
