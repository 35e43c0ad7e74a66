#!/usr/bin/env node
// A stand-in for `harness serve --demo`, for working on the console and the
// browser test without the Go gateway. It follows the /api/harness contract
// and the demo model's behaviour, keeps everything in memory, and serves
// ../web/static at "/". Invoked like the real binary:
//
//   node e2e/mock-gateway.mjs serve --demo --addr 127.0.0.1:0 --root DIR [--token T]
//
// (so it can stand in as HARNESS_BIN). The real gateway is what CI tests.

import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
};
const [host, port] = opt("--addr", "127.0.0.1:0").split(":");
const root = path.resolve(opt("--root", process.cwd()));
const token = opt("--token", process.env.HARNESS_TOKEN || "");
const staticDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../web/static");

const PERSONAS = [
  { id: "DECOMP", description: "Breaks a task into issues" },
  { id: "ORCHESTRATOR", description: "Runs the pipeline" },
  { id: "REVIEWER", description: "Reviews a change" },
];
const sessions = new Map(); // id -> {session, log: [], turn: null|{listeners:Set, stop()}}

const json = (res, status, body) => {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(body === undefined ? "" : JSON.stringify(body));
};
const fail = (res, status, error) => json(res, status, { error });

function summary(s) {
  const { id, createdAt, updatedAt, projectRoot, persona, mode } = s.session;
  return { id, createdAt, updatedAt, projectRoot, persona, mode };
}

function sseHead(res) {
  res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no" });
  res.flushHeaders();
  const hb = setInterval(() => res.write(": heartbeat\n\n"), 15000);
  res.on("close", () => clearInterval(hb));
}
const frame = (e) => `id: ${e.seq}\ndata: ${JSON.stringify(e)}\n\n`;

function emit(s, e) {
  const full = { ...e, sessionId: s.session.id, seq: s.log.length + 1 };
  s.log.push(full);
  s.session.updatedAt = new Date().toISOString();
  for (const l of s.turn?.listeners ?? []) l(full);
  if (full.type === "process:exit") s.turn = null;
}

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

async function demoTurn(s, message, turn) {
  const ev = (e) => {
    if (!turn.stopped) emit(s, e);
  };
  const claudeSessionId = s.session.claudeSessionId ?? randomUUID();
  s.session.claudeSessionId = claudeSessionId;
  ev({ type: "session:init", claudeSessionId, model: "demo-model", tools: ["Bash", "Read"], cliVersion: "demo" });
  if (/error/i.test(message)) {
    await wait(100);
    ev({ type: "session:error", error: "API Error: 500 demo failure", kind: "api_error", apiErrorStatus: 500 });
    ev({ type: "process:exit", code: 1 });
    return;
  }
  for (const t of ["The user wants ", "to know what is ", "in the project."]) {
    await wait(40);
    ev({ type: "thinking:delta", text: t });
  }
  const long = /long/i.test(message);
  const words = long
    ? Array.from({ length: 400 }, (_, i) => (i % 40 === 39 ? `word${i}.\n\n` : `word${i} `))
    : ["I'll **look** at ", "the project ", "with `ls`."];
  for (const w of words) {
    if (turn.stopped) return;
    await wait(long ? 100 : 40);
    ev({ type: "chat:delta", text: w });
  }
  ev({ type: "tool:start", toolUseId: "toolu_" + s.log.length, name: "Bash", input: { command: `ls ${s.session.projectRoot}`, description: "List files" } });
  await wait(60);
  let listing = "";
  try {
    listing = fs.readdirSync(s.session.projectRoot).join("\n");
  } catch (e) {
    listing = String(e);
  }
  ev({ type: "tool:result", toolUseId: "toolu_" + (s.log.length - 1), content: listing, isError: false });
  const summaryText = "\n\nThe project has these files:\n\n| file |\n|---|\n" + listing.split("\n").map((f) => `| \`${f}\` |`).join("\n");
  for (const part of summaryText.match(/[\s\S]{1,12}/g) ?? []) {
    await wait(15);
    ev({ type: "chat:delta", text: part });
  }
  ev({ type: "chat:complete", text: summaryText.trim() });
  ev({ type: "session:complete", costUsd: 0.0123, usage: { input_tokens: 10, output_tokens: 20 }, numTurns: 2, durationMs: 1234 });
  ev({ type: "process:exit", code: 0 });
}

function startTurn(s, message) {
  const turn = { listeners: new Set(), stopped: false };
  turn.stop = () => {
    if (turn.stopped) return;
    emit(s, { type: "session:error", error: "interrupted", kind: "interrupted" });
    turn.stopped = true;
    emit(s, { type: "process:exit", code: -1, signal: "SIGINT" });
  };
  s.turn = turn;
  demoTurn(s, message, turn).catch((e) => console.error(e));
  return turn;
}

function follow(req, res, s, after) {
  sseHead(res);
  for (const e of s.log) if (e.seq > after) res.write(frame(e));
  const turn = s.turn;
  if (!turn) return res.end();
  const l = (e) => {
    res.write(frame(e));
    if (e.type === "process:exit") {
      turn.listeners.delete(l);
      res.end();
    }
  };
  turn.listeners.add(l);
  res.on("close", () => turn.listeners.delete(l));
}

async function readBody(req) {
  let b = "";
  for await (const c of req) b += c;
  try {
    return JSON.parse(b);
  } catch {
    return undefined;
  }
}

const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml" };

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://x");
  const p = url.pathname;
  if (!p.startsWith("/api/")) {
    const file = p === "/" ? "index.html" : p.slice(1);
    const full = path.join(staticDir, file);
    if (!full.startsWith(staticDir) || !fs.existsSync(full) || fs.statSync(full).isDirectory()) return fail(res, 404, "not found");
    res.writeHead(200, { "Content-Type": TYPES[path.extname(full)] ?? "application/octet-stream", "Cache-Control": "no-cache" });
    return res.end(fs.readFileSync(full));
  }
  if (token && req.headers.authorization !== `Bearer ${token}`) return fail(res, 401, "unauthorized");
  const r = p.replace(/^\/api\/harness/, "");
  let m;
  if (req.method === "GET" && r === "/health") return json(res, 200, { ok: true, claudeVersion: "demo" });
  if (req.method === "GET" && r === "/personas") return json(res, 200, PERSONAS);
  if (req.method === "POST" && r === "/session/create") {
    const b = await readBody(req);
    if (!b || typeof b.projectRoot !== "string" || !["workbench", "pipeline", "direct"].includes(b.mode)) return fail(res, 400, "bad request");
    if (path.resolve(b.projectRoot) !== root && !path.resolve(b.projectRoot).startsWith(root + path.sep)) return fail(res, 403, "project root not allowed");
    if (b.persona && !PERSONAS.some((x) => x.id === b.persona)) return fail(res, 404, `unknown persona ${b.persona}`);
    const now = new Date().toISOString();
    const session = { id: randomUUID(), createdAt: now, updatedAt: now, projectRoot: b.projectRoot, persona: b.persona ?? null, mode: b.mode, claudeSessionId: null, schemaVersion: 1 };
    sessions.set(session.id, { session, log: [], turn: null });
    return json(res, 201, { session });
  }
  if (req.method === "GET" && r === "/session/list") {
    const pr = url.searchParams.get("projectRoot");
    // Map order is creation order: reversed, newest first.
    const list = [...sessions.values()].filter((s) => !pr || s.session.projectRoot === pr).map(summary).reverse();
    return json(res, 200, list);
  }
  if ((m = /^\/session\/([^/]+)$/.exec(r))) {
    const s = sessions.get(decodeURIComponent(m[1]));
    if (!s) return fail(res, 404, "no such session");
    if (req.method === "GET") return json(res, 200, { session: s.session });
    if (req.method === "DELETE") {
      s.turn?.stop();
      sessions.delete(s.session.id);
      res.writeHead(204);
      return res.end();
    }
  }
  if (req.method === "GET" && (m = /^\/session\/([^/]+)\/events$/.exec(r))) {
    const s = sessions.get(decodeURIComponent(m[1]));
    if (!s) return fail(res, 404, "no such session");
    const after = Number(req.headers["last-event-id"] ?? url.searchParams.get("after") ?? 0) || 0;
    return follow(req, res, s, after);
  }
  if (req.method === "POST" && r === "/turn") {
    const b = await readBody(req);
    if (!b || typeof b.message !== "string" || !b.message.trim()) return fail(res, 400, "empty message");
    const s = sessions.get(b.sessionId);
    if (!s) return fail(res, 404, "no such session");
    if (s.turn) return fail(res, 409, "a turn is running");
    const after = s.log.length;
    startTurn(s, b.message);
    return follow(req, res, s, after);
  }
  if (req.method === "POST" && r === "/interrupt") {
    const b = await readBody(req);
    const s = sessions.get(b?.sessionId);
    if (!s || !s.turn) return fail(res, 404, "no running turn");
    s.turn.stop();
    return json(res, 200, {});
  }
  fail(res, 404, "not found");
});

server.listen(Number(port), host, () => {
  const a = server.address();
  process.stdout.write(`harness: listening on http://${a.address}:${a.port}\n`);
});
process.on("SIGTERM", () => process.exit(0));
