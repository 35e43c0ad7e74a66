// What the client puts on the wire for every call with a body, as the
// gateway's guard requires it: Content-Type application/json (a POST or
// PATCH without it is 415), the token, and no Origin of its own. A fake
// fetch records the requests; no gateway is needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { HarnessClient, HarnessError, parseEvent } from "../src/index.js";

const session = {
  id: "s1",
  createdAt: "2026-11-23T00:00:00Z",
  updatedAt: "2026-11-23T00:00:00Z",
  projectRoot: "/p",
  persona: null,
  mode: "direct",
  claudeSessionId: null,
  schemaVersion: 1,
};

test("every call with a body is application/json and carries the token", async () => {
  const sent: { method: string; url: string; headers: Headers; body: unknown }[] = [];
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    sent.push({ method: init?.method ?? "GET", url: String(input), headers, body: init?.body });
    const path = new URL(String(input)).pathname;
    if (path.endsWith("/turn")) {
      const ev = { type: "process:exit", sessionId: "s1", seq: 1, code: 0 };
      return new Response(`id: 1\ndata: ${JSON.stringify(ev)}\n\n`, { status: 200, headers: { "Content-Type": "text/event-stream" } });
    }
    if (path.endsWith("/approval")) return Response.json({ resolved: true });
    if (path.endsWith("/interrupt")) return Response.json({ interrupted: true });
    return Response.json({ session, pendingApprovals: [] }, { status: path.endsWith("/create") ? 201 : 200 });
  }) as typeof fetch;
  const c = new HarnessClient({ baseUrl: "http://gw.test", token: "tok", fetch: fakeFetch });

  await c.createSession({ projectRoot: "/p", persona: null, mode: "direct" });
  for await (const _ of await c.startTurn("s1", "hi")) {
    // drain
  }
  assert.equal(await c.approve("s1", "r1", "allow"), true);
  assert.equal(await c.interrupt("s1"), true);
  await c.setTitle("s1", "t");

  assert.deepEqual(
    sent.map((r) => `${r.method} ${new URL(r.url).pathname}`),
    ["POST /api/harness/session/create", "POST /api/harness/turn", "POST /api/harness/approval", "POST /api/harness/interrupt", "PATCH /api/harness/session/s1"],
  );
  for (const r of sent) {
    const what = `${r.method} ${r.url}`;
    assert.equal(r.headers.get("content-type"), "application/json", what);
    assert.equal(r.headers.get("authorization"), "Bearer tok", what);
    assert.equal(r.headers.get("origin"), null, what);
    assert.equal(typeof r.body, "string", what);
    JSON.parse(r.body as string); // a JSON body
  }
});

test("calls without a body send no Content-Type", async () => {
  const sent: Headers[] = [];
  const fakeFetch = (async (_input: string | URL | Request, init?: RequestInit) => {
    sent.push(new Headers(init?.headers));
    return Response.json([]);
  }) as typeof fetch;
  const c = new HarnessClient({ baseUrl: "", fetch: fakeFetch });
  await c.listSessions();
  await c.listPersonas();
  assert.equal(sent.length, 2);
  for (const h of sent) assert.equal(h.get("content-type"), null);
});

test("the conversation controls send what the gateway takes and parse what it answers", async () => {
  const sent: { method: string; path: string; search: string; body: unknown }[] = [];
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const u = new URL(String(input));
    sent.push({ method: init?.method ?? "GET", path: u.pathname, search: u.search, body: init?.body ? JSON.parse(String(init.body)) : undefined });
    if (u.pathname.endsWith("/turns")) return Response.json([{ seq: 1, text: "hi", checkpoint: true, files: true, rewound: false }]);
    if (u.pathname.endsWith("/rewind") && init?.method === "GET") {
      return Response.json({ toTurn: 1, turn: { seq: 1, text: "hi", checkpoint: true, files: true, rewound: false }, files: [{ path: "a.txt", op: "modified", patch: "-a\n+b\n" }] });
    }
    if (u.pathname.endsWith("/rewind")) return Response.json({ files: [{ path: "a.txt", op: "modified" }], conversation: true });
    if (u.pathname.endsWith("/fork")) return Response.json({ session: { ...session, id: "s2" }, pendingApprovals: [] }, { status: 201 });
    return Response.json({ session: { ...session, model: "m2", permissionMode: "plan" }, pendingApprovals: [], permissionMode: "plan" });
  }) as typeof fetch;
  const c = new HarnessClient({ baseUrl: "http://gw.test", fetch: fakeFetch });

  const env = await c.updateSession("s1", { model: "m2", permissionMode: "plan" });
  assert.equal(env.session.model, "m2");
  assert.equal(env.permissionMode, "plan");
  assert.equal((await c.forkSession("s1", { atSeq: 7 })).id, "s2");
  assert.equal((await c.forkSession("s1")).id, "s2");
  assert.deepEqual((await c.listTurns("s1")).map((t) => t.seq), [1]);
  const p = await c.previewRewind("s1", 1);
  assert.equal(p.files[0]!.patch, "-a\n+b\n");
  const r = await c.rewind("s1", { toTurn: 1, files: true, conversation: true });
  assert.equal(r.conversation, true);

  assert.deepEqual(
    sent.map((r) => `${r.method} ${r.path}${r.search}`),
    [
      "PATCH /api/harness/session/s1",
      "POST /api/harness/session/s1/fork",
      "POST /api/harness/session/s1/fork",
      "GET /api/harness/session/s1/turns",
      "GET /api/harness/session/s1/rewind?toTurn=1",
      "POST /api/harness/session/s1/rewind",
    ],
  );
  assert.deepEqual(sent[0]!.body, { model: "m2", permissionMode: "plan" });
  assert.deepEqual(sent[1]!.body, { atSeq: 7 });
  assert.deepEqual(sent[2]!.body, {});
  assert.deepEqual(sent[5]!.body, { toTurn: 1, files: true, conversation: true });

  // What the gateway would refuse is refused before a request is sent.
  const before = sent.length;
  await assert.rejects(c.updateSession("s1", {}), /nothing to change/);
  await assert.rejects(c.forkSession("s1", { atSeq: -1 }));
  await assert.rejects(c.previewRewind("s1", 0), RangeError);
  await assert.rejects(c.previewRewind("s1", 1.5), RangeError);
  await assert.rejects(c.rewind("s1", { toTurn: 1 }), /nothing to rewind/);
  await assert.rejects(c.rewind("s1", { toTurn: 0, files: true }));
  assert.equal(sent.length, before, "no request for invalid input");
});

// Issue 34.2: a relative baseUrl is for a browser (same origin, behind a
// rewrite); in Node the first request says so instead of Node's bare
// "Failed to parse URL". With a fetch of one's own it stays allowed.
test("a relative baseUrl outside a browser is refused with what to pass instead", async () => {
  for (const baseUrl of ["", "/proxy"]) {
    const c = new HarnessClient({ baseUrl });
    await assert.rejects(c.health(), /baseUrl .* is relative, which works only in a browser.*baseUrl: "http:\/\/127\.0\.0\.1:8787"/);
  }
  const seen: string[] = [];
  const own = new HarnessClient({
    baseUrl: "",
    fetch: (async (u: string) => {
      seen.push(u);
      return new Response(JSON.stringify({ ok: true, claudeVersion: "x" }), { headers: { "Content-Type": "application/json" } });
    }) as unknown as typeof fetch,
  });
  await own.health();
  assert.deepEqual(seen, ["/api/harness/health"]);
});

test("queueTurn: 202 resolves to where the prompt was queued, 200 to the turn's stream; the queue routes", async () => {
  const sent: { method: string; path: string; body: unknown }[] = [];
  let busy = true;
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const path = new URL(String(input)).pathname;
    sent.push({ method: init?.method ?? "GET", path, body: init?.body ? JSON.parse(String(init.body)) : undefined });
    if (path.endsWith("/turn")) {
      if (busy) return Response.json({ queued: true, promptId: "p1", position: 0 }, { status: 202 });
      const ev = { type: "process:exit", sessionId: "s1", seq: 1, code: 0 };
      return new Response(`id: 1\ndata: ${JSON.stringify(ev)}\n\n`, { status: 200, headers: { "Content-Type": "text/event-stream" } });
    }
    if (init?.method === "DELETE") return new Response(null, { status: 204 });
    return Response.json({ prompts: [{ promptId: "p1", message: "moved", queuedAt: "2026-11-26T00:00:00Z" }] });
  }) as typeof fetch;
  const c = new HarnessClient({ baseUrl: "http://gw.test", fetch: fakeFetch });

  const q = await c.queueTurn("s1", "later");
  assert.ok("queued" in q && q.queued && q.promptId === "p1" && q.position === 0);
  busy = false;
  const t = await c.queueTurn("s1", "now");
  assert.ok(!("queued" in t));
  const types: string[] = [];
  for await (const ev of t) types.push(ev.type);
  assert.deepEqual(types, ["process:exit"]);
  assert.equal((await c.getQueue("s1"))[0]!.message, "moved");
  assert.equal((await c.editQueuedPrompt("s1", "p1", { position: 0, message: "moved" }))[0]!.promptId, "p1");
  await c.deleteQueuedPrompt("s1", "p1");
  assert.deepEqual(
    sent.map((r) => `${r.method} ${r.path}`),
    ["POST /api/harness/turn", "POST /api/harness/turn", "GET /api/harness/session/s1/queue", "PATCH /api/harness/session/s1/queue/p1", "DELETE /api/harness/session/s1/queue/p1"],
  );
  assert.deepEqual(sent[0]!.body, { sessionId: "s1", message: "later", queue: true });
  assert.deepEqual(sent[3]!.body, { position: 0, message: "moved" });
});

test("steer: POST /session/{id}/steer with the message; 409 and 422 reject with HarnessError", async () => {
  const sent: { path: string; body: unknown }[] = [];
  let status = 200;
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    sent.push({ path: new URL(String(input)).pathname, body: init?.body ? JSON.parse(String(init.body)) : undefined });
    if (status !== 200) return Response.json({ error: "the still engine cannot take a message while a turn runs; engines that can: claude-code" }, { status });
    return Response.json({ delivered: true });
  }) as typeof fetch;
  const c = new HarnessClient({ baseUrl: "http://gw.test", fetch: fakeFetch });
  await c.steer("s1", "use tabs");
  assert.deepEqual(sent[0], { path: "/api/harness/session/s1/steer", body: { message: "use tabs" } });
  status = 422;
  await assert.rejects(c.steer("s1", "x"), (e: unknown) => e instanceof HarnessError && e.status === 422 && /claude-code/.test(e.message));
  status = 409;
  await assert.rejects(c.steer("s1", "x"), (e: unknown) => e instanceof HarnessError && e.status === 409);
  await assert.rejects(c.steer("s1", ""));
});

test("decidePlan: POST /session/{id}/plan with the decision; plan events parse", async () => {
  const sent: { path: string; body: unknown }[] = [];
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    sent.push({ path: new URL(String(input)).pathname, body: init?.body ? JSON.parse(String(init.body)) : undefined });
    return Response.json({ decided: true });
  }) as typeof fetch;
  const c = new HarnessClient({ baseUrl: "http://gw.test", fetch: fakeFetch });
  await c.decidePlan("s1", { decision: "approve", mode: "acceptEdits" });
  await c.decidePlan("s1", { decision: "revise", feedback: "smaller steps" });
  assert.deepEqual(sent, [
    { path: "/api/harness/session/s1/plan", body: { decision: "approve", mode: "acceptEdits" } },
    { path: "/api/harness/session/s1/plan", body: { decision: "revise", feedback: "smaller steps" } },
  ]);
  await assert.rejects(c.decidePlan("s1", { decision: "approve", mode: "bypassPermissions" } as never));
  const ev = parseEvent({ type: "plan:ready", sessionId: "s1", seq: 3, planId: "pln_1", plan: "# p", expiresAt: "2026-11-26T03:00:00Z" });
  assert.equal(ev.type, "plan:ready");
});
