package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chirality/harness"
)

// nodesMoveCmd is `harness nodes move SESSION NODE`: any node's POST
// /api/harness/session/{id}/move (--url is nodes').
func (c *cli) nodesMoveCmd(url *string) *cobra.Command {
	var token string
	cmd := &cobra.Command{
		Use:   "move SESSION NODE [--url URL] [--token T]",
		Short: "move a session to another node that sees its project root at the same path",
		Long: `usage: harness nodes move SESSION NODE [--url URL] [--token T]

Asks a node (any) to move SESSION to NODE, which must see the session's
project root at the same path (shared storage) within its allowed roots.
The owner stops serving it (its events published to the stream up to the
last), NODE opens it from the root and runs its turns from then on; also
when the owner is down (it died). Refused while a turn runs (409), when
NODE cannot see the root or the session's file (422), when NODE is down
(503). The working tree is not copied: it is the shared one.
`,
		Args: exactArgs("SESSION", "NODE"),
		RunE: func(_ *cobra.Command, args []string) error {
			if token == "" {
				token = os.Getenv("HARNESS_TOKEN")
			}
			return exitWith(c.nodesMove(*url, token, args[0], args[1]))
		},
	}
	flagToken(cmd, &token, "bearer token of the node's API (or HARNESS_TOKEN)")
	return cmd
}

func (c *cli) nodesMove(url, token, id, node string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, _ := json.Marshal(harness.MoveRequest{Node: node})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(url, "/")+"/api/harness/session/"+id+"/move", bytes.NewReader(b))
	if err != nil {
		fmt.Fprintln(c.stderr, "harness nodes move:", err)
		return 2
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(c.stderr, "harness nodes move:", err)
		return 1
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	var ok harness.MoveResult
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &ok) != nil {
		fmt.Fprintf(c.stderr, "harness nodes move: %s: %s\n", res.Status, strings.TrimSpace(string(body)))
		return 1
	}
	fmt.Fprintf(c.stdout, "session %s moved from %s to %s (events up to seq %d)\n", ok.SessionID, ok.From, ok.Node, ok.LastSeq)
	return 0
}
