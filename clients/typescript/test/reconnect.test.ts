// The client's request and resume logic against a small in-process stub of
// the gateway that drops streams on purpose (no harness binary needed).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { HarnessClient, HarnessError, type HarnessEvent } from "../src/index.js";

const SID = "sess-1";

// The stored log: an earlier turn (seq 1-3) and the current one (4-9).
const log: Record<string, unknown>[] = [
  { type: "chat:delta", text: "old" },
  { type: "chat:complete", text: "old" },
  { type: "process:exit", code: 0 },
  { type: "session:init", claudeSessionId: "c", model: "m", tools: [] },
  { type: "chat:delta", text: "Hel" },
  { type: "chat:delta", text: "lo" },
  { type: "brand:new", whatever: 1 },
  { type: "session:complete", costUsd: 0.5, usage: {}, numTurns: 1, durationMs: 3 },
  { type: "process:exit", code: 0 },
].map((e, i) => ({ ...e, sessionId: SID, seq: i + 1 }));

const frame = (e: Record<string, unknown>) => `id: ${e.seq}\ndata: ${JSON.stringify(e)}\n\n`;

let server: http.Server;
let base: string;
const seen: { method: string; url: string; auth?: string; lastEventId?: string }[] = [];
let turnMode: "drop-after-2" | "drop-at-once" | "busy" = "drop-after-2";

before(async () => {
  server = http.createServer((req, res) => {
    const rec: (typeof seen)[number] = { method: req.method!, url: req.url! };
    if (req.headers.authorization) rec.auth = req.headers.authorization;
    if (req.headers["last-event-id"]) rec.lastEventId = String(req.headers["last-event-id"]);
    seen.push(rec);
    const sse = () => res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
    if (req.headers.authorization !== "Bearer tok") {
      res.writeHead(401, { "Content-Type": "application/json" }).end('{"error":"unauthorized"}');
      return;
    }
    if (req.method === "POST" && req.url === "/api/harness/turn") {
      if (turnMode === "busy") {
        res.writeHead(409, { "Content-Type": "application/json" }).end('{"error":"a turn is running"}');
        return;
      }
      sse();
      res.write(": heartbeat\n\n");
      if (turnMode === "drop-after-2") {
        res.write(frame(log[3]!) + frame(log[4]!) + "id: 6\ndata: {\"type\":\"chat:de");
      }
      // Cut the connection mid-stream.
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    }
    const m = /^\/api\/harness\/session\/([^/]+)\/events\?after=(\d+)$/.exec(req.url!);
    if (req.method === "GET" && m) {
      const from = Number(req.headers["last-event-id"] ?? m[2]);
      sse();
      for (const e of log) if ((e.seq as number) > from) res.write(frame(e));
      res.end();
      return;
    }
    if (req.method === "POST" && req.url === "/api/harness/interrupt") {
      res.writeHead(404, { "Content-Type": "application/json" }).end('{"error":"no running turn"}');
      return;
    }
    res.writeHead(404, { "Content-Type": "application/json" }).end('{"error":"not found"}');
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => new Promise<void>((r) => server.close(() => r())));

const client = () => new HarnessClient({ baseUrl: base, token: "tok", reconnect: { initialDelayMs: 10 } });

test("a dropped turn stream resumes from /events with Last-Event-ID, without gaps or repeats", async () => {
  turnMode = "drop-after-2";
  seen.length = 0;
  const reconnects: (number | undefined)[] = [];
  const comments: string[] = [];
  const stream = await client().startTurn(SID, "hi", {
    onReconnect: (i) => reconnects.push(i.lastEventId),
    onComment: (c) => comments.push(c),
  });
  const got: HarnessEvent[] = [];
  for await (const e of stream) got.push(e);
  assert.deepEqual(
    got.map((e) => e.seq),
    [4, 5, 6, 7, 8, 9],
  );
  assert.equal(got[3]!.type, "unknown");
  assert.equal(got.at(-1)!.type, "process:exit");
  assert.deepEqual(reconnects, [5]);
  assert.ok(comments.includes("heartbeat"));
  const resume = seen.find((s) => s.method === "GET")!;
  assert.equal(resume.lastEventId, "5");
  assert.equal(resume.auth, "Bearer tok");
  assert.equal(stream.lastSeq, 9);
});

test("a turn stream that drops before any event resumes with the log's last turn", async () => {
  turnMode = "drop-at-once";
  const stream = await client().startTurn(SID, "hi");
  const got: HarnessEvent[] = [];
  for await (const e of stream) got.push(e);
  assert.deepEqual(
    got.map((e) => e.seq),
    [4, 5, 6, 7, 8, 9],
  );
});

test("HTTP errors become HarnessError with the body's message", async () => {
  turnMode = "busy";
  await assert.rejects(client().startTurn(SID, "hi"), (err: unknown) => {
    assert.ok(err instanceof HarnessError);
    assert.equal(err.status, 409);
    assert.equal(err.message, "a turn is running");
    return true;
  });
  await assert.rejects(new HarnessClient({ baseUrl: base }).listSessions(), (err: unknown) => {
    return err instanceof HarnessError && err.status === 401 && err.message === "unauthorized";
  });
  await assert.rejects(client().getSession("nope"), (err: unknown) => err instanceof HarnessError && err.status === 404);
  assert.equal(await client().interrupt(SID), false);
});

test("sessionEvents replays the stored log and honours after", async () => {
  const all: HarnessEvent[] = [];
  for await (const e of client().sessionEvents(SID)) all.push(e);
  assert.equal(all.length, 9);
  const tail: HarnessEvent[] = [];
  for await (const e of client().sessionEvents(SID, { after: 7 })) tail.push(e);
  assert.deepEqual(
    tail.map((e) => e.seq),
    [8, 9],
  );
});

test("breaking out of a stream and aborting with a signal both stop cleanly", async () => {
  for await (const e of client().sessionEvents(SID)) {
    assert.equal(e.seq, 1);
    break;
  }
  const ctl = new AbortController();
  ctl.abort();
  await assert.rejects(async () => {
    for await (const _ of client().sessionEvents(SID, { signal: ctl.signal })) {
      /* nothing */
    }
  });
});
