// Way 2: a route handler that proxies /proxy/api/harness/* to the gateway
// and adds the gateway's bearer token on the server, so the token never
// reaches the browser. Event streams (POST /turn, GET /session/{id}/events)
// are passed through chunk by chunk.
//
// Browser code points the client at it with baseUrl "/proxy":
//   new HarnessClient({ baseUrl: "/proxy" })
//
// Anyone who can reach this route can drive the gateway: put your app's own
// authentication in front of it (middleware, or a session check below).
//
// Only the headers listed below go to the gateway: not the browser's
// cookies, Authorization or Origin (the gateway refuses a foreign Origin,
// and this server, not the browser, is its client here). Last-Event-ID
// goes through, so a dropped event stream resumes where it stopped.

import type { NextRequest } from "next/server";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";

const GATEWAY = (process.env.HARNESS_URL ?? "http://127.0.0.1:7878").replace(/\/+$/, "");
const TOKEN = process.env.HARNESS_TOKEN ?? "";

// Request headers worth forwarding; everything else (cookies, the
// browser's own Authorization) stays here.
const FORWARD_REQUEST = ["content-type", "accept", "last-event-id"];
const FORWARD_RESPONSE = ["content-type", "cache-control", "location"];
// The gateway's own cap on request bodies (1 MiB by default): refuse more
// here, before buffering it.
const MAX_BODY = 1 << 20;

async function readBody(req: NextRequest): Promise<string | null> {
  if (Number(req.headers.get("content-length") ?? 0) > MAX_BODY) return null;
  if (!req.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  const r = req.body.getReader();
  for (;;) {
    const { done, value } = await r.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY) {
      await r.cancel();
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

async function proxy(req: NextRequest, ctx: { params: Promise<{ path: string[] }> }): Promise<Response> {
  const { path } = await ctx.params;
  if (path.some((p) => p === ".." || p === ".")) return Response.json({ error: "bad path" }, { status: 400 });
  const url = `${GATEWAY}/api/harness/${path.map(encodeURIComponent).join("/")}${req.nextUrl.search}`;

  const headers = new Headers();
  for (const h of FORWARD_REQUEST) {
    const v = req.headers.get(h);
    if (v) headers.set(h, v);
  }
  if (TOKEN) headers.set("authorization", `Bearer ${TOKEN}`);

  const init: RequestInit = { method: req.method, headers, signal: req.signal, cache: "no-store", redirect: "manual" };
  if (req.method !== "GET" && req.method !== "HEAD") {
    const body = await readBody(req);
    if (body === null) return Response.json({ error: "request body too large" }, { status: 413 });
    init.body = body;
  }

  let upstream: Response;
  try {
    upstream = await fetch(url, init);
  } catch {
    // Say where and what to check: a gateway that refused to start (a
    // token under 16 characters, a port in use) said why in its terminal.
    return Response.json(
      { error: `gateway unreachable at ${GATEWAY}: is harness serve running there? If it stopped at start, its terminal says why` },
      { status: 502 },
    );
  }

  const out = new Headers();
  for (const h of FORWARD_RESPONSE) {
    const v = upstream.headers.get(h);
    if (v) out.set(h, v);
  }
  if (out.get("content-type")?.startsWith("text/event-stream")) {
    out.set("cache-control", "no-cache, no-transform");
    out.set("x-accel-buffering", "no"); // tell nginx-style proxies not to buffer
  }
  // 204 and 304 must not have a body.
  const body = upstream.status === 204 || upstream.status === 304 ? null : upstream.body;
  return new Response(body, { status: upstream.status, headers: out });
}

export { proxy as GET, proxy as POST, proxy as PATCH, proxy as DELETE };
