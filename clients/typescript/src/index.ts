// @chirality/harness-client: a typed client for the harness gateway.
export * from "./schemas.js";
export * from "./sse.js";
export * from "./client.js";
export * from "./agent.js";
export * from "./rpc.js";
