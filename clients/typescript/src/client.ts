// Typed functions for every /api/harness route.

import {
  type ApprovalDecision,
  ApprovalDecisionSchema,
  type ApprovalRequest,
  type CreateSessionRequest,
  type MergeRequest,
  MergeRequestSchema,
  type MergeResult,
  MergeResultSchema,
  type SessionDiff,
  SessionDiffSchema,
  EngineListSchema,
  type EngineStatus,
  type Roots,
  RootsSchema,
  CreateSessionRequestSchema,
  ErrorBodySchema,
  type HarnessEvent,
  type Health,
  HealthSchema,
  type UsageBy,
  type UsageReport,
  UsageReportSchema,
  type Persona,
  PersonaListSchema,
  ForkRequestSchema,
  type RewindPreview,
  RewindPreviewSchema,
  type RewindRequest,
  RewindRequestSchema,
  type RewindResult,
  RewindResultSchema,
  type Session,
  type SessionEnvelope,
  SessionEnvelopeSchema,
  type TurnInfo,
  TurnListSchema,
  type UpdateSessionRequest,
  UpdateSessionRequestSchema,
  SessionListSchema,
  type SessionSummary,
  TurnRequestSchema,
  type TurnRequest,
  type QueuedAnswer,
  QueuedAnswerSchema,
  type QueuedPrompt,
  QueueSchema,
  type QueueEditRequest,
  QueueEditRequestSchema,
  SteerAnswerSchema,
  type PlanDecision,
  PlanDecisionSchema,
  SteerRequestSchema,
  type TrustItem,
  TrustAcceptedSchema,
  type TrustList,
  TrustListSchema,
  type TrustRequest,
  TrustRequestSchema,
  parseEvent,
} from "./schemas.js";
import { readSSE } from "./sse.js";

export interface ReconnectOptions {
  /** How many reconnections in a row without receiving an event are tried
   * before giving up (default 5). */
  maxRetries?: number;
  /** First delay before reconnecting, doubled on each failure (default
   * 250 ms; a `retry:` field from the server replaces it). */
  initialDelayMs?: number;
  /** Upper bound of the delay (default 5000 ms). */
  maxDelayMs?: number;
}

export interface ClientOptions {
  /** What comes before `/api/harness`: an origin such as
   * "http://127.0.0.1:7878", or a path ("" or "/proxy") for same-origin
   * requests in a browser (behind a rewrite or proxy route). A relative
   * base outside a browser (Node) throws on the first request, saying so,
   * unless `fetch` is given. */
  baseUrl?: string;
  /** Bearer token, sent as `Authorization: Bearer …` on every request. */
  token?: string;
  /** The fetch to use (default: globalThis.fetch). */
  fetch?: typeof fetch;
  /** Extra headers for every request. */
  headers?: Record<string, string>;
  reconnect?: ReconnectOptions;
  /** The event types of every stream (StreamOptions.events, which wins):
   * left out, 004's eight UIEvent types only, as the gateway sends by
   * default; "all" for the extension events too. */
  events?: StreamOptions["events"];
}

/** A non-2xx answer from the gateway. `message` is the body's `error`. */
export class HarnessError extends Error {
  readonly status: number;
  readonly body: unknown;
  constructor(status: number, message: string, body: unknown) {
    super(message);
    this.name = "HarnessError";
    this.status = status;
    this.body = body;
  }
}

/** 004's per-turn TurnOpts (POST /turn): for one turn, narrowing only. */
export interface TurnOptions {
  systemPromptAppend?: string;
  toolsOverride?: string;
  disallowedToolsOverride?: string[];
  autoApproveToolsOverride?: string[];
}

/** Extension event groups a stream can ask for besides 004's UIEvent types
 * (the gateway's ?events=; its OpenAPI document lists them). */
export type EventGroup = "approval" | "conversation" | "plan" | "queue" | "retry" | "thinking" | "trust" | "usage" | "user";

export interface StreamOptions {
  /**
   * The event types the stream carries. Left out (the gateway's default):
   * 004's eight UIEvent types only (chat:delta, chat:complete, tool:start,
   * tool:result, session:init, session:complete, session:error,
   * process:exit). "all": every type, extensions included; or a list of
   * extension groups (and event types), e.g. ["approval", "usage"]. A
   * client of a gateway that asks for approvals must ask for "approval",
   * or a turn that waits for a person looks hung. A resumed stream asks
   * for the same.
   */
  events?: "all" | (EventGroup | HarnessEvent["type"])[];
  signal?: AbortSignal;
  /** Called for each SSE comment line, e.g. "heartbeat". */
  onComment?: (text: string) => void;
  /** Called before each reconnection, with the error that caused it (null
   * when the stream ended without one) and the Last-Event-ID sent. */
  onReconnect?: (info: { attempt: number; lastEventId: number | undefined; error: unknown }) => void;
}

export interface SessionEventsOptions extends StreamOptions {
  /** Start after this seq (default 0: the whole stored history). */
  after?: number;
}

/** The events of one turn. Iterate it once; breaking out of the loop stops
 * reading but does not interrupt the turn (use interrupt for that). */
export interface TurnStream extends AsyncIterable<HarnessEvent> {
  readonly sessionId: string;
  /** The seq of the last event received, once one has been. */
  readonly lastSeq: number | undefined;
  /** Stops reading (the turn goes on at the gateway). */
  close(): void;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

function isAbort(err: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted) return true;
  return err instanceof Error && err.name === "AbortError";
}

/** Errors that reconnecting cannot fix: the gateway sent something that is
 * not the contract, or answered with an HTTP error. */
function isFatal(err: unknown): boolean {
  return err instanceof HarnessError || err instanceof SyntaxError || (err instanceof Error && err.name === "EventShapeError");
}

function linkSignals(outer: AbortSignal | undefined, inner: AbortController): () => void {
  if (!outer) return () => {};
  if (outer.aborted) {
    inner.abort(outer.reason);
    return () => {};
  }
  const f = () => inner.abort(outer.reason);
  outer.addEventListener("abort", f, { once: true });
  return () => outer.removeEventListener("abort", f);
}

export class HarnessClient {
  readonly baseUrl: string;
  private readonly token: string | undefined;
  private readonly fetchFn: typeof fetch;
  private readonly extraHeaders: Record<string, string>;
  private readonly reconnect: Required<ReconnectOptions>;
  private readonly ownFetch: boolean;
  private readonly events: StreamOptions["events"];

  constructor(opts: ClientOptions = {}) {
    this.baseUrl = (opts.baseUrl ?? "").replace(/\/+$/, "");
    this.ownFetch = opts.fetch !== undefined;
    this.token = opts.token || undefined;
    const f = opts.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new Error("harness: no fetch available; pass ClientOptions.fetch");
    this.fetchFn = f.bind(globalThis);
    this.extraHeaders = { ...opts.headers };
    this.events = opts.events;
    this.reconnect = {
      maxRetries: opts.reconnect?.maxRetries ?? 5,
      initialDelayMs: opts.reconnect?.initialDelayMs ?? 250,
      maxDelayMs: opts.reconnect?.maxDelayMs ?? 5000,
    };
  }

  /** The absolute (or same-origin) URL of an /api/harness route. */
  url(path: string): string {
    const u = `${this.baseUrl}/api/harness/${path.replace(/^\/+/, "")}`;
    // A relative base ("" or "/proxy") means "this page's origin": only a
    // browser has one. Node's fetch would fail with "Failed to parse URL",
    // which does not say what to change.
    if (!this.ownFetch && !/^[a-z][a-z0-9+.-]*:/i.test(u) && (globalThis as { location?: unknown }).location === undefined) {
      throw new Error(
        `harness: baseUrl ${JSON.stringify(this.baseUrl)} is relative, which works only in a browser, where requests go to the page's own origin ` +
          `(e.g. behind a Next.js rewrite or proxy route); outside a browser pass the gateway's origin, e.g. baseUrl: "http://127.0.0.1:8787"`,
      );
    }
    return u;
  }

  private headers(extra?: Record<string, string>): Record<string, string> {
    const h: Record<string, string> = { ...this.extraHeaders, ...extra };
    if (this.token) h["Authorization"] = `Bearer ${this.token}`;
    return h;
  }

  /** Sends a request and throws HarnessError unless the status is 2xx (or
   * listed in okStatuses). */
  private async request(
    method: string,
    path: string,
    opts: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal; okStatuses?: number[] } = {},
  ): Promise<Response> {
    const headers = this.headers(opts.headers);
    let body: string | undefined;
    if (opts.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(opts.body);
    }
    const init: RequestInit = { method, headers };
    if (body !== undefined) init.body = body;
    if (opts.signal) init.signal = opts.signal;
    const res = await this.fetchFn(this.url(path), init);
    if (!res.ok && !opts.okStatuses?.includes(res.status)) throw await errorFrom(res);
    return res;
  }

  private async json(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<unknown> {
    const opts: { body?: unknown; signal?: AbortSignal } = { body };
    if (signal) opts.signal = signal;
    const res = await this.request(method, path, opts);
    return res.json();
  }

  /** GET /health */
  async health(signal?: AbortSignal): Promise<Health> {
    return HealthSchema.parse(await this.json("GET", "health", undefined, signal));
  }

  /** GET /usage: what the sessions' turns used, grouped by session, engine,
   * model or day; since is RFC 3339 or YYYY-MM-DD. */
  async usage(q: { by?: UsageBy; since?: string; projectRoot?: string } = {}, signal?: AbortSignal): Promise<UsageReport> {
    const p = new URLSearchParams();
    if (q.by) p.set("by", q.by);
    if (q.since) p.set("since", q.since);
    if (q.projectRoot) p.set("projectRoot", q.projectRoot);
    const qs = p.toString();
    return UsageReportSchema.parse(await this.json("GET", qs ? `usage?${qs}` : "usage", undefined, signal));
  }

  /** GET /personas: the personas a session can be created with. */
  async listPersonas(signal?: AbortSignal): Promise<Persona[]> {
    return PersonaListSchema.parse(await this.json("GET", "personas", undefined, signal));
  }

  /** POST /session/create */
  async createSession(req: CreateSessionRequest, signal?: AbortSignal): Promise<Session> {
    const body = CreateSessionRequestSchema.parse(req);
    return SessionEnvelopeSchema.parse(await this.json("POST", "session/create", body, signal)).session;
  }

  /** GET /session/{id} with the approval requests it waits on now. */
  async getSessionWithApprovals(id: string, signal?: AbortSignal): Promise<{ session: Session; pendingApprovals: ApprovalRequest[] }> {
    const env = SessionEnvelopeSchema.parse(await this.json("GET", `session/${encodeURIComponent(id)}`, undefined, signal));
    return { session: env.session, pendingApprovals: env.pendingApprovals ?? [] };
  }

  /**
   * PATCH /session/{id}: changes what the session's next turns run with
   * (persona, model, permission mode, effort) and its title. A change made
   * while a turn runs applies from the next turn. Rejects with HarnessError
   * 400 (a bad value), 403 (bypassPermissions not allowed here), 404 (no
   * such session or persona).
   */
  async updateSession(id: string, fields: UpdateSessionRequest, signal?: AbortSignal): Promise<SessionEnvelope> {
    const body = UpdateSessionRequestSchema.parse(fields);
    return SessionEnvelopeSchema.parse(await this.json("PATCH", `session/${encodeURIComponent(id)}`, body, signal));
  }

  /**
   * POST /session/{id}/fork: a new session with the conversation up to the
   * turn that holds event `atSeq` (default: all of it), the same project,
   * persona and engine; the source is left as it is. Rejects with
   * HarnessError 404 (no such session or seq), 409 (a turn runs) or 422
   * (the engine cannot fork: see engines()[i].controls).
   */
  async forkSession(id: string, opts: { atSeq?: number; signal?: AbortSignal } = {}): Promise<Session> {
    const body = ForkRequestSchema.parse(opts.atSeq === undefined ? {} : { atSeq: opts.atSeq });
    return SessionEnvelopeSchema.parse(await this.json("POST", `session/${encodeURIComponent(id)}/fork`, body, opts.signal)).session;
  }

  /** GET /session/{id}/turns: the turns, oldest first, and what a rewind can do at each. */
  async listTurns(id: string, signal?: AbortSignal): Promise<TurnInfo[]> {
    return TurnListSchema.parse(await this.json("GET", `session/${encodeURIComponent(id)}/turns`, undefined, signal));
  }

  /**
   * GET /session/{id}/rewind?toTurn=: what rewinding the files to before
   * that turn would change, a unified diff per file. Changes nothing.
   */
  async previewRewind(id: string, toTurn: number, signal?: AbortSignal): Promise<RewindPreview> {
    if (!Number.isSafeInteger(toTurn) || toTurn < 1) throw new RangeError(`harness: toTurn must be a positive integer, got ${toTurn}`);
    return RewindPreviewSchema.parse(await this.json("GET", `session/${encodeURIComponent(id)}/rewind?toTurn=${toTurn}`, undefined, signal));
  }

  /**
   * POST /session/{id}/rewind: back to before the turn whose user:message
   * has seq `toTurn` — its files, its conversation or both. The log keeps
   * everything and gains a session:rewound event. Rejects with
   * HarnessError 404, 409 (a turn runs) or 422 (the engine cannot cut its
   * conversation, or the files have no snapshot for that turn).
   */
  async rewind(id: string, req: RewindRequest, signal?: AbortSignal): Promise<RewindResult> {
    const body = RewindRequestSchema.parse(req);
    return RewindResultSchema.parse(await this.json("POST", `session/${encodeURIComponent(id)}/rewind`, body, signal));
  }

  /** PATCH /session/{id}: renames a session. */
  async setTitle(id: string, title: string, signal?: AbortSignal): Promise<Session> {
    return SessionEnvelopeSchema.parse(await this.json("PATCH", `session/${encodeURIComponent(id)}`, { title }, signal)).session;
  }

  /**
   * POST /approval: answers an approval:requested of the session. Resolves
   * true when this answer decided it, false when another one (a person
   * elsewhere, a rule, the timeout, the end of the turn) came first (409).
   * Rejects with HarnessError on an unknown session or request (404).
   */
  async approve(
    sessionId: string,
    requestId: string,
    decision: ApprovalDecision,
    opts: { message?: string; updatedInput?: Record<string, unknown>; signal?: AbortSignal } = {},
  ): Promise<boolean> {
    const body: Record<string, unknown> = { sessionId, requestId, decision: ApprovalDecisionSchema.parse(decision) };
    if (opts.message !== undefined) body.message = opts.message;
    if (opts.updatedInput !== undefined) body.updatedInput = opts.updatedInput;
    const req: { body: unknown; signal?: AbortSignal; okStatuses: number[] } = { body, okStatuses: [409] };
    if (opts.signal) req.signal = opts.signal;
    const res = await this.request("POST", "approval", req);
    await res.body?.cancel();
    return res.status === 200;
  }

  /** GET /engines: every engine, available here or why not. */
  async engines(signal?: AbortSignal): Promise<EngineStatus[]> {
    return EngineListSchema.parse(await this.json("GET", "engines", undefined, signal));
  }

  /** GET /roots: the project roots sessions may be created in. */
  async roots(signal?: AbortSignal): Promise<Roots> {
    return RootsSchema.parse(await this.json("GET", "roots", undefined, signal));
  }

  /** GET /trust: what waits for a person's trust in the project (persona
   * files whose grants widened, project MCP servers nobody trusted). */
  async listTrust(projectRoot: string, signal?: AbortSignal): Promise<TrustList> {
    return TrustListSchema.parse(await this.json("GET", `trust?projectRoot=${encodeURIComponent(projectRoot)}`, undefined, signal));
  }

  /** POST /trust: trust it as it is now. Rejects with HarnessError 409
   * when it changed since the person was shown `hash`. */
  async acceptTrust(req: TrustRequest, signal?: AbortSignal): Promise<TrustItem> {
    const body = TrustRequestSchema.parse(req);
    return TrustAcceptedSchema.parse(await this.json("POST", "trust", body, signal)).trusted;
  }

  /** GET /session/list, newest first; every allowed root without projectRoot. */
  async listSessions(projectRoot?: string, signal?: AbortSignal): Promise<SessionSummary[]> {
    const q = projectRoot === undefined ? "" : `?projectRoot=${encodeURIComponent(projectRoot)}`;
    return SessionListSchema.parse(await this.json("GET", `session/list${q}`, undefined, signal));
  }

  /** GET /session/{id} */
  async getSession(id: string, signal?: AbortSignal): Promise<Session> {
    return SessionEnvelopeSchema.parse(await this.json("GET", `session/${encodeURIComponent(id)}`, undefined, signal)).session;
  }

  /** DELETE /session/{id} (kills a running turn first). A worktree
   * session's worktree and branch go too; with unmerged changes it rejects
   * with HarnessError 409 unless force. */
  async deleteSession(id: string, signal?: AbortSignal, opts: { force?: boolean } = {}): Promise<void> {
    const req: { signal?: AbortSignal } = {};
    if (signal) req.signal = signal;
    const q = opts.force ? "?force=1" : "";
    const res = await this.request("DELETE", `session/${encodeURIComponent(id)}${q}`, req);
    await res.body?.cancel();
  }

  /** GET /session/{id}/diff: what a worktree session changed since its
   * base. Rejects with HarnessError 422 for a session without a worktree. */
  async sessionDiff(id: string, signal?: AbortSignal): Promise<SessionDiff> {
    return SessionDiffSchema.parse(await this.json("GET", `session/${encodeURIComponent(id)}/diff`, undefined, signal));
  }

  /**
   * POST /session/{id}/merge: commits the session's uncommitted changes on
   * its branch and merges it. Resolves {merged: true, commit} or, on
   * conflicts, {merged: false, conflicts} (the target untouched). Rejects
   * with HarnessError 409 while a turn runs or the project's tree has
   * uncommitted changes.
   */
  async mergeSession(id: string, req: MergeRequest = {}, signal?: AbortSignal): Promise<MergeResult> {
    const opts: { body: unknown; signal?: AbortSignal; okStatuses: number[] } = { body: MergeRequestSchema.parse(req), okStatuses: [409] };
    if (signal) opts.signal = signal;
    const res = await this.request("POST", `session/${encodeURIComponent(id)}/merge`, opts);
    if (res.status === 409) {
      const body = MergeResultSchema.safeParse(await res.clone().json().catch(() => undefined));
      if (!body.success || !body.data.conflicts) throw await errorFrom(res);
      return { ...body.data, merged: false };
    }
    return MergeResultSchema.parse(await res.json());
  }

  /** POST /interrupt. Resolves true when a running turn was interrupted,
   * false when the session had none running. */
  async interrupt(sessionId: string, signal?: AbortSignal): Promise<boolean> {
    const opts: { body: unknown; signal?: AbortSignal; okStatuses: number[] } = { body: { sessionId }, okStatuses: [404] };
    if (signal) opts.signal = signal;
    const res = await this.request("POST", "interrupt", opts);
    await res.body?.cancel();
    return res.status !== 404;
  }

  /**
   * POST /turn. Resolves once the gateway accepted the turn (rejects with
   * HarnessError on 400, 404 or 409), to a stream of the turn's events that
   * ends after process:exit. If the connection drops before that, the
   * stream resumes from GET /session/{id}/events with Last-Event-ID.
   */
  async startTurn(sessionId: string, message: string, opts: StreamOptions & { turn?: TurnOptions } = {}): Promise<TurnStream> {
    const r = await this.postTurn(sessionId, { sessionId, message, ...opts.turn }, opts);
    if ("queued" in r) throw new Error("harness: the gateway queued a turn that was not sent with queue");
    return r;
  }

  /**
   * POST /turn with queue: on a busy session the message is queued behind
   * the running turn and what is queued, resolving to where
   * ({queued: true, promptId, position}); the core runs it later as its
   * own turn (follow it with sessionEvents). On an idle session the turn
   * starts, resolving to its stream as startTurn does. Rejects with
   * HarnessError 429 (the queue is full) or 422 (the message is too large).
   */
  async queueTurn(sessionId: string, message: string, opts: StreamOptions & { turn?: TurnOptions } = {}): Promise<TurnStream | QueuedAnswer> {
    return this.postTurn(sessionId, { sessionId, message, ...opts.turn, queue: true }, opts);
  }

  /** GET /session/{id}/queue: the queued prompts, in the order they run. */
  async getQueue(id: string, signal?: AbortSignal): Promise<QueuedPrompt[]> {
    return QueueSchema.parse(await this.json("GET", `session/${encodeURIComponent(id)}/queue`, undefined, signal)).prompts;
  }

  /** PATCH /session/{id}/queue/{promptId}: edit a queued prompt's text
   * and/or move it; resolves to the queue as it now is. Rejects with
   * HarnessError 404 when it is not queued (any more). */
  async editQueuedPrompt(id: string, promptId: string, edit: QueueEditRequest, signal?: AbortSignal): Promise<QueuedPrompt[]> {
    const body = QueueEditRequestSchema.parse(edit);
    return QueueSchema.parse(
      await this.json("PATCH", `session/${encodeURIComponent(id)}/queue/${encodeURIComponent(promptId)}`, body, signal),
    ).prompts;
  }

  /** DELETE /session/{id}/queue/{promptId}: the prompt never runs. Rejects
   * with HarnessError 404 when it is not queued (any more). */
  async deleteQueuedPrompt(id: string, promptId: string, signal?: AbortSignal): Promise<void> {
    const req: { signal?: AbortSignal } = {};
    if (signal) req.signal = signal;
    const res = await this.request("DELETE", `session/${encodeURIComponent(id)}/queue/${encodeURIComponent(promptId)}`, req);
    await res.body?.cancel();
  }

  /** POST /session/{id}/steer: put message into the session's running
   * turn, where its engine can take it; it becomes a user:message of that
   * turn. Rejects with HarnessError 409 when no turn runs, 422 when the
   * session's engine cannot steer (the message names the engines that
   * can; GET /engines says controls.steer). */
  async steer(id: string, message: string, signal?: AbortSignal): Promise<void> {
    const body = SteerRequestSchema.parse({ message });
    SteerAnswerSchema.parse(await this.json("POST", `session/${encodeURIComponent(id)}/steer`, body, signal));
  }

  /** POST /session/{id}/plan: decide the plan the session's turn waits
   * with (a plan:ready event). Rejects with HarnessError 409 when no plan
   * waits, 400 for a bad decision. */
  async decidePlan(id: string, decision: PlanDecision, signal?: AbortSignal): Promise<void> {
    const body = PlanDecisionSchema.parse(decision);
    await this.json("POST", `session/${encodeURIComponent(id)}/plan`, body, signal);
  }

  private async postTurn(sessionId: string, req: TurnRequest, opts: StreamOptions): Promise<TurnStream | QueuedAnswer> {
    const body = TurnRequestSchema.parse(req);
    const ctl = new AbortController();
    const unlink = linkSignals(opts.signal, ctl);
    let res: Response;
    try {
      res = await this.request("POST", `turn${eventsQuery(opts.events ?? this.events, "?")}`, {
        body,
        headers: { Accept: "text/event-stream" },
        signal: ctl.signal,
      });
    } catch (err) {
      unlink();
      throw err;
    }
    if (res.status === 202) {
      unlink();
      return QueuedAnswerSchema.parse(await res.json());
    }
    const state: { lastSeq: number | undefined } = { lastSeq: undefined };
    const self = this;
    let used = false;

    async function* iterate(): AsyncGenerator<HarnessEvent, void, undefined> {
      if (used) throw new Error("harness: a TurnStream can be iterated only once");
      used = true;
      try {
        let current: Response | null = res;
        let attempt = 0;
        let delay = self.reconnect.initialDelayMs;
        for (;;) {
          let error: unknown = null;
          let progressed = false;
          if (current) {
            if (state.lastSeq === undefined && current !== res) {
              // The first stream dropped before any event: we do not know
              // where this turn starts in the log, so read the whole log and
              // keep its last turn (see lastTurn).
              const events: HarnessEvent[] = [];
              try {
                for await (const ev of self.eventStream(current, undefined, opts)) events.push(ev);
              } catch (err) {
                error = err;
              }
              if (error === null) {
                const turn = lastTurn(events);
                for (const ev of turn) {
                  if (ev.seq !== undefined) state.lastSeq = ev.seq;
                  yield ev;
                }
                if (turn.length > 0 && turn[turn.length - 1]!.type === "process:exit") return;
              }
            } else {
              try {
                for await (const ev of self.eventStream(current, state.lastSeq, opts)) {
                  progressed = true;
                  if (ev.seq !== undefined) state.lastSeq = ev.seq;
                  yield ev;
                  if (ev.type === "process:exit") return;
                }
              } catch (err) {
                error = err;
              }
            }
          }
          if (error !== null && (isAbort(error, ctl.signal) || isFatal(error))) throw error;
          if (progressed) {
            attempt = 0;
            delay = self.reconnect.initialDelayMs;
          }
          attempt++;
          if (attempt > self.reconnect.maxRetries) {
            throw new Error(`harness: turn stream of session ${sessionId} dropped before process:exit and could not be resumed`, {
              cause: error,
            });
          }
          opts.onReconnect?.({ attempt, lastEventId: state.lastSeq, error });
          await sleep(delay, ctl.signal);
          delay = Math.min(delay * 2, self.reconnect.maxDelayMs);
          try {
            current = await self.openEvents(sessionId, state.lastSeq ?? 0, ctl.signal, opts.events);
          } catch (err) {
            if (isAbort(err, ctl.signal) || err instanceof HarnessError) throw err;
            current = null; // network error: try again
          }
        }
      } finally {
        unlink();
        ctl.abort();
      }
    }

    const gen = iterate();
    return {
      sessionId,
      get lastSeq() {
        return state.lastSeq;
      },
      close() {
        ctl.abort();
      },
      [Symbol.asyncIterator]() {
        return gen;
      },
    };
  }

  /**
   * GET /session/{id}/events: the stored events after `after` (default 0,
   * the whole history), then the live events of a running turn until its
   * process:exit. Ends when the gateway ends the stream; a dropped
   * connection is resumed with Last-Event-ID.
   */
  async *sessionEvents(sessionId: string, opts: SessionEventsOptions = {}): AsyncGenerator<HarnessEvent, void, undefined> {
    const ctl = new AbortController();
    const unlink = linkSignals(opts.signal, ctl);
    let lastSeq: number = opts.after ?? 0;
    let attempt = 0;
    let delay = this.reconnect.initialDelayMs;
    try {
      for (;;) {
        let error: unknown = null;
        let progressed = false;
        try {
          const res = await this.openEvents(sessionId, lastSeq, ctl.signal, opts.events);
          for await (const ev of this.eventStream(res, lastSeq, opts)) {
            progressed = true;
            if (ev.seq !== undefined) lastSeq = ev.seq;
            yield ev;
          }
          return; // the gateway ended the stream
        } catch (err) {
          error = err;
        }
        if (isAbort(error, ctl.signal) || isFatal(error)) throw error;
        if (progressed) {
          attempt = 0;
          delay = this.reconnect.initialDelayMs;
        }
        attempt++;
        if (attempt > this.reconnect.maxRetries) {
          throw new Error(`harness: event stream of session ${sessionId} dropped and could not be resumed`, { cause: error });
        }
        opts.onReconnect?.({ attempt, lastEventId: lastSeq, error });
        await sleep(delay, ctl.signal);
        delay = Math.min(delay * 2, this.reconnect.maxDelayMs);
      }
    } finally {
      unlink();
      ctl.abort();
    }
  }

  private async openEvents(sessionId: string, after: number, signal: AbortSignal, events: StreamOptions["events"]): Promise<Response> {
    const headers: Record<string, string> = { Accept: "text/event-stream" };
    if (after > 0) headers["Last-Event-ID"] = String(after);
    return this.request("GET", `session/${encodeURIComponent(sessionId)}/events?after=${after}${eventsQuery(events ?? this.events, "&")}`, { headers, signal });
  }

  /** Decodes an SSE response into events, skipping any at or before
   * `after` (a resumed stream must not repeat what was already yielded). */
  private async *eventStream(res: Response, after: number | undefined, opts: StreamOptions): AsyncGenerator<HarnessEvent> {
    if (!res.body) throw new Error("harness: event stream response has no body");
    const sseOpts: { onComment?: (text: string) => void } = {};
    if (opts.onComment) sseOpts.onComment = opts.onComment;
    for await (const msg of readSSE(res.body, sseOpts)) {
      if (msg.event !== "message") continue;
      const idSeq = /^\d+$/.test(msg.id) ? Number(msg.id) : undefined;
      const ev = parseEvent(JSON.parse(msg.data), idSeq);
      if (after !== undefined && ev.seq !== undefined && ev.seq <= after) continue;
      yield ev;
    }
  }
}

/** The ?events= part of a stream's URL (after sep), "" for the default. */
function eventsQuery(events: StreamOptions["events"], sep: "?" | "&"): string {
  if (events === undefined) return "";
  const v = events === "all" ? "all" : events.join(",");
  return v === "" ? "" : `${sep}events=${encodeURIComponent(v)}`;
}

/** The events of the last turn in a log: those after the process:exit that
 * ends the turn before it, without the session:forked / session:rewound
 * markers that stand between turns. */
export function lastTurn(events: HarnessEvent[]): HarnessEvent[] {
  let end = events.length;
  if (end > 0 && events[end - 1]!.type === "process:exit") end--;
  let start = 0;
  for (let i = end - 1; i >= 0; i--) {
    if (events[i]!.type === "process:exit") {
      start = i + 1;
      break;
    }
  }
  while (start < end && (events[start]!.type === "session:forked" || events[start]!.type === "session:rewound")) start++;
  return events.slice(start);
}

async function errorFrom(res: Response): Promise<HarnessError> {
  const text = await res.text().catch(() => "");
  let body: unknown = text;
  let message = `${res.status} ${res.statusText}`.trim();
  try {
    body = JSON.parse(text);
    const parsed = ErrorBodySchema.safeParse(body);
    if (parsed.success) message = parsed.data.error;
  } catch {
    if (text) message = `${message}: ${text.slice(0, 200)}`;
  }
  return new HarnessError(res.status, message, body);
}

// ---------------------------------------------------------------------------
// The same operations as plain functions taking the options first.

export const health = (o: ClientOptions) => new HarnessClient(o).health();
export const usage = (o: ClientOptions, q: { by?: UsageBy; since?: string; projectRoot?: string } = {}) => new HarnessClient(o).usage(q);
export const listPersonas = (o: ClientOptions) => new HarnessClient(o).listPersonas();
export const createSession = (o: ClientOptions, req: CreateSessionRequest) => new HarnessClient(o).createSession(req);
export const listSessions = (o: ClientOptions, projectRoot?: string) => new HarnessClient(o).listSessions(projectRoot);
export const getSession = (o: ClientOptions, id: string) => new HarnessClient(o).getSession(id);
export const deleteSession = (o: ClientOptions, id: string, force?: boolean) =>
  new HarnessClient(o).deleteSession(id, undefined, force ? { force } : {});
export const sessionDiff = (o: ClientOptions, id: string) => new HarnessClient(o).sessionDiff(id);
export const mergeSession = (o: ClientOptions, id: string, req?: MergeRequest) => new HarnessClient(o).mergeSession(id, req);
export const updateSession = (o: ClientOptions, id: string, fields: UpdateSessionRequest) => new HarnessClient(o).updateSession(id, fields);
export const forkSession = (o: ClientOptions, id: string, atSeq?: number) =>
  new HarnessClient(o).forkSession(id, atSeq === undefined ? {} : { atSeq });
export const listTurns = (o: ClientOptions, id: string) => new HarnessClient(o).listTurns(id);
export const previewRewind = (o: ClientOptions, id: string, toTurn: number) => new HarnessClient(o).previewRewind(id, toTurn);
export const rewind = (o: ClientOptions, id: string, req: RewindRequest) => new HarnessClient(o).rewind(id, req);
export const interrupt = (o: ClientOptions, sessionId: string) => new HarnessClient(o).interrupt(sessionId);
export const startTurn = (o: ClientOptions, sessionId: string, message: string, s?: StreamOptions) =>
  new HarnessClient(o).startTurn(sessionId, message, s);
export const sessionEvents = (o: ClientOptions, sessionId: string, s?: SessionEventsOptions) =>
  new HarnessClient(o).sessionEvents(sessionId, s);
export const queueTurn = (o: ClientOptions, sessionId: string, message: string, s?: StreamOptions) =>
  new HarnessClient(o).queueTurn(sessionId, message, s);
export const getQueue = (o: ClientOptions, id: string) => new HarnessClient(o).getQueue(id);
export const editQueuedPrompt = (o: ClientOptions, id: string, promptId: string, edit: QueueEditRequest) =>
  new HarnessClient(o).editQueuedPrompt(id, promptId, edit);
export const deleteQueuedPrompt = (o: ClientOptions, id: string, promptId: string) => new HarnessClient(o).deleteQueuedPrompt(id, promptId);
export const steer = (o: ClientOptions, id: string, message: string) => new HarnessClient(o).steer(id, message);
export const decidePlan = (o: ClientOptions, id: string, decision: PlanDecision) => new HarnessClient(o).decidePlan(id, decision);
