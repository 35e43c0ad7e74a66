// Unit tests of the console's event model and SSE parser: node --test web/jstest/
import { test } from "node:test";
import assert from "node:assert/strict";
import { Transcript, truncateLines, toolSummary, formatCost, retrySummary, diffLines, markerText, mcpSummary, titleOf, errorHint } from "../static/transcript.js";
import { SSEParser } from "../static/sse.js";

const S = "s1";
let seq = 0;
const ev = (type, fields = {}) => ({ type, sessionId: S, seq: ++seq, ...fields });

function turnEvents() {
  return [
    ev("session:init", { claudeSessionId: "c1", model: "claude-x", tools: ["Bash"] }),
    ev("thinking:delta", { text: "Let me " }),
    ev("thinking:delta", { text: "look." }),
    ev("chat:delta", { text: "I will **list**" }),
    ev("chat:delta", { text: " files." }),
    ev("tool:start", { toolUseId: "t1", name: "Bash", input: { command: "ls -la" } }),
    ev("tool:result", { toolUseId: "t1", content: "a\nb", isError: false }),
    ev("chat:delta", { text: "Done." }),
    ev("chat:complete", { text: "Done." }),
    ev("future:event", { anything: true }),
    ev("session:complete", { costUsd: 0.0123, usage: {}, numTurns: 2, durationMs: 1500 }),
    ev("process:exit", { code: 0 }),
  ];
}

test("folds a turn into thinking, text and tool blocks", () => {
  const t = new Transcript();
  t.addUser("hello", { local: true });
  for (const e of turnEvents()) assert.equal(t.apply(e), true);
  assert.equal(t.turns.length, 1);
  const turn = t.turns[0];
  assert.equal(turn.user, "hello");
  assert.deepEqual(
    turn.blocks.map((b) => [b.kind, b.text ?? b.name]),
    [
      ["thinking", "Let me look."],
      ["text", "I will **list** files."],
      ["tool", "Bash"],
      ["text", "Done."],
    ],
  );
  assert.deepEqual(turn.blocks[2].result, { content: "a\nb", isError: false });
  assert.equal(turn.cost.costUsd, 0.0123);
  assert.equal(turn.status, "done");
  assert.equal(turn.unknown.length, 1);
  assert.equal(t.running, false);
});

test("skips replayed events and starts a new turn after process:exit", () => {
  const t = new Transcript();
  const first = turnEvents();
  for (const e of first) t.apply(e);
  for (const e of first) assert.equal(t.apply(e), false, "a replayed event is skipped");
  t.apply(ev("chat:delta", { text: "second" }));
  assert.equal(t.turns.length, 2);
  assert.equal(t.running, true);
  t.apply(ev("session:error", { error: "stopped", kind: "interrupted" }));
  t.apply(ev("process:exit", { code: -1, signal: "SIGINT" }));
  assert.equal(t.turns[1].status, "interrupted");
  assert.equal(t.running, false);
});

test("chat:complete fills in text the deltas missed", () => {
  const t = new Transcript();
  t.apply(ev("chat:complete", { text: "whole answer" }));
  assert.equal(t.turns[0].blocks[0].text, "whole answer");
  const u = new Transcript();
  u.apply(ev("chat:delta", { text: "whole" }));
  u.apply(ev("chat:complete", { text: "whole answer" }));
  assert.equal(u.turns[0].blocks.length, 1);
  assert.equal(u.turns[0].blocks[0].text, "whole answer");
});

test("subagent events go into their Task tool card", () => {
  const t = new Transcript();
  t.apply(ev("tool:start", { toolUseId: "task1", name: "Task", input: { prompt: "explore" } }));
  t.apply(ev("chat:delta", { text: "sub says", parentToolUseId: "task1" }));
  t.apply(ev("tool:start", { toolUseId: "t2", name: "Read", input: {}, parentToolUseId: "task1" }));
  t.apply(ev("tool:result", { toolUseId: "t2", content: "x", isError: true, parentToolUseId: "task1" }));
  const card = t.turns[0].blocks[0];
  assert.equal(t.turns[0].blocks.length, 1);
  assert.deepEqual(card.blocks.map((b) => b.kind), ["text", "tool"]);
  assert.equal(card.blocks[1].result.isError, true);
});

test("a gateway-logged user event names the turn", () => {
  const t = new Transcript();
  t.addUser("local copy", { local: true });
  t.apply(ev("user:message", { text: "from the log" }));
  t.apply(ev("chat:delta", { text: "hi" }));
  assert.equal(t.turns.length, 1);
  assert.equal(t.turns[0].user, "from the log");
});

test("malformed events never throw", () => {
  const t = new Transcript();
  for (const bad of [null, 1, "x", {}, { type: 5 }, { type: "tool:result", toolUseId: "nope" }, { type: "chat:delta" }]) {
    t.apply(bad);
  }
  assert.ok(t.turns.length <= 1);
});

test("truncateLines", () => {
  const lines = Array.from({ length: 250 }, (_, i) => `line ${i + 1}`).join("\n");
  const r = truncateLines(lines, 100);
  assert.equal(r.text.split("\n").length, 100);
  assert.equal(r.more, 150);
  assert.deepEqual(truncateLines("a\nb", 100), { text: "a\nb", more: 0 });
  assert.deepEqual(truncateLines(Array(100).fill("x").join("\n") + "\n", 100).more, 0);
  assert.equal(truncateLines(Array(101).fill("x").join("\n"), 100).more, 1);
});

test("toolSummary and formatCost", () => {
  assert.equal(toolSummary("Bash", { command: "ls\n -la" }), "ls -la");
  assert.equal(toolSummary("Read", { file_path: "/a/b" }), "/a/b");
  assert.equal(toolSummary("X", null), "");
  assert.equal(formatCost(0.0123), "$0.01");
  assert.equal(formatCost(0.001234), "$0.0012");
  assert.equal(formatCost(1.5), "$1.50");
});

test("the console's SSE parser handles ids, comments and split CRLF", () => {
  const text = ': heartbeat\r\n\r\nid: 4\r\ndata: {"a":1}\r\n\r\nid: 5\ndata: x\ndata: y\n\n';
  for (let cut = 0; cut <= text.length; cut++) {
    const comments = [];
    const p = new SSEParser((c) => comments.push(c));
    const out = [...p.feed(text.slice(0, cut)), ...p.feed(text.slice(cut))];
    assert.deepEqual(out, [
      { event: "message", data: '{"a":1}', id: "4" },
      { event: "message", data: "x\ny", id: "5" },
    ]);
    assert.deepEqual(comments, ["heartbeat"]);
  }
});

test("a native tool's one-field JSON answer is shown as its text", () => {
  const t = new Transcript();
  t.addUser("list", { local: true });
  for (const e of [
    ev("user:message", { text: "list" }),
    ev("tool:start", { toolUseId: "n1", name: "list_dir", input: { path: "." } }),
    ev("tool:result", { toolUseId: "n1", content: JSON.stringify({ entries: "total 24\ndrwx a\n-rw- b" }), isError: false }),
    ev("tool:start", { toolUseId: "n2", name: "read", input: { path: "x" } }),
    ev("tool:result", { toolUseId: "n2", content: JSON.stringify({ error: "no such file" }), isError: true }),
    ev("process:exit", { code: 0 }),
  ]) {
    t.apply(e);
  }
  const tools = t.turns.at(-1).blocks.filter((b) => b.kind === "tool");
  assert.equal(tools[0].result.content, "total 24\ndrwx a\n-rw- b");
  assert.equal(tools[1].result.content, "no such file");
  assert.equal(tools[1].result.isError, true);
});

test("resultText keeps every other result as it is", async () => {
  const { resultText } = await import("../static/transcript.js");
  assert.equal(resultText("plain\ntext"), "plain\ntext");
  assert.equal(resultText('{"a":"x","b":"y"}'), '{"a":"x","b":"y"}', "two fields");
  assert.equal(resultText('{"n":3}'), '{"n":3}', "not a string field");
  assert.equal(resultText('["x"]'), '["x"]');
  assert.equal(resultText("{not json"), "{not json");
  assert.equal(resultText('{"content":""}'), "");
  assert.equal(resultText(undefined), '""');
});

test("retrySummary says what the Go doors say", () => {
  assert.equal(retrySummary({ type: "session:retry", attempt: 3, maxRetries: 10, delayMs: 4045, error: "API unreachable" }),
    "Retrying 3/10 in 4 s — API unreachable");
  assert.equal(retrySummary({ type: "session:retry", attempt: 1, maxRetries: 10, delayMs: 583, error: "overloaded", apiErrorStatus: 529 }),
    "Retrying 1/10 in 0.6 s — overloaded (HTTP 529)");
  assert.equal(retrySummary({ type: "session:retry", attempt: 2, maxRetries: 0, delayMs: 1500, error: "x" }), "Retrying 2 in 2 s — x");
  assert.equal(retrySummary({ type: "session:retry", attempt: 4, maxRetries: 0, delayMs: 0, error: "Connection failed" }), "Retrying 4 — Connection failed");
});

// A whole logged turn: user:message first, process:exit last.
function loggedTurn(text, answer = "ok") {
  return [
    ev("user:message", { text }),
    ev("session:init", { claudeSessionId: "c1", model: "m", tools: [] }),
    ev("chat:delta", { text: answer }),
    ev("session:complete", { costUsd: 0, usage: {}, numTurns: 1, durationMs: 5, checkpoint: "x" }),
    ev("process:exit", { code: 0 }),
  ];
}

test("each turn knows the seq of its user message and of its last event", () => {
  const t = new Transcript();
  const a = loggedTurn("first");
  const b = loggedTurn("second");
  for (const e of [...a, ...b]) t.apply(e);
  assert.equal(t.turns.length, 2);
  assert.equal(t.turns[0].userSeq, a[0].seq, "toTurn of a rewind");
  assert.equal(t.turns[0].lastSeq, a.at(-1).seq, "atSeq of a fork");
  assert.equal(t.turns[1].userSeq, b[0].seq);
  // A message sent from this browser gets its seq when the log's copy comes.
  const u = new Transcript();
  u.addUser("typed here", { local: true });
  assert.equal(u.turns[0].userSeq, null);
  const c = loggedTurn("typed here");
  for (const e of c) u.apply(e);
  assert.equal(u.turns.length, 1);
  assert.equal(u.turns[0].userSeq, c[0].seq);
});

test("session:rewound is a marker between turns; the undone turns are kept, marked rewound", () => {
  const t = new Transcript();
  const a = loggedTurn("keep me");
  const b = loggedTurn("undo me");
  const c = loggedTurn("and me");
  for (const e of [...a, ...b, ...c]) t.apply(e);
  t.apply(ev("session:rewound", { toTurn: b[0].seq, files: ["a.txt", "b.txt"], conversation: true }));
  assert.equal(t.running, false, "a marker is not a running turn");
  assert.equal(t.turns.length, 4);
  const m = t.turns[3];
  assert.deepEqual(m.marker, { type: "session:rewound", toTurn: b[0].seq, files: ["a.txt", "b.txt"], conversation: true });
  assert.deepEqual(t.turns.map((x) => x.rewound), [false, true, true, false]);
  assert.equal(markerText(m.marker, "undo me"), "Rewound to before “undo me”: 2 files restored, conversation cut.");
  // The next turn is a new one after the marker, and is not rewound.
  for (const e of loggedTurn("after")) t.apply(e);
  assert.equal(t.turns.length, 5);
  assert.equal(t.turns[4].user, "after");
  assert.equal(t.turns[4].rewound, false);
  // A later rewind of files only marks nothing.
  t.apply(ev("session:rewound", { toTurn: a[0].seq, files: ["a.txt"], conversation: false }));
  assert.equal(t.turns[0].rewound, false);
  assert.equal(markerText(t.turns.at(-1).marker), "Rewound to before a turn: 1 file restored.");
});

test("session:forked after the copied history is a marker; replay skips it", () => {
  const t = new Transcript();
  const copied = loggedTurn("from the source");
  for (const e of copied) t.apply(e);
  const f = ev("session:forked", { from: "0f1e2d3c-aaaa-4bbb-8ccc-123456789abc", atSeq: copied.at(-1).seq });
  assert.equal(t.apply(f), true);
  assert.equal(t.apply(f), false, "a replayed marker is skipped");
  assert.equal(t.turns.length, 2);
  assert.equal(t.turns[1].marker.from, "0f1e2d3c-aaaa-4bbb-8ccc-123456789abc");
  assert.match(markerText(t.turns[1].marker), /^Forked from session 0f1e2d3c at event \d+\./);
  assert.equal(t.running, false);
  // Malformed markers never throw and never run.
  t.apply(ev("session:rewound", { toTurn: "x", files: "nope" }));
  t.apply(ev("session:forked", {}));
  assert.equal(t.running, false);
  assert.deepEqual(t.turns.at(-2).marker.files, []);
});

test("diffLines classifies a unified diff's lines", () => {
  const patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-two\n+three\n same\n";
  assert.deepEqual(
    diffLines(patch).map((l) => l.kind),
    ["meta", "meta", "hunk", "del", "add", "ctx"],
  );
  assert.equal(diffLines(patch)[4].text, "+three");
  assert.deepEqual(diffLines(""), []);
  assert.deepEqual(diffLines(undefined), []);
});

test("mcpSummary counts connected servers and says why one failed", () => {
  assert.equal(mcpSummary(undefined), null);
  assert.equal(mcpSummary([]), null);
  assert.equal(mcpSummary([{ status: "connected" }]), null, "an entry without a name is no server");
  const s = mcpSummary([
    { name: "everything", status: "connected" },
    { name: "broken", status: "failed", error: "spawn nope ENOENT" },
    { name: "slow", status: "pending" },
  ]);
  assert.deepEqual(s, {
    text: "MCP 1/3",
    title: "everything: connected\nbroken: failed — spawn nope ENOENT\nslow: pending",
    failed: true,
  });
  assert.equal(mcpSummary([{ name: "a", status: "connected" }]).failed, false);
  assert.ok(mcpSummary([{ name: "a", status: "failed", error: "x".repeat(10000) }]).title.length < 300, "a long error is cut");
});

// Issue 34.6: a new session is named by its first message, as the server
// names it, not by its mode.
test("titleOf is the first line of the message, cut to 80 characters", () => {
  assert.equal(titleOf("  fix the build\nand the tests"), "fix the build");
  assert.equal(titleOf("x".repeat(100)), "x".repeat(79) + "…");
});

// Issue 34.5: "Not logged in · Please run /login" says what the server
// needs (ANTHROPIC_API_KEY) and that the demo needs nothing.
test("errorHint names ANTHROPIC_API_KEY and the demo for not_logged_in only", () => {
  assert.match(errorHint("not_logged_in"), /ANTHROPIC_API_KEY.*harness serve --demo/);
  assert.equal(errorHint("api_error"), "");
});

test("trust:required is a card in its turn, with the change; malformed fields are dropped", () => {
  const t = new Transcript();
  t.apply(ev("user:message", { text: "go" }));
  t.apply(ev("trust:required", { kind: "persona", name: "worker", path: "/p/agents/AGENT_worker.md", hash: "sha256:ab",
    changes: [{ field: "auto_approve_tools", trusted: "(not set)", now: "Bash" }, null], message: "runs with the trusted grants" }));
  t.apply(ev("trust:required", { kind: "session", rules: ["Bash"], changes: "nope", message: "not honoured" }));
  t.apply(ev("session:init", { model: "m" }));
  const turn = t.turns[t.turns.length - 1];
  const cards = turn.blocks.filter((b) => b.kind === "trust");
  assert.equal(cards.length, 2);
  assert.deepEqual(cards[0].changes, [{ field: "auto_approve_tools", trusted: "(not set)", now: "Bash" }]);
  assert.equal(cards[0].hash, "sha256:ab");
  assert.equal(cards[0].trustKind, "persona");
  assert.deepEqual(cards[1].changes, []);
  assert.deepEqual(cards[1].rules, ["Bash"]);
  assert.deepEqual(t.trustNotices().map((b) => b.trustKind), ["persona", "session"]);
});
