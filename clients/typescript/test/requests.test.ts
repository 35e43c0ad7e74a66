// What the client puts on the wire for every call with a body, as the
// gateway's guard requires it: Content-Type application/json (a POST or
// PATCH without it is 415), the token, and no Origin of its own. A fake
// fetch records the requests; no gateway is needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { HarnessClient } from "../src/index.js";

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
