// Talking to the gateway at /api/harness/*: JSON routes and event streams.

import { readSSE } from "./sse.js";

const BASE = "/api/harness/";

/** ?events= of the console's event streams: the gateway sends 004's eight
 * UIEvent types unless a stream asks for more, and the console shows them
 * all (approvals, thinking, usage, plans, the queue, trust, retries). */
export const STREAM_EVENTS = "events=all";

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

export class Api {
  /** @param {() => string} getToken  the bearer token, or "" */
  constructor(getToken) {
    this.getToken = getToken;
    /** Called with every 401 answer. */
    this.onUnauthorized = () => {};
  }

  headers(extra = {}) {
    const h = { ...extra };
    const t = this.getToken();
    if (t) h["Authorization"] = `Bearer ${t}`;
    return h;
  }

  async request(method, path, { body, headers, signal, ok = [] } = {}) {
    const h = this.headers(headers);
    const init = { method, headers: h, signal, cache: "no-store" };
    if (body !== undefined) {
      h["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(BASE + path, init);
    } catch (e) {
      if (e?.name === "AbortError") throw e;
      // fetch rejects only when the server cannot be reached at all.
      this.onUnreachable?.();
      throw new ApiError(0, "server unreachable, retrying");
    }
    if (!res.ok && !ok.includes(res.status)) {
      let msg = `${res.status} ${res.statusText}`;
      try {
        const j = await res.json();
        if (j && typeof j.error === "string") msg = j.error;
      } catch {
        /* not JSON */
      }
      if (res.status === 401) this.onUnauthorized(msg);
      throw new ApiError(res.status, msg);
    }
    return res;
  }

  async json(method, path, body) {
    const res = await this.request(method, path, { body });
    return res.json();
  }

  health() {
    return this.json("GET", "health");
  }
  personas() {
    return this.json("GET", "personas");
  }
  listSessions() {
    return this.json("GET", "session/list");
  }
  /** isolation: {isolation: "worktree", base?} for a worktree session. */
  async createSession(projectRoot, persona, mode, engine, isolation = {}) {
    const body = { projectRoot, persona, mode };
    if (engine) body.engine = engine;
    if (isolation.isolation) body.isolation = isolation.isolation;
    if (isolation.base) body.base = isolation.base;
    return (await this.json("POST", "session/create", body)).session;
  }
  /** Renames a session. */
  async setTitle(id, title) {
    return (await this.json("PATCH", `session/${encodeURIComponent(id)}`, { title })).session;
  }
  /** Changes what the session's next turns run with: {title?, persona?,
   * model?, permissionMode?, effort?}. Resolves to {session, pendingApprovals, permissionMode}. */
  updateSession(id, fields) {
    return this.json("PATCH", `session/${encodeURIComponent(id)}`, fields);
  }
  /** Forks a session at atSeq (0: all of it); resolves to the new session. */
  async forkSession(id, atSeq = 0) {
    return (await this.json("POST", `session/${encodeURIComponent(id)}/fork`, atSeq > 0 ? { atSeq } : {})).session;
  }
  /** [{seq, text, checkpoint, files, rewound}] */
  listTurns(id) {
    return this.json("GET", `session/${encodeURIComponent(id)}/turns`);
  }
  /** {toTurn, turn, files: [{path, op, patch, truncated}], filesError} */
  previewRewind(id, toTurn) {
    return this.json("GET", `session/${encodeURIComponent(id)}/rewind?toTurn=${encodeURIComponent(toTurn)}`);
  }
  /** {files, conversation}: what the rewind changed. */
  rewind(id, { toTurn, files, conversation }) {
    return this.json("POST", `session/${encodeURIComponent(id)}/rewind`, { toTurn, files: !!files, conversation: !!conversation });
  }
  /** Answers an approval request: "allow", "deny" or "always". */
  answerApproval(sessionId, requestId, decision) {
    return this.request("POST", "approval", { body: { sessionId, requestId, decision }, ok: [409] });
  }
  /** {items, recordError?}: what waits for a person's trust in a project. */
  listTrust(projectRoot) {
    return this.json("GET", `trust?projectRoot=${encodeURIComponent(projectRoot)}`);
  }
  /** Trusts a persona file or a project MCP server at the hash shown;
   * 409 when it changed since. */
  acceptTrust(projectRoot, kind, name, path, hash) {
    return this.request("POST", "trust", { body: { projectRoot, kind, name, path, hash }, ok: [409] });
  }
  engines() {
    return this.json("GET", "engines");
  }
  roots() {
    return this.json("GET", "roots");
  }
  async getSession(id) {
    return (await this.getSessionEnvelope(id)).session;
  }
  /** {session, pendingApprovals, permissionMode} */
  getSessionEnvelope(id) {
    return this.json("GET", `session/${encodeURIComponent(id)}`);
  }
  async deleteSession(id) {
    await this.request("DELETE", `session/${encodeURIComponent(id)}`);
  }
  /** true when a running turn was interrupted, false when none ran. */
  async interrupt(sessionId) {
    const res = await this.request("POST", "interrupt", { body: { sessionId }, ok: [404] });
    return res.status === 200;
  }

  /** POST /turn; resolves to the SSE response once the turn is accepted. */
  startTurn(sessionId, message, signal) {
    return this.request("POST", `turn?${STREAM_EVENTS}`, {
      body: { sessionId, message },
      headers: { Accept: "text/event-stream" },
      signal,
    });
  }

  /** GET /session/{id}/events after `after` (Last-Event-ID when > 0). */
  openEvents(sessionId, after, signal) {
    const headers = { Accept: "text/event-stream" };
    if (after > 0) headers["Last-Event-ID"] = String(after);
    return this.request("GET", `session/${encodeURIComponent(sessionId)}/events?after=${after}&${STREAM_EVENTS}`, { headers, signal });
  }
}

/** Decodes the UI events of an SSE response. The SSE id fills in a missing
 * seq. Unparseable data is reported and skipped, never fatal. */
export async function* eventsOf(res, onComment) {
  for await (const msg of readSSE(res.body, onComment)) {
    if (msg.event !== "message") continue;
    let ev;
    try {
      ev = JSON.parse(msg.data);
    } catch {
      console.warn("harness: skipped an event that is not JSON", msg.data);
      continue;
    }
    if (!ev || typeof ev !== "object" || typeof ev.type !== "string") continue;
    if (typeof ev.seq !== "number" && /^\d+$/.test(msg.id)) ev.seq = Number(msg.id);
    yield ev;
  }
}

export const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });
