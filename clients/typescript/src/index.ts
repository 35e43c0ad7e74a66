// @chirality/harness-client: a typed client for the harness gateway.
//
// This entry runs in browsers and in Node (fetch, streams and zod only):
// the REST routes, SSE over fetch, the approval call and the schemas. The
// JSON-RPC client of `harness rpc` spawns a child process, so it is Node
// only and lives at its own subpath: "@chirality/harness-client/rpc".
export * from "./schemas.js";
export * from "./sse.js";
export * from "./client.js";
export * from "./agent.js";
