package gateway

import (
	"net/http"
	"reflect"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engine"
)

// routeTable is every route of the gateway, one entry each: the router
// registers Serve at Method APIPrefix+Path (routes), and the OpenAPI
// document (GenerateOpenAPI, written to openapi.json by go generate) is
// made from the same entries and the Go types they name, so a route cannot
// be in one and not the other. See doc.go, "Adding a route".
var routeTable = []route{
	{Method: http.MethodPost, Path: "/session/create", Serve: (*Gateway).createSession, Op: operation{
		ID:      "createSession",
		Summary: "Create a session",
		Body:    reflect.TypeFor[createRequest](),
		Replies: []reply{{Status: 201, Description: "OK", Body: reflect.TypeFor[envelopeJSON]()}},
		Errors:  []int{400, 401, 403, 404, 408, 413, 415, 409, 422},
	}},
	{Method: http.MethodGet, Path: "/session/list", Serve: (*Gateway).listSessions, Op: operation{
		ID:      "listSessions",
		Summary: "List sessions, newest first",
		Params:  []param{{Name: "projectRoot", In: "query", Description: "absolute project root; every allowed root when absent", Schema: &schema{Type: "string"}}},
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[[]harness.SessionSummary]()}},
		Errors:  []int{400, 401, 403},
	}},
	{Method: http.MethodGet, Path: "/session/{id}", Serve: (*Gateway).getSession, Op: operation{
		ID:      "getSession",
		Summary: "Get a session",
		Params:  []param{sessionIDParam},
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[envelopeJSON]()}},
		Errors:  []int{400, 401, 403, 404},
	}},
	{Method: http.MethodDelete, Path: "/session/{id}", Serve: (*Gateway).deleteSession, Op: operation{
		ID:      "deleteSession",
		Summary: "Delete a session (kills a running turn first, removes its files; a worktree session's worktree and branch too)",
		Params:  []param{sessionIDParam, {Name: "force", In: "query", Description: "1: drop a worktree session's unmerged changes (else 409)", Schema: &schema{Type: "string", Enum: []string{"1", "true"}}}},
		Replies: []reply{{Status: 204, Description: "Deleted"}},
		Errors:  []int{400, 401, 403, 404, 409},
	}},
	{Method: http.MethodPatch, Path: "/session/{id}", Serve: (*Gateway).patchSession, Op: operation{
		ID:      "patchSession",
		Summary: "Rename a session or change what its next turns run with (persona, model, permission mode, effort)",
		Params:  []param{sessionIDParam},
		Body:    reflect.TypeFor[patchRequest](),
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[envelopeJSON]()}},
		Errors:  []int{400, 401, 403, 404, 408, 413, 415},
	}},
	{Method: http.MethodPost, Path: "/session/{id}/fork", Serve: (*Gateway).forkSession, Op: operation{
		ID:           "forkSession",
		Summary:      "Fork a session: a new session with the conversation up to atSeq (default all of it), the same project, persona and engine; the source is left as it is",
		Params:       []param{sessionIDParam},
		Body:         reflect.TypeFor[forkRequest](),
		BodyOptional: true,
		Replies:      []reply{{Status: 201, Description: "The new session", Body: reflect.TypeFor[envelopeJSON]()}, {Status: 422, Ref: "Unsupported"}},
		Errors:       []int{400, 401, 403, 404, 408, 409, 413, 415},
	}},
	{Method: http.MethodGet, Path: "/session/{id}/turns", Serve: (*Gateway).listTurns, Op: operation{
		ID:      "listTurns",
		Summary: "The session's turns, oldest first, and what a rewind can do at each",
		Params:  []param{sessionIDParam},
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[[]turnJSON]()}},
		Errors:  []int{400, 401, 403, 404},
	}},
	{Method: http.MethodGet, Path: "/session/{id}/rewind", Serve: (*Gateway).previewRewind, Op: operation{
		ID:      "previewRewind",
		Summary: "What rewinding the files to before a turn would change (a unified diff per file, bounded by the checkpoint store; a cut patch says truncated); changes nothing, may run during a turn. A turn whose files cannot be rewound is still previewed with filesError saying why.",
		Params:  []param{sessionIDParam, {Name: "toTurn", In: "query", Required: true, Description: "the seq of the turn's user:message", Schema: &schema{Type: "integer", Format: "int64", Minimum: ptr(int64(1))}}},
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[previewJSON]()}},
		Errors:  []int{400, 401, 403, 404},
	}},
	{Method: http.MethodPost, Path: "/session/{id}/rewind", Serve: (*Gateway).rewindSession, Op: operation{
		ID:      "rewindSession",
		Summary: "Go back to before a turn: restore the project's files and/or cut the conversation there. The event log keeps everything and gains a session:rewound event.",
		Params:  []param{sessionIDParam},
		Body:    reflect.TypeFor[rewindRequest](),
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[rewindJSON]()}, {Status: 422, Ref: "Unsupported"}},
		Errors:  []int{400, 401, 403, 404, 408, 409, 413, 415},
	}},
	{Method: http.MethodGet, Path: "/session/{id}/events", Serve: (*Gateway).sessionEvents, Op: operation{
		ID:      "sessionEvents",
		Summary: "Stored events after Last-Event-ID (or ?after=N), then the live events of a running turn until its process:exit",
		Params:  []param{sessionIDParam, {Name: "after", In: "query", Schema: &schema{Type: "integer", Minimum: ptr(int64(0))}}, {Name: "Last-Event-ID", In: "header", Description: "wins over ?after=", Schema: &schema{Type: "integer", Minimum: ptr(int64(0))}}, eventsParam},
		Replies: []reply{{Status: 200, Description: streamDescription, Stream: true}},
		Errors:  []int{400, 401, 403, 404, 503},
	}},
	{Method: http.MethodPost, Path: "/turn", Serve: (*Gateway).turn, Op: operation{
		ID:      "startTurn",
		Summary: "Run a turn; the answer streams its events until process:exit. The turn goes on if the client disconnects. With queue true a busy session queues the message instead (202).",
		Params:  []param{eventsParam},
		Body:    reflect.TypeFor[turnRequest](),
		Replies: []reply{{Status: 200, Description: streamDescription, Stream: true}, {Status: 202, Description: "Queued behind the running turn (queue true only)", Body: reflect.TypeFor[queueAnswer]()}},
		Errors:  []int{400, 401, 403, 404, 408, 409, 413, 415, 422, 429, 503},
	}},
	{Method: http.MethodPost, Path: "/interrupt", Serve: (*Gateway).interrupt, Op: operation{
		ID:      "interrupt",
		Summary: "Interrupt the running turn of a session",
		Body:    reflect.TypeFor[interruptRequest](),
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[interruptedJSON]()}},
		Errors:  []int{400, 401, 403, 404, 408, 413, 415},
	}},
	{Method: http.MethodGet, Path: "/personas", Serve: (*Gateway).personas, Op: operation{
		ID:      "listPersonas",
		Summary: "Personas a session can use",
		Params:  []param{{Name: "projectRoot", In: "query", Description: "the first allowed root when absent", Schema: &schema{Type: "string"}}},
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[[]harness.PersonaInfo]()}},
		Errors:  []int{400, 401, 403},
	}},
	{Method: http.MethodGet, Path: "/health", Serve: (*Gateway).health, Op: operation{
		ID:      "health",
		Summary: "Liveness: ok when the default engine can run here, and every engine's availability",
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[harness.Health]()}},
		Errors:  []int{401, 403},
	}},
	{Method: http.MethodGet, Path: "/usage", Serve: (*Gateway).usage, Op: operation{
		ID:          "getUsage",
		Summary:     "What the sessions' turns used, from their event logs (extension)",
		Description: "Adds up the usage:update events of the sessions of projectRoot (every project the server knows when absent), from an index kept as the logs grow. Sessions from before usage:update count their session:complete's usage and cost.",
		Params: []param{
			{Name: "by", In: "query", Description: "group by session, engine, model or day", Schema: &schema{Type: "string", Enum: []string{"session", "engine", "model", "day"}}},
			{Name: "since", In: "query", Description: "RFC 3339 time or YYYY-MM-DD (UTC); counts from that hour", Schema: &schema{Type: "string"}},
			{Name: "projectRoot", In: "query", Description: "absolute project root", Schema: &schema{Type: "string"}},
		},
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[UsageResponse]()}},
		Errors:  []int{400, 401, 403},
	}},
	{Method: http.MethodGet, Path: "/nodes", Serve: (*Gateway).nodes, Op: operation{
		ID:      "listNodes",
		Summary: "The nodes of the cluster this server is a node of (serve --node; package cluster), with their state and the sessions each owns; 404 on a server that is not a node",
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[[]harness.NodeInfo]()}},
		Errors:  []int{401, 403, 404},
	}},
	{Method: http.MethodPost, Path: "/session/{id}/move", Serve: (*Gateway).nodes, Op: operation{
		ID:          "moveSession",
		Summary:     "Move the session to another cluster node that sees its project root at the same path (shared storage); 404 on a server that is not a node",
		Description: "The owner stops serving it (its events flushed to the stream), the target opens it from the root and owns it; every node routes to it then. Also when the owner is down. 409 while a turn runs, 422 when the target cannot see the root or the session's file, 503 when the target is down.",
		Params:      []param{sessionIDParam},
		Body:        reflect.TypeFor[harness.MoveRequest](),
		Replies:     []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[harness.MoveResult]()}},
		Errors:      []int{400, 401, 403, 404, 409, 422, 503},
	}},
	{Method: http.MethodGet, Path: "/openapi.json", Serve: (*Gateway).openapi, Op: operation{
		ID:      "openapi",
		Summary: "This document",
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[documentJSON]()}},
		Errors:  []int{401, 403},
	}},
	{Method: http.MethodPost, Path: "/approval", Serve: (*Gateway).approval, Op: operation{
		ID:      "answerApproval",
		Summary: "Answer an approval request (the first answer wins)",
		Body:    reflect.TypeFor[approvalRequest](),
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[resolvedJSON]()}},
		Errors:  []int{400, 401, 403, 404, 408, 409, 413, 415},
	}},
	{Method: http.MethodGet, Path: "/engines", Serve: (*Gateway).engines, Op: operation{
		ID:      "listEngines",
		Summary: "The engines and whether each can run here",
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[[]engine.Status]()}},
		Errors:  []int{401, 403},
	}},
	{Method: http.MethodGet, Path: "/roots", Serve: (*Gateway).roots, Op: operation{
		ID:      "listRoots",
		Summary: "The allowed project roots (the demo project first in demo mode)",
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[rootsJSON]()}},
		Errors:  []int{401, 403},
	}},
	{Method: http.MethodPost, Path: "/mcp", Serve: (*Gateway).serveMCP, Op: operation{
		ID:          "mcpPost",
		Summary:     "An MCP request or notification",
		Description: mcpDescription,
		Replies:     mcpReplies,
	}},
	{Method: http.MethodGet, Path: "/mcp", Serve: (*Gateway).serveMCP, Op: operation{
		ID:          "mcpStream",
		Summary:     "The MCP server-to-client stream",
		Description: mcpDescription,
		Replies:     mcpReplies,
	}},
	{Method: http.MethodDelete, Path: "/mcp", Serve: (*Gateway).serveMCP, Op: operation{
		ID:          "mcpDelete",
		Summary:     "End an MCP session",
		Description: mcpDescription,
		Replies:     mcpReplies,
	}},
	{Method: http.MethodGet, Path: "/trust", Serve: (*Gateway).trustList, Op: operation{
		ID:      "listTrust",
		Summary: "What waits for a person's trust in a project: persona files whose grants widened since a person trusted them, and project .mcp.json servers nobody trusted (as they are now). The record lives in the state directory, outside every project.",
		Params:  []param{{Name: "projectRoot", In: "query", Required: true, Schema: &schema{Type: "string"}}},
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[trustListJSON]()}},
		Errors:  []int{400, 401, 403},
	}},
	{Method: http.MethodPost, Path: "/trust", Serve: (*Gateway).trustAccept, Op: operation{
		ID:      "acceptTrust",
		Summary: "A person trusts a persona file or a project MCP server as it is now (409 when it changed since they were shown its hash)",
		Body:    reflect.TypeFor[trustRequest](),
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[trustAcceptedJSON]()}},
		Errors:  []int{400, 401, 403, 404, 408, 409, 413, 415, 422},
	}},
	{Method: http.MethodGet, Path: "/session/{id}/diff", Serve: (*Gateway).sessionDiff, Op: operation{
		ID:      "sessionDiff",
		Summary: "What a worktree session changed since its base",
		Params:  []param{sessionIDParam},
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[harness.Diff]()}},
		Errors:  []int{400, 401, 403, 404, 422},
	}},
	{Method: http.MethodPost, Path: "/session/{id}/merge", Serve: (*Gateway).mergeSession, Op: operation{
		ID:      "mergeSession",
		Summary: "Merge a worktree session's branch (its uncommitted changes committed first)",
		Params:  []param{sessionIDParam},
		Body:    reflect.TypeFor[mergeRequest](),
		Replies: []reply{{Status: 200, Description: "OK", Body: reflect.TypeFor[harness.MergeResult]()}, {Status: 409, Description: "the merge conflicts (conflicts names the paths), the project's tree has uncommitted changes, or a turn runs; nothing was merged", Body: reflect.TypeFor[mergeConflictJSON]()}},
		Errors:  []int{400, 401, 403, 404, 408, 413, 415, 422},
	}},
	{Method: http.MethodPost, Path: "/session/{id}/steer", Serve: (*Gateway).steer, Op: operation{
		ID:          "steerTurn",
		Summary:     "Put a message into the session's running turn (steer)",
		Description: "The message goes into the turn that runs, where the engine can take it: Claude Code's streamed input (the CLI cuts the cycle it is in and answers the message in the same turn), Codex's turn/steer, the native loop's next model call, an ACP agent that advertises steering (claude-agent-acp). It is a user:message of that turn in the session's log. It never starts a turn. GET /engines says which engines steer (controls.steer).",
		Params:      []param{sessionIDParam},
		Body:        reflect.TypeFor[steerRequest](),
		Replies: []reply{{Status: 200, Description: "The running turn has the message", Body: reflect.TypeFor[steerAnswer]()},
			{Status: 409, Description: "No turn is running to steer (send the message as a turn, or queue it), or the engine is still taking a previous steer (try again)", Body: reflect.TypeFor[errorJSON]()},
			{Status: 422, Description: "The session's engine cannot take a message while a turn runs (the message names the engines that can), or the message is over 256 KiB", Body: reflect.TypeFor[errorJSON]()}},
		Errors: []int{400, 401, 403, 404},
	}},
	{Method: http.MethodPost, Path: "/session/{id}/plan", Serve: (*Gateway).decidePlan, Op: operation{
		ID:          "decidePlan",
		Summary:     "Approve or revise the plan the session's running turn waits with (plan:ready)",
		Description: "When an agent ends a plan in plan mode (Claude Code's ExitPlanMode, also through claude-agent-acp; Codex's proposed plan in its plan collaboration mode), the turn emits plan:ready with the plan as markdown and waits, with the approvals' deadline (then it is a revise by timeout; on Codex the turn then ends, the plan unapproved). approve: the agent goes on (Codex: its turn ends and \"Implement the plan.\" is queued as the next turn), and the session's next turns run in mode (default when left out; the session keeps it). revise: feedback goes back to the agent, which keeps planning (a new plan:ready follows). plan:resolved says what was decided.",
		Params:      []param{sessionIDParam},
		Body:        reflect.TypeFor[planDecisionRequest](),
		Replies: []reply{{Status: 200, Description: "Decided: plan:resolved is in the log and the agent has the answer", Body: reflect.TypeFor[planDecisionAnswer]()},
			{Status: 409, Description: "No plan of this session waits for a decision (none was ready, or it was decided, timed out or its turn ended)", Body: reflect.TypeFor[errorJSON]()}},
		Errors: []int{400, 401, 403, 404},
	}},
	{Method: http.MethodGet, Path: "/session/{id}/queue", Serve: (*Gateway).getQueue, Op: operation{
		ID:      "getQueue",
		Summary: "The session's queued prompts, in the order they run",
		Params:  []param{sessionIDParam},
		Replies: []reply{{Status: 200, Description: "The queue", Body: reflect.TypeFor[queueList]()}},
		Errors:  []int{400, 401, 403, 404},
	}},
	{Method: http.MethodPatch, Path: "/session/{id}/queue/{promptId}", Serve: (*Gateway).patchQueued, Op: operation{
		ID:      "editQueuedPrompt",
		Summary: "Edit a queued prompt's text and/or move it in the queue",
		Params:  []param{sessionIDParam, {Name: "promptId", In: "path", Required: true, Description: "a queued prompt's ID", Schema: &schema{Type: "string"}}},
		Body:    reflect.TypeFor[queueEditRequest](),
		Replies: []reply{{Status: 200, Description: "The queue as it now is", Body: reflect.TypeFor[queueList]()}},
		Errors:  []int{400, 401, 403, 404, 408, 413, 415, 422},
	}},
	{Method: http.MethodDelete, Path: "/session/{id}/queue/{promptId}", Serve: (*Gateway).deleteQueued, Op: operation{
		ID:      "deleteQueuedPrompt",
		Summary: "Delete a queued prompt: it never runs (prompt:dequeued, reason deleted)",
		Params:  []param{sessionIDParam, {Name: "promptId", In: "path", Required: true, Description: "a queued prompt's ID", Schema: &schema{Type: "string"}}},
		Replies: []reply{{Status: 204, Description: "Deleted"}},
		Errors:  []int{400, 401, 403, 404},
	}},
}

// mcpDescription is the MCP routes' description.
const mcpDescription = "The harness as a Model Context Protocol server over streamable HTTP (package mcpserver: list_engines, list_sessions, create_session, run_turn, get_transcript, interrupt). The bodies are MCP JSON-RPC messages; see the MCP specification."

// apiDescription is the document's description (info.description).
const apiDescription = "Drives coding agents for the Chirality web console. With a server token, every /api route (an unknown one too) needs `Authorization: Bearer <token>` (401 otherwise). Requests whose Host header is not allowed, or requests with an Origin that is neither this server nor an allowed origin, get 403 on every route. A POST or PATCH body must be `Content-Type: application/json` (415 otherwise); bodies over the limit (default 1 MiB) get 413, bodies not received within the body timeout (default 30 s) 408. Event streams beyond the server's or a session's cap get 503 with Retry-After. Errors are `{\"error\": \"…\"}`, their messages cut to 512 bytes."
