// Package gateway serves a harness.Harness over HTTP at /api/harness: the
// routes the web console and the TypeScript client use.
//
//	h, _ := harness.New(harness.Config{Roots: roots})
//	gw, _ := gateway.New(gateway.Config{Harness: h, Addr: "127.0.0.1:8787", Token: tok})
//	srv := &http.Server{Handler: gw}
//	…
//	gw.Close()              // end open event streams
//	h.Shutdown(ctx)         // interrupt turns, wait, kill what is left
//
// Routes (openapi.json, served at /api/harness/openapi.json, has the
// shapes):
//
//	POST   /api/harness/session/create   {projectRoot, persona, mode} → 201 {session}
//	GET    /api/harness/session/list     ?projectRoot= → 200 [SessionSummary]
//	GET    /api/harness/session/{id}     → 200 {session}
//	DELETE /api/harness/session/{id}     → 204
//	GET    /api/harness/session/{id}/events  SSE: stored after Last-Event-ID / ?after=, then live
//	POST   /api/harness/turn             {sessionId, message} → 200 SSE of the turn
//	POST   /api/harness/interrupt        {sessionId} → 200 | 404
//	GET    /api/harness/personas         ?projectRoot= → 200 [persona]
//	GET    /api/harness/health           → 200 {ok, claudeVersion}
//
// Every event goes out as "id: <seq>" and "data: <json>", flushed at
// once; a ": heartbeat" comment every 15 s keeps proxies from timing the
// stream out. Errors are {"error": "…"} with the status statusOf gives.
//
// Safety, in the order a request meets it: the Host header must name this
// server (loopback names, the bound host, Config.AllowHosts) against DNS
// rebinding; a cross-origin request must come from Config.AllowOrigins
// (CORS, with preflight); with a token, every /api route needs
// "Authorization: Bearer <token>" (constant-time compare); bodies are
// capped at Config.MaxBody (413). Project roots are checked by the
// Harness (403 outside the allowed roots), and tool permissions come from
// personas and server configuration only: no request field can widen them.
package gateway
