// Package gateway serves a harness.Harness over HTTP at /api/harness: the
// routes the web console and the TypeScript client use.
//
//	h, _ := harness.New(harness.Config{Roots: roots, Engines: engines.Builtin(engines.Config{})})
//	gw, _ := gateway.New(gateway.Config{Harness: h, Addr: "127.0.0.1:8787", Token: tok})
//	srv := &http.Server{Handler: gw}
//	…
//	gw.Close()              // end open event streams
//	h.Shutdown(ctx)         // interrupt turns, wait, kill what is left
//
// Routes (openapi.json, served at /api/harness/openapi.json, has the
// shapes; it is generated from routeTable, which the router registers
// too: see "Adding a route" below):
//
//	POST   /api/harness/session/create   {projectRoot, persona, mode, engine?, model?, title?, isolation?, base?, branch?, sandbox?} → 201 {session, pendingApprovals, permissionMode} | 422
//	GET    /api/harness/session/list     ?projectRoot= → 200 [SessionSummary]
//	GET    /api/harness/session/{id}     → 200 {session, pendingApprovals, permissionMode}
//	PATCH  /api/harness/session/{id}     {title?, persona?, model?, permissionMode?, effort?} → 200 {session, …}
//	POST   /api/harness/session/{id}/fork    {atSeq?} → 201 {session, …} | 404 | 409 | 422
//	GET    /api/harness/session/{id}/turns   → 200 [{seq, text, checkpoint, files, rewound}]
//	GET    /api/harness/session/{id}/rewind  ?toTurn= → 200 {toTurn, turn, files: [{path, op, patch, truncated?}], filesError?}
//	POST   /api/harness/session/{id}/rewind  {toTurn, files, conversation} → 200 {files, conversation} | 404 | 409 | 422
//	GET    /api/harness/session/{id}/diff    → 200 {base, branch, files: [{path, status, additions, deletions}], patch} | 422
//	POST   /api/harness/session/{id}/merge   {strategy?, message?, into?} → 200 {merged, commit, into} | 409 {error, conflicts?} | 422
//	DELETE /api/harness/session/{id}     ?force=1 → 204 | 409
//	GET    /api/harness/session/{id}/events  ?events= SSE: stored after Last-Event-ID / ?after=, then live
//	POST   /api/harness/turn             ?events= {sessionId, message, queue?} → 200 SSE of the turn | 409 busy | 202 {queued, promptId, position} (queue true, busy) | 422 | 429
//	GET    /api/harness/session/{id}/queue               → 200 {prompts: [{promptId, message, queuedAt}]}
//	PATCH  /api/harness/session/{id}/queue/{promptId}    {message?, position?} → 200 {prompts} | 404
//	DELETE /api/harness/session/{id}/queue/{promptId}    → 204 | 404
//	POST   /api/harness/session/{id}/steer   {message} → 200 {delivered} | 409 no turn | 422 engine cannot steer
//	POST   /api/harness/session/{id}/plan    {decision, mode?, feedback?} → 200 {decided} | 400 | 409 no plan waits
//	POST   /api/harness/interrupt        {sessionId} → 200 {interrupted} | 404
//	POST   /api/harness/approval         {sessionId, requestId, decision, message?, updatedInput?} → 200 {resolved} | 404 | 409
//	GET    /api/harness/personas         ?projectRoot= → 200 [persona]
//	GET    /api/harness/trust            ?projectRoot= → 200 {items: [{kind, name, path?, hash, changes?, definition?, reason}], recordError?}
//	POST   /api/harness/trust            {projectRoot, kind, name|path, hash} → 200 {trusted} | 404 | 409 (changed since shown)
//	GET    /api/harness/engines          → 200 [{name, available, controls: {fork, rewind}, …}]
//	GET    /api/harness/roots            → 200 {roots, demo}
//	GET    /api/harness/health           → 200 {ok, claudeVersion, defaultEngine, engines}
//	GET    /api/harness/usage            → 200 {total, groups, rateLimits} (?by=session|engine|model|day&since=&projectRoot=)
//	GET    /api/harness/nodes            → 200 [{node, state, clusterAddr, startedAt, lastSeen, sessions}] on a cluster node (serve --node) | 404
//	POST   /api/harness/session/{id}/move {node} → 200 {sessionId, from, node, lastSeq} on a cluster node | 404 | 409 turn runs | 422 root not seen | 503 target down
//	GET    /api/harness/openapi.json     → 200 the OpenAPI document
//	POST   /api/harness/mcp              the harness as an MCP server, streamable HTTP (package mcpserver's tools)
//	GET    /api/harness/mcp              its server-to-client stream (SSE)
//	DELETE /api/harness/mcp              ends an MCP session (Mcp-Session-Id)
//	                                     (at most Config.MaxMCPSessions open, 128 by default: at the
//	                                     cap the idlest session idle 1 min is closed, else 503 + Retry-After)
//	GET    /…                            the web console (Config.Console), no token needed
//
// A session created with isolation "worktree" runs in a git worktree of
// its own, on a new branch (branch, default harness/<short id>) from base
// (default: the project's HEAD; 422 when the project is not in a git
// repository or the base is no commit); the session shows isolation,
// workdir, branch and base. Its diff is everything changed since the
// base, untracked files included; a merge (squash by default, merge or
// rebase) commits its uncommitted changes on its branch, then moves into
// (default: the branch the project has checked out, whose tree follows as
// after git merge) only when the merge is clean: 409 with the conflicting
// paths, with the project's tree dirty, or while a turn runs, the target
// untouched. DELETE removes the worktree and the branch; with unmerged
// changes, 409 unless ?force=1. Such a session cannot be forked (422):
// create another with base set to its branch.
//
// A session's prompt queue (issue 32): POST /turn with queue true on a
// busy session queues the message (202; without queue a busy session is
// 409, as the specification says). Queued prompts run in order, each as
// its own turn, started by the core when the session's turn ends
// (whichever door started it); the queue is stored with the session and
// a server started again goes on with it (`harness serve`). At most 100
// prompts (429) of at most 256 KiB (422). prompt:queued and
// prompt:dequeued events say what happens in the session's stream.
//
// POST /session/{id}/steer puts a message into the running turn where
// the engine can take it (harness.Steer): 200, 409 when no turn runs,
// 422 naming the engines that can. POST /session/{id}/plan decides the
// plan a turn waits with (plan:ready): approve (mode) or revise
// (feedback); 409 when no plan waits.
//
// A session created with sandbox true (or any session of a server run
// with --sandbox) runs its agent in the kernel sandbox (package sandbox):
// the agent and everything it starts may write only the session's
// workdir minus its protected paths, the agent's own state directories
// and a private temporary directory. A turn on a kernel without Landlock
// fails with 503 (harness.ErrSandboxUnavailable), never unsandboxed.
//
// Both streams send 004's UIEvent union (chat:delta, chat:complete,
// tool:start, tool:result, session:init, session:complete, session:error,
// process:exit) unless the request asks for extension types with ?events=
// (all, or groups: package internal/eventsel); records left out keep their
// seq, so the ids sent have gaps and Last-Event-ID resumes across them.
//
// Every event goes out as "id: <seq>" and "data: <json>", flushed at
// once; a ": heartbeat" comment every 15 s keeps proxies from timing the
// stream out (package internal/sse, the SSE writer every door shares). An
// event a client does not take within Config.WriteTimeout (10 s) drops
// the stream: it comes back with Last-Event-ID. Stored events are copied
// from the event log a buffer at a time, so a stream holds tens of KB
// whatever the log holds. Streams are capped per server and per session
// (Config.MaxStreams, MaxSessionStreams: 256 and 64 by default); beyond,
// 503 with Retry-After (a turn refused so does not start). Errors are {"error": "…"} with the status statusOf gives,
// the message cut to 512 bytes (client input is never echoed whole).
//
// Safety, in the order a request meets it (package internal/httpguard,
// the guard every HTTP door shares): the Host header must name this
// server (loopback names, the bound host, Config.AllowHosts) against DNS
// rebinding (403); a request with an Origin must come from this server or
// Config.AllowOrigins, on every route (403; CORS, with preflight, for the
// allowed ones only); with a token, every /api route — an unknown one
// too — needs "Authorization: Bearer <token>" (constant-time compare,
// 401); a POST or PATCH body must be application/json (415); bodies are
// capped at Config.MaxBody (413) and must arrive within
// Config.BodyTimeout (408). Project roots are checked by the Harness (403
// outside the allowed roots), and tool permissions come from personas and
// server configuration only: no request field can widen them. What an
// agent can write (persona files, session files, .mcp.json) widens
// nothing until a person trusts it: the trust routes show what waits and
// take a person's trust, by the hash of what they were shown (package
// trust; the record lives outside every project).
//
// # Adding a route, a field or an event
//
// The wire schema is written once, in Go; go generate ./gateway writes
// openapi.json (GenerateOpenAPI) and the TypeScript client's zod schemas
// made from it (clients/typescript/src/generated.ts, package
// internal/zodgen). Never edit either file: TestOpenAPIIsGenerated and
// TestTypeScriptSchemasAreGenerated fail when one is stale.
//
//   - A route: write its handler (a method of *Gateway) in a file of its
//     own, and add one entry to routeTable (routes.go): method, path,
//     handler, and what the document says of it (operation: ID, summary,
//     parameters, the Go type of its body, its replies with the Go types
//     of their bodies, its error statuses). The router registers exactly
//     the entries of routeTable. A body is a named Go struct with json
//     tags, never map[string]any; give a new one a name in the document
//     with an entry in components (openapigen.go) when clients use it.
//   - A field: add it to the Go struct the gateway writes or reads, with
//     its json tag; say what it means in a doc:"…" tag and what Go's types
//     cannot in an oa:"…" tag (required, enum=a|b, open, format=…, min=…,
//     nullable, …: schema.go lists them). A response field without
//     omitempty is required; a request field is optional unless tagged
//     required. Then go generate ./gateway.
//   - An event type: its const and its entry in event.Types, its payload
//     struct and the pointer field of event.Event (and the encoder), and
//     one entry in eventPayloads (openapigen.go): the Event schema, the
//     type's own schema (ChatDeltaEvent, …) and KnownEvent follow.
//     TestEventsMatchTheirSchemas checks the encoder's output against them.
package gateway
