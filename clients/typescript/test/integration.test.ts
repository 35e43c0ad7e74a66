// The client against a real `harness serve --demo` (see harness-server.ts).
//
// The demo model answers any message with thinking, streamed markdown, a
// Bash tool use and its result, then a summary; a message containing
// "error" gets an API error; one containing "long" a long slow answer.

import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import {
  HarnessClient,
  HarnessError,
  type HarnessEvent,
  type Session,
  type SessionMode,
  type TurnInfo,
} from "../src/index.js";
import { harnessServer, type TestServer } from "./harness-server.js";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

let srv: TestServer;
let client: HarnessClient;
let personas: string[] = [];

before(async () => {
  srv = await harnessServer();
  // Every type: these tests follow thinking, user messages, forks and rewinds.
  client = new HarnessClient({ baseUrl: srv.url, ...(srv.token ? { token: srv.token } : {}), reconnect: { initialDelayMs: 50 }, events: "all" });
  try {
    personas = (await client.listPersonas()).map((p) => p.id);
  } catch (err) {
    if (!(err instanceof HarnessError && err.status === 404)) throw err;
  }
});

after(async () => {
  await srv?.stop();
});

async function newSession(mode: SessionMode = "direct", persona: string | null = null): Promise<Session> {
  return client.createSession({ projectRoot: srv.root, persona, mode });
}

async function collect(it: AsyncIterable<HarnessEvent>): Promise<HarnessEvent[]> {
  const out: HarnessEvent[] = [];
  for await (const e of it) out.push(e);
  return out;
}

/** Raw request, for what the typed client refuses to send. */
async function raw(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const h: Record<string, string> = { ...headers };
  if (srv.token && !("Authorization" in h)) h["Authorization"] = `Bearer ${srv.token}`;
  if (body !== undefined) h["Content-Type"] = "application/json";
  const init: RequestInit = { method, headers: h };
  if (body !== undefined) init.body = typeof body === "string" ? body : JSON.stringify(body);
  return fetch(`${srv.url}/api/harness/${path}`, init);
}

/** 004's UIEvent union: what the gateway streams unless asked for more. */
const SPEC_TYPES: string[] = ["chat:delta", "chat:complete", "tool:start", "tool:result", "session:init", "session:complete", "session:error", "process:exit"];

function assertSeqs(events: HarnessEvent[]) {
  let prev = 0;
  for (const e of events) {
    assert.equal(typeof e.seq, "number", `event ${e.type} has a seq`);
    assert.ok(e.seq! > prev, `seq ${e.seq} after ${prev} is increasing`);
    prev = e.seq!;
  }
}

/** Waits until the stream has yielded an event matching pred, then hands
 * back the iterator so the caller can keep reading. */
async function readUntil(
  it: AsyncIterator<HarnessEvent>,
  pred: (e: HarnessEvent) => boolean,
  got: HarnessEvent[],
): Promise<void> {
  for (;;) {
    const r = await it.next();
    if (r.done) assert.fail(`stream ended before the awaited event; got ${got.map((e) => e.type).join(", ")}`);
    got.push(r.value);
    if (pred(r.value)) return;
  }
}

describe("harness serve --demo", () => {
  test("health", async () => {
    const h = await client.health();
    assert.equal(h.ok, true);
  });

  test("personas list (when the gateway has the route)", async (t) => {
    if (personas.length === 0) return t.skip("GET /personas answered 404 or an empty list");
    for (const id of personas) assert.equal(typeof id, "string");
  });

  test("create, get, list (newest first), delete", async () => {
    const a = await newSession();
    assert.equal(a.projectRoot, srv.root);
    assert.equal(a.mode, "direct");
    assert.equal(a.claudeSessionId, null);
    const b = await newSession();
    assert.deepEqual((await client.getSession(a.id)).id, a.id);

    const list = await client.listSessions(srv.root);
    const ids = list.map((s) => s.id);
    assert.ok(ids.includes(a.id) && ids.includes(b.id));
    assert.ok(ids.indexOf(b.id) < ids.indexOf(a.id), "newest first");
    assert.ok((await client.listSessions()).some((s) => s.id === a.id), "listed without projectRoot too");

    await client.deleteSession(a.id);
    await assert.rejects(client.getSession(a.id), (e: unknown) => e instanceof HarnessError && e.status === 404);
    await assert.rejects(client.deleteSession(a.id), (e: unknown) => e instanceof HarnessError && e.status === 404);
    await client.deleteSession(b.id);
  });

  test("create with a persona from the picker list", async (t) => {
    if (personas.length === 0) return t.skip("no persona list");
    const s = await newSession("workbench", personas[0]!);
    assert.equal(s.persona, personas[0]);
    await client.deleteSession(s.id);
  });

  test("route errors: 400, 403, 404", async () => {
    let r = await raw("POST", "session/create", { projectRoot: srv.root, persona: null, mode: "nonsense" });
    assert.equal(r.status, 400);
    assert.equal(typeof ((await r.json()) as { error: unknown }).error, "string");
    r = await raw("POST", "session/create", "{not json");
    assert.equal(r.status, 400);
    r = await raw("POST", "session/create", { projectRoot: "/definitely/not/allowed", persona: null, mode: "direct" });
    assert.equal(r.status, 403);
    r = await raw("POST", "session/create", { projectRoot: srv.root, persona: "NO_SUCH_PERSONA", mode: "workbench" });
    assert.equal(r.status, 404);
    r = await raw("POST", "turn", { sessionId: "no-such-session", message: "hi" });
    assert.equal(r.status, 400, "a session id that is not a UUID is rejected before any lookup");
    r = await raw("POST", "turn", { sessionId: "0b7e4c8a-1111-4222-8333-944455556666", message: "hi" });
    assert.equal(r.status, 404);
    const s = await newSession();
    r = await raw("POST", "turn", { sessionId: s.id, message: "" });
    assert.equal(r.status, 400);
    assert.equal(await client.interrupt(s.id), false, "interrupt with no running turn is 404");
    await assert.rejects(client.getSession("no-such-session"), (e: unknown) => e instanceof HarnessError && e.status === 400);
    await assert.rejects(client.getSession("0b7e4c8a-1111-4222-8333-944455556666"), (e: unknown) => e instanceof HarnessError && e.status === 404);
    await client.deleteSession(s.id);
  });

  test("a turn streams thinking, text, a tool use and its result, then completes", async () => {
    const s = await newSession();
    const events = await collect(await client.startTurn(s.id, "Hello, what is in this project?"));
    const types = events.map((e) => e.type);
    assert.equal(types[0], "user:message", `first event: ${types.join(", ")}`);
    assert.equal(types[1], "session:init", `second event: ${types.join(", ")}`);
    const first = events[0]!;
    assert.equal(first.type === "user:message" ? first.text : "", "Hello, what is in this project?");
    assert.equal(types.at(-1), "process:exit");
    assert.equal(types.filter((t) => t === "process:exit").length, 1);
    assert.ok(types.includes("thinking:delta"), "thinking");
    assert.ok(types.filter((t) => t === "chat:delta").length > 1, "text streams in several deltas");
    for (const e of events) if (e.type !== "unknown") assert.equal(e.sessionId, s.id);
    assertSeqs(events);

    const start = events.find((e) => e.type === "tool:start");
    const result = events.find((e) => e.type === "tool:result");
    assert.ok(start && start.type === "tool:start");
    assert.ok(result && result.type === "tool:result");
    assert.equal(start.name, "Bash");
    assert.equal(result.toolUseId, start.toolUseId);
    assert.equal(result.isError, false);
    assert.ok(types.indexOf("tool:start") < types.indexOf("tool:result"));

    const complete = events.find((e) => e.type === "chat:complete");
    assert.ok(complete && complete.type === "chat:complete" && complete.text.length > 0);
    const done = events.find((e) => e.type === "session:complete");
    assert.ok(done && done.type === "session:complete");
    assert.ok(done.costUsd >= 0);
    const exit = events.at(-1)!;
    assert.ok(exit.type === "process:exit" && exit.code === 0);

    const init = events[1]!;
    assert.ok(init.type === "session:init");
    const after = await client.getSession(s.id);
    assert.equal(after.claudeSessionId, init.claudeSessionId, "the session remembers Claude's session id");

    // History: /events replays exactly what the turn streamed.
    const replay = await collect(client.sessionEvents(s.id));
    assert.deepEqual(replay, events);
    // ... and after=N gives only the tail.
    const mid = events[Math.floor(events.length / 2)]!.seq!;
    const tail = await collect(client.sessionEvents(s.id, { after: mid }));
    assert.deepEqual(tail, events.filter((e) => e.seq! > mid));

    // A second turn resumes the same conversation and is appended to the log.
    const second = await collect(await client.startTurn(s.id, "And again?"));
    assert.equal(second.at(-1)!.type, "process:exit");
    assert.ok(second[0]!.seq! > events.at(-1)!.seq!);
    const all = await collect(client.sessionEvents(s.id));
    assert.equal(all.length, events.length + second.length);
    await client.deleteSession(s.id);
  });

  test("a spec-strict client gets 004's eight UIEvent types only, by default, on both streams", async () => {
    const strict = new HarnessClient({ baseUrl: srv.url, ...(srv.token ? { token: srv.token } : {}) });
    const s = await newSession();
    const events = await collect(await strict.startTurn(s.id, "Hello, what is in this project?"));
    const types = events.map((e) => e.type);
    for (const t of types) assert.ok(SPEC_TYPES.includes(t), `${t} is not one of 004's UIEvent types: ${types.join(", ")}`);
    for (const t of ["session:init", "chat:delta", "tool:start", "tool:result", "chat:complete", "session:complete", "process:exit"]) {
      assert.ok(types.includes(t as HarnessEvent["type"]), `${t} in ${types.join(", ")}`);
    }
    assertSeqs(events);
    // The same turn with everything: it had thinking, its user message and usage.
    const all = await collect(client.sessionEvents(s.id));
    for (const t of ["user:message", "thinking:delta", "usage:update"]) assert.ok(all.some((e) => e.type === t), `${t} in the full log`);
    assert.deepEqual(events, all.filter((e) => SPEC_TYPES.includes(e.type)));
    assert.deepEqual(await collect(strict.sessionEvents(s.id)), events);
    // A list asks for some groups only; an unknown name is refused.
    const some = await collect(strict.sessionEvents(s.id, { events: ["usage", "user"] }));
    assert.deepEqual(some, all.filter((e) => SPEC_TYPES.includes(e.type) || ["usage:update", "rate_limit", "user:message"].includes(e.type)));
    const r = await raw("GET", `session/${s.id}/events?events=nope`);
    assert.equal(r.status, 400);
    await client.deleteSession(s.id);
  });

  test("the demo's '/demo error' ends in session:error kind api_error", async () => {
    const s = await newSession();
    const events = await collect(await client.startTurn(s.id, "/demo error"));
    const err = events.find((e) => e.type === "session:error");
    assert.ok(err && err.type === "session:error", `types: ${events.map((e) => e.type).join(", ")}`);
    assert.equal(err.kind, "api_error");
    assert.equal(events.at(-1)!.type, "process:exit");
    assert.ok(!events.some((e) => e.type === "session:complete"));
    await client.deleteSession(s.id);
  });

  test("a long answer can be interrupted; a second turn meanwhile is 409", async () => {
    const s = await newSession();
    const stream = await client.startTurn(s.id, "tell me a long story");
    const it = stream[Symbol.asyncIterator]();
    const got: HarnessEvent[] = [];
    await readUntil(it, (e) => e.type === "chat:delta", got);

    await assert.rejects(client.startTurn(s.id, "me too"), (e: unknown) => e instanceof HarnessError && e.status === 409);
    assert.equal(await client.interrupt(s.id), true);

    const t0 = Date.now();
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      got.push(r.value);
    }
    assert.ok(Date.now() - t0 < 10_000, "the turn ends soon after the interrupt");
    const err = got.find((e) => e.type === "session:error");
    assert.ok(err && err.type === "session:error", `types: ${got.map((e) => e.type).join(", ")}`);
    assert.equal(err.kind, "interrupted");
    assert.equal(got.at(-1)!.type, "process:exit");
    assert.equal(await client.interrupt(s.id), false, "nothing left to interrupt");

    // The session is usable again.
    const next = await collect(await client.startTurn(s.id, "hi again"));
    assert.equal(next.at(-1)!.type, "process:exit");
    await client.deleteSession(s.id);
  });

  test("a dropped turn stream is resumed with Last-Event-ID", async () => {
    const s = await newSession();
    // A fetch whose first turn stream dies after ~3 events: the client must
    // pick up the rest from /session/{id}/events.
    let cut = false;
    const lastEventIds: string[] = [];
    const flaky: typeof fetch = async (input, init) => {
      const url = String(input);
      const h = new Headers(init?.headers);
      if (url.includes("/events")) lastEventIds.push(h.get("Last-Event-ID") ?? "");
      const res = await fetch(input, init);
      if (cut || !new URL(url).pathname.endsWith("/api/harness/turn") || !res.body) return res;
      cut = true;
      const reader = res.body.getReader();
      let frames = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(c) {
          const { done, value } = await reader.read();
          if (done) return c.close();
          c.enqueue(value);
          frames += new TextDecoder().decode(value).split("\n\n").length - 1;
          if (frames >= 3) {
            await reader.cancel();
            c.error(new TypeError("terminated (simulated network drop)"));
          }
        },
      });
      return new Response(body, { status: res.status, headers: res.headers });
    };
    // The gateway's default stream (004's types only): the ids sent have
    // gaps where extension events were left out, and the resume goes on
    // across them.
    const c = new HarnessClient({ baseUrl: srv.url, ...(srv.token ? { token: srv.token } : {}), fetch: flaky, reconnect: { initialDelayMs: 50 } });
    const reconnects: number[] = [];
    const events = await collect(await c.startTurn(s.id, "hello", { onReconnect: (i) => reconnects.push(i.attempt) }));
    assert.ok(cut, "the stream was cut");
    assert.ok(reconnects.length >= 1, "it reconnected");
    assert.ok(lastEventIds.length >= 1 && lastEventIds[0] !== "", `Last-Event-ID sent: ${JSON.stringify(lastEventIds)}`);
    assert.equal(events.at(-1)!.type, "process:exit");
    assertSeqs(events);
    // Nothing lost: the same as the stored log without its extension events.
    const log = await collect(client.sessionEvents(s.id));
    assert.deepEqual(events, log.filter((e) => SPEC_TYPES.includes(e.type)));
    assert.ok(log.length > events.length, "the log has extension events the stream left out");
    await client.deleteSession(s.id);
  });

  test("deleting a session with a running turn kills it", async () => {
    const s = await newSession();
    const stream = await client.startTurn(s.id, "a long one please");
    const it = stream[Symbol.asyncIterator]();
    await readUntil(it, (e) => e.type === "chat:delta", []);
    await client.deleteSession(s.id);
    stream.close();
    await assert.rejects(client.getSession(s.id), (e: unknown) => e instanceof HarnessError && e.status === 404);
  });

  test("conversation controls: switch the model, fork in the middle, rewind files and conversation", async () => {
    const engines = await client.engines();
    const demo = engines.find((e) => e.available);
    assert.ok(demo?.controls, `engines say their controls: ${JSON.stringify(engines)}`);

    const s = await newSession();
    // A switch reaches the engine: the next turn's session:init names the model.
    const env = await client.updateSession(s.id, { model: "claude-haiku-4-5" });
    assert.equal(env.session.model, "claude-haiku-4-5");
    const first = await collect(await client.startTurn(s.id, "first question"));
    const init = first.find((e) => e.type === "session:init");
    assert.equal(init?.type === "session:init" ? init.model : undefined, "claude-haiku-4-5");

    // The project changes between turns: the second turn snapshots it first.
    writeFileSync(path.join(srv.root, "notes.txt"), "before the second turn\n");
    await collect(await client.startTurn(s.id, "second question"));
    writeFileSync(path.join(srv.root, "notes.txt"), "after the second turn\n");
    const turns = await client.listTurns(s.id);
    assert.deepEqual(turns.map((t) => t.text), ["first question", "second question"]);
    const [t1, t2] = turns as [TurnInfo, TurnInfo];
    assert.ok(t1.seq < t2.seq);
    assert.ok(t2.files, "a snapshot before the second turn");

    // Fork after the first turn: a new session, the source unchanged.
    const fork = await client.forkSession(s.id, { atSeq: t1.seq });
    assert.notEqual(fork.id, s.id);
    const forkLog = await collect(client.sessionEvents(fork.id));
    const forked = forkLog.find((e) => e.type === "session:forked");
    assert.equal(forked?.type === "session:forked" ? forked.from : undefined, s.id);
    assert.deepEqual(forkLog.filter((e) => e.type === "user:message").map((e) => (e.type === "user:message" ? e.text : "")), ["first question"]);
    const forkTurn = await collect(await client.startTurn(fork.id, "in the fork"));
    assert.equal(forkTurn.at(-2)?.type, "session:complete", "the fork answers");
    assert.equal((await client.listTurns(s.id)).length, 2, "the source keeps its turns");

    // Preview, then rewind files and conversation to before the second turn.
    const p = await client.previewRewind(s.id, t2.seq);
    const notes = p.files.find((f) => f.path === "notes.txt");
    assert.equal(notes?.op, "modified");
    assert.match(notes?.patch ?? "", /-before the second turn/);
    assert.match(notes?.patch ?? "", /\+after the second turn/);
    const res = await client.rewind(s.id, { toTurn: t2.seq, files: true, conversation: demo!.controls!.rewind });
    assert.ok(res.files.some((f) => f.path === "notes.txt"));
    assert.equal(readFileSync(path.join(srv.root, "notes.txt"), "utf8"), "before the second turn\n");
    const log = await collect(client.sessionEvents(s.id));
    const rewound = log.at(-1);
    assert.equal(rewound?.type, "session:rewound");
    if (rewound?.type === "session:rewound") assert.equal(rewound.toTurn, t2.seq);
    const after = await client.listTurns(s.id);
    assert.equal(after[1]!.rewound, demo!.controls!.rewind);
    const next = await collect(await client.startTurn(s.id, "after the rewind"));
    assert.equal(next.at(-1)!.type, "process:exit");

    // Bad input: 404 for what does not exist, refused before sending for the rest.
    await assert.rejects(client.forkSession("0b7e4c8a-1111-4222-8333-944455556666"), (e: unknown) => e instanceof HarnessError && e.status === 404);
    await assert.rejects(client.rewind(s.id, { toTurn: 999_999, files: true }), (e: unknown) => e instanceof HarnessError && e.status === 404);
    await assert.rejects(client.forkSession(s.id, { atSeq: 999_999 }), (e: unknown) => e instanceof HarnessError && e.status === 404);
    await client.deleteSession(fork.id);
    await client.deleteSession(s.id);
    rmSync(path.join(srv.root, "notes.txt"), { force: true });
  });

  test("token auth: a request without the token is 401", async (t) => {
    if (!srv.token) return t.skip("HARNESS_TOKEN not set");
    const r = await raw("GET", "session/list", undefined, { Authorization: "" });
    assert.equal(r.status, 401);
  });
});
