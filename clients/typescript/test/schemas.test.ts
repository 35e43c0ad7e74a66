// Unit tests of the event and body schemas (no server needed).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  EventShapeError,
  SessionSchema,
  SessionSummarySchema,
  QueuedAnswerSchema,
  QueueSchema,
  QueueEditRequestSchema,
  parseEvent,
  type HarnessEvent,
} from "../src/schemas.js";

const sid = "s1";

test("every known event type parses, with seq taken from the SSE id", () => {
  const samples: Record<string, unknown>[] = [
    { type: "session:init", sessionId: sid, claudeSessionId: "c", model: "m", tools: ["Bash"], cliVersion: "2.1" },
    { type: "chat:delta", sessionId: sid, text: "he" },
    { type: "thinking:delta", sessionId: sid, text: "hm", parentToolUseId: "tu" },
    { type: "chat:complete", sessionId: sid, text: "hello" },
    { type: "tool:start", sessionId: sid, toolUseId: "t1", name: "Bash", input: { command: "ls" } },
    { type: "tool:result", sessionId: sid, toolUseId: "t1", content: "a\nb", isError: false },
    { type: "session:complete", sessionId: sid, costUsd: 0.01, usage: { input_tokens: 3 }, numTurns: 2, durationMs: 40 },
    { type: "session:error", sessionId: sid, error: "boom", kind: "api_error", apiErrorStatus: 500 },
    { type: "process:exit", sessionId: sid, code: -1, signal: "SIGKILL" },
    { type: "user:message", sessionId: sid, text: "hello" },
    { type: "approval:requested", sessionId: sid, requestId: "apr_1", toolUseId: "t1", toolName: "Bash", input: { command: "touch x" }, suggestions: null, expiresAt: "2026-11-22T00:00:00Z" },
    { type: "approval:resolved", sessionId: sid, requestId: "apr_1", decision: "deny", by: "timeout", message: "no answer" },
    { type: "session:forked", sessionId: sid, from: "s0", atSeq: 12 },
    { type: "session:rewound", sessionId: sid, toTurn: 3, files: ["a.txt"], conversation: true },
    { type: "session:rewound", sessionId: sid, toTurn: 3, files: null, conversation: false },
    { type: "trust:required", sessionId: sid, kind: "persona", name: "worker", path: "/p/agents/AGENT_worker.md", hash: "sha256:ab",
      changes: [{ field: "auto_approve_tools", trusted: "(not set)", now: "Bash" }], message: "not honoured" },
    { type: "trust:required", sessionId: sid, kind: "session", rules: ["Bash"], message: "not honoured" },
    { type: "session:complete", sessionId: sid, costUsd: 0, usage: null, numTurns: 1, durationMs: 4, checkpoint: "uuid-1" },
    { type: "prompt:queued", sessionId: sid, promptId: "p1", position: 0, message: "next" },
    { type: "prompt:dequeued", sessionId: sid, promptId: "p1", reason: "started" },
    { type: "prompt:dequeued", sessionId: sid, promptId: "p2", reason: "failed", error: "no engine" },
  ];
  samples.forEach((raw, i) => {
    const ev = parseEvent(raw, i + 1);
    assert.equal(ev.type, raw.type);
    assert.equal(ev.seq, i + 1);
  });
});

test("a seq field in the data wins over the SSE id", () => {
  assert.equal(parseEvent({ type: "chat:delta", sessionId: sid, text: "x", seq: 9 }, 4).seq, 9);
});

test("unknown event types are kept as type 'unknown'", () => {
  const ev = parseEvent({ type: "future:thing", sessionId: sid, foo: 1 }, 3);
  assert.deepEqual(ev, {
    type: "unknown",
    originalType: "future:thing",
    sessionId: sid,
    seq: 3,
    data: { type: "future:thing", sessionId: sid, foo: 1, seq: 3 },
  });
});

test("extra fields on known events pass through; unknown error kinds are kept", () => {
  const ev = parseEvent({ type: "session:error", sessionId: sid, error: "x", kind: "brand_new", extra: true });
  assert.equal(ev.type, "session:error");
  if (ev.type === "session:error") {
    assert.equal(ev.kind, "brand_new");
    assert.equal((ev as Record<string, unknown>).extra, true);
  }
});

test("a malformed known event throws EventShapeError", () => {
  assert.throws(() => parseEvent({ type: "chat:delta", sessionId: sid }), EventShapeError);
  assert.throws(() => parseEvent({ type: "process:exit", sessionId: sid, code: "0" }), EventShapeError);
  assert.throws(() => parseEvent("nope"), EventShapeError);
});

test("types narrow on the discriminant", () => {
  const ev: HarnessEvent = parseEvent({ type: "tool:result", sessionId: sid, toolUseId: "t", content: "c", isError: true });
  switch (ev.type) {
    case "tool:result":
      assert.equal(ev.isError, true);
      break;
    default:
      assert.fail("wrong type");
  }
});

test("session and summary schemas", () => {
  const s = {
    id: "a",
    createdAt: "2026-01-01T00:00:00Z",
    updatedAt: "2026-01-01T00:00:00Z",
    projectRoot: "/p",
    persona: null,
    mode: "direct",
    claudeSessionId: null,
    schemaVersion: 1,
  };
  assert.deepEqual(SessionSchema.parse(s), s);
  // A summary has what GET /session/list always sends (the document
  // requires it); a field the client does not know passes through.
  const summary = { ...s, engine: "claude-code", title: "t", costUsd: 0, running: false, pendingApprovals: 0 };
  assert.equal(SessionSummarySchema.parse({ ...summary, turns: 3 }).id, "a");
  assert.throws(() => SessionSummarySchema.parse({ ...summary, running: "no" }));
  assert.throws(() => SessionSchema.parse({ ...s, mode: "other" }));
});

test("session:forked and session:rewound are typed; a malformed one is an EventShapeError", () => {
  const f = parseEvent({ type: "session:forked", sessionId: sid, from: "s0", atSeq: 0, seq: 5 });
  assert.equal(f.type, "session:forked");
  if (f.type === "session:forked") assert.equal(f.from, "s0");
  const r = parseEvent({ type: "session:rewound", sessionId: sid, toTurn: 2, files: ["x"], conversation: false });
  if (r.type !== "session:rewound") assert.fail(r.type);
  assert.deepEqual(r.files, ["x"]);
  assert.throws(() => parseEvent({ type: "session:rewound", sessionId: sid, toTurn: "2", files: [], conversation: true }), EventShapeError);
  assert.throws(() => parseEvent({ type: "session:forked", sessionId: sid, atSeq: 1 }), EventShapeError);
});

test("lastTurn leaves out the markers between turns", async () => {
  const { lastTurn } = await import("../src/client.js");
  const evs = [
    { type: "user:message", sessionId: sid, text: "a", seq: 1 },
    { type: "process:exit", sessionId: sid, code: 0, seq: 2 },
    { type: "session:rewound", sessionId: sid, toTurn: 1, files: [], conversation: true, seq: 3 },
    { type: "user:message", sessionId: sid, text: "b", seq: 4 },
    { type: "chat:delta", sessionId: sid, text: "x", seq: 5 },
  ].map((e) => parseEvent(e));
  assert.deepEqual(lastTurn(evs).map((e) => e.seq), [4, 5]);
});

test("MCP server statuses parse on session:init and on a session; a malformed one throws", () => {
  const servers = [{ name: "everything", status: "connected" }, { name: "broken", status: "failed", error: "spawn ENOENT" }];
  const ev = parseEvent({ type: "session:init", sessionId: sid, claudeSessionId: "c", model: "m", tools: [], mcpServers: servers });
  assert.equal(ev.type, "session:init");
  if (ev.type === "session:init") assert.deepEqual(ev.mcpServers, servers);
  const s = SessionSchema.parse({
    id: "i", createdAt: "t", updatedAt: "t", projectRoot: "/p", persona: null, mode: "direct", claudeSessionId: null,
    schemaVersion: 1, mcpServers: servers,
  });
  assert.equal(s.mcpServers?.[1]?.error, "spawn ENOENT");
  assert.throws(() => parseEvent({ type: "session:init", sessionId: sid, claudeSessionId: "c", model: "m", tools: [], mcpServers: [{ status: 1 }] }), EventShapeError);
});

test("the prompt queue's bodies parse, and a bad edit is refused before it is sent", () => {
  assert.deepEqual(QueuedAnswerSchema.parse({ queued: true, promptId: "p1", position: 2 }), { queued: true, promptId: "p1", position: 2 });
  assert.throws(() => QueuedAnswerSchema.parse({ queued: false, promptId: "p1", position: 0 }));
  const q = QueueSchema.parse({ prompts: [{ promptId: "p1", message: "m", queuedAt: "2026-11-26T00:00:00Z" }] });
  assert.equal(q.prompts[0]!.message, "m");
  assert.throws(() => QueueEditRequestSchema.parse({ position: -1 }));
  assert.throws(() => QueueEditRequestSchema.parse({ message: "" }));
  assert.throws(() => QueueEditRequestSchema.parse({ other: 1 }));
});
