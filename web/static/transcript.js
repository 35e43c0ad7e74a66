// The conversation model: folds UI events into turns and blocks. No DOM
// here, so it can be unit-tested with node --test.
//
// A turn is what one user message caused: the events from its first one up
// to and including its process:exit. Each block carries a version `v` that
// goes up when it changes, so a view re-renders only what changed.

let nextKey = 1;

import { planBlock, planResolution } from "./plan.js";

export class Transcript {
  constructor() {
    /** @type {Array<Turn>} */
    this.turns = [];
    this.lastSeq = 0;
    /** Turns changed since the last takeDirty(). */
    this.dirty = new Set();
  }

  /** The turn events go to: the last one while it has no process:exit. */
  openTurn() {
    const last = this.turns[this.turns.length - 1];
    if (last && !last.exit) return last;
    const t = newTurn(null);
    this.turns.push(t);
    return t;
  }

  /** True while the last turn has not ended. */
  get running() {
    const last = this.turns[this.turns.length - 1];
    return !!last && !last.exit && last.started;
  }

  /** Adds the user's message as the start of a new turn (or names the user
   * message of an open turn that has none yet). */
  addUser(text, { local = false } = {}) {
    const last = this.turns[this.turns.length - 1];
    if (last && !last.exit && !last.started) {
      if (last.user === null || last.userLocal) {
        last.user = text;
        last.userLocal = local;
        this.dirty.add(last);
      }
      return last;
    }
    if (last && !last.exit && last.started && last.user !== null) return last;
    if (last && !last.exit && last.started) {
      last.user = text;
      last.userLocal = local;
      this.dirty.add(last);
      return last;
    }
    const t = newTurn(text);
    t.userLocal = local;
    this.turns.push(t);
    this.dirty.add(t);
    return t;
  }

  /** Applies one UI event. Events at or before lastSeq are skipped, so a
   * resumed stream may safely overlap what was already applied. Returns
   * false for a skipped event. */
  apply(ev) {
    if (!ev || typeof ev !== "object" || typeof ev.type !== "string") return false;
    if (typeof ev.seq === "number") {
      if (ev.seq <= this.lastSeq) return false;
      this.lastSeq = ev.seq;
    }
    // A user message logged by the gateway (not in the contract yet; any
    // "user:…" event with a text or message field is taken as one). Its
    // seq names the turn for a rewind (toTurn) or a fork (atSeq).
    if (/^user[:.]/.test(ev.type)) {
      const text = typeof ev.text === "string" ? ev.text : typeof ev.message === "string" ? ev.message : null;
      const open = this.turns[this.turns.length - 1];
      if (text !== null && open && !open.exit && open.started && open.user !== null) {
        // A message steered into the running turn: shown where it came.
        const container = this.containerFor(open, undefined);
        container.blocks.push(block("steer", { text }));
        container.touch();
        if (typeof ev.seq === "number") open.lastSeq = ev.seq;
        this.dirty.add(open);
        return true;
      }
      if (text !== null) {
        const turn = this.addUser(text);
        if (typeof ev.seq === "number" && turn.userSeq === null) turn.userSeq = ev.seq;
        if (typeof ev.seq === "number") turn.lastSeq = ev.seq;
        this.dirty.add(turn);
      }
      return true;
    }
    // The queue's events (queue.js shows the queue) start no turn: the
    // queued prompt's turn starts with its user:message.
    if (ev.type === "prompt:queued" || ev.type === "prompt:dequeued") return true;
    // The conversation controls' events stand outside any turn: a marker
    // between turns, never a turn that runs.
    if (ev.type === "session:forked" || ev.type === "session:rewound") {
      this.addMarker(ev);
      return true;
    }
    const turn = this.openTurn();
    turn.started = true;
    if (typeof ev.seq === "number") turn.lastSeq = ev.seq;
    this.dirty.add(turn);
    const container = this.containerFor(turn, ev.parentToolUseId);
    switch (ev.type) {
      case "session:init":
        turn.init = { model: ev.model, claudeSessionId: ev.claudeSessionId, cliVersion: ev.cliVersion };
        break;
      case "chat:delta":
      case "thinking:delta": {
        const kind = ev.type === "chat:delta" ? "text" : "thinking";
        const last = container.blocks[container.blocks.length - 1];
        if (last && last.kind === kind) {
          last.text += ev.text ?? "";
          last.v++;
        } else {
          container.blocks.push(block(kind, { text: ev.text ?? "" }));
        }
        container.touch();
        break;
      }
      case "chat:complete":
        completeText(container, typeof ev.text === "string" ? ev.text : "");
        container.touch();
        break;
      case "tool:start": {
        const b = block("tool", {
          id: ev.toolUseId,
          name: ev.name ?? "tool",
          input: ev.input ?? null,
          result: null,
          blocks: [],
        });
        container.blocks.push(b);
        turn.tools.set(ev.toolUseId, b);
        container.touch();
        break;
      }
      case "tool:result": {
        const b = turn.tools.get(ev.toolUseId);
        const result = { content: resultText(ev.content), isError: !!ev.isError };
        if (b) {
          b.result = result;
          b.v++;
        } else {
          const orphan = block("tool", { id: ev.toolUseId, name: "tool", input: null, result, blocks: [] });
          container.blocks.push(orphan);
          turn.tools.set(ev.toolUseId, orphan);
        }
        container.touch();
        break;
      }
      case "approval:requested": {
        const b = block("approval", {
          requestId: ev.requestId,
          toolName: ev.toolName ?? "tool",
          input: ev.input ?? null,
          expiresAt: ev.expiresAt ?? "",
          unsandboxed: ev.unsandboxed === true,
          resolved: null,
        });
        container.blocks.push(b);
        turn.approvals.set(ev.requestId, b);
        container.touch();
        break;
      }
      case "approval:resolved": {
        const b = turn.approvals.get(ev.requestId);
        if (b) {
          b.resolved = { decision: ev.decision, by: ev.by, message: ev.message ?? "" };
          b.v++;
          container.touch();
        }
        break;
      }
      case "plan:ready": {
        const b = block("plan", planBlock(ev));
        container.blocks.push(b);
        turn.plans.set(b.planId, b);
        container.touch();
        break;
      }
      case "plan:resolved": {
        const b = turn.plans.get(ev.planId);
        if (b) {
          b.resolved = planResolution(ev);
          b.v++;
          container.touch();
        }
        break;
      }
      case "trust:required": {
        // What the turn did not honour until a person trusts it: a card
        // with the change and, for a persona file or an MCP server, a
        // Trust button (the session's own file is fixed, not trusted).
        const b = block("trust", {
          trustKind: String(ev.kind ?? ""),
          name: typeof ev.name === "string" ? ev.name : "",
          path: typeof ev.path === "string" ? ev.path : "",
          hash: typeof ev.hash === "string" ? ev.hash : "",
          changes: Array.isArray(ev.changes)
            ? ev.changes.filter((c) => c && typeof c === "object").map((c) => ({ field: String(c.field ?? ""), trusted: String(c.trusted ?? ""), now: String(c.now ?? "") }))
            : [],
          rules: Array.isArray(ev.rules) ? ev.rules.map(String) : [],
          message: typeof ev.message === "string" ? ev.message : "",
          trusted: false,
        });
        container.blocks.push(b);
        container.touch();
        break;
      }
      case "session:complete":
        turn.cost = { costUsd: ev.costUsd, numTurns: ev.numTurns, durationMs: ev.durationMs, usage: ev.usage ?? null };
        turn.status = "done";
        break;
      case "session:error":
        turn.error = { error: ev.error, kind: ev.kind, costUsd: ev.costUsd, apiErrorStatus: ev.apiErrorStatus };
        turn.status = ev.kind === "interrupted" ? "interrupted" : "error";
        break;
      case "process:exit":
        turn.exit = { code: ev.code, signal: ev.signal };
        if (turn.status === "running") turn.status = ev.code === 0 ? "done" : "error";
        break;
      default:
        // Unknown event types are kept, not shown.
        turn.unknown.push(ev);
        break;
    }
    return true;
  }

  /** Where an event goes: the turn itself, or the tool card of the
   * subagent's Task tool use. */
  containerFor(turn, parentId) {
    const parent = parentId ? turn.tools.get(parentId) : undefined;
    if (!parent) return { blocks: turn.blocks, touch() {} };
    return {
      blocks: parent.blocks,
      touch() {
        parent.v++;
      },
    };
  }

  /** Adds a session:forked or session:rewound marker. A rewind of the
   * conversation marks the turns it undid (from the one whose user
   * message has seq toTurn) as rewound; the log keeps them, and so does
   * the view, dimmed. An open turn is closed first: the core writes these
   * events only between turns. */
  addMarker(ev) {
    const last = this.turns[this.turns.length - 1];
    if (last && !last.exit && !last.started && last.user === null) this.turns.pop();
    const m = newTurn(null);
    m.marker = ev.type === "session:forked"
      ? { type: ev.type, from: String(ev.from ?? ""), atSeq: Number(ev.atSeq) || 0 }
      : { type: ev.type, toTurn: Number(ev.toTurn) || 0, files: Array.isArray(ev.files) ? ev.files.map(String) : [], conversation: !!ev.conversation };
    m.exit = { marker: true };
    m.status = "done";
    if (typeof ev.seq === "number") m.userSeq = m.lastSeq = ev.seq;
    this.turns.push(m);
    this.dirty.add(m);
    if (m.marker.type === "session:rewound" && m.marker.conversation && m.marker.toTurn > 0) {
      for (const t of this.turns) {
        if (!t.marker && t.userSeq !== null && t.userSeq >= m.marker.toTurn && t.userSeq < (m.userSeq ?? Infinity) && !t.rewound) {
          t.rewound = true;
          this.dirty.add(t);
        }
      }
    }
    return m;
  }

  /** The trust:required notices of the last turn that had any (what
   * the session runs without until a person trusts it). */
  trustNotices() {
    for (let i = this.turns.length - 1; i >= 0; i--) {
      const list = this.turns[i].blocks.filter((b) => b.kind === "trust");
      if (list.length > 0) return list;
    }
    return [];
  }

  /** The approval requests no one has answered yet. */
  pendingApprovals() {
    const out = [];
    for (const t of this.turns) for (const b of t.approvals.values()) if (!b.resolved) out.push(b);
    return out;
  }

  takeDirty() {
    const d = [...this.dirty];
    this.dirty.clear();
    return d;
  }
}

function newTurn(user) {
  return {
    key: nextKey++,
    user,
    userLocal: false,
    started: false,
    blocks: [],
    tools: new Map(),
    approvals: new Map(),
    plans: new Map(),
    init: null,
    cost: null,
    error: null,
    exit: null,
    status: "running",
    unknown: [],
    userSeq: null, // seq of the turn's user:message: toTurn of a rewind
    lastSeq: null, // seq of the turn's last event: atSeq of a fork
    rewound: false, // a rewind of the conversation undid this turn
    marker: null, // session:forked / session:rewound: a note, not a turn
  };
}

function block(kind, fields) {
  return { key: nextKey++, kind, v: 1, ...fields };
}

/** chat:complete carries the full final answer text. Deltas normally
 * already built it; this fills in what they missed. */
function completeText(container, text) {
  if (!text) return;
  const texts = container.blocks.filter((b) => b.kind === "text");
  const norm = (s) => s.trim();
  if (texts.some((b) => norm(b.text) === norm(text))) return;
  if (norm(texts.map((b) => b.text).join("")) === norm(text)) return;
  const last = container.blocks[container.blocks.length - 1];
  if (last && last.kind === "text" && text.startsWith(last.text)) {
    last.text = text;
    last.v++;
    return;
  }
  container.blocks.push(block("text", { text }));
}

/** Cuts text to at most `max` lines; returns {text, more} where more is the
 * number of lines left out. */
/**
 * The text of a tool result. The native engine's tools answer a JSON
 * object with one string field ({"content": …}, {"entries": …},
 * {"matches": …}, {"error": …}): that field is shown, as the TUI does,
 * so a listing reads as lines and not as JSON with \n in it. Anything
 * else is shown as it is.
 */
export function resultText(content) {
  if (typeof content !== "string") return JSON.stringify(content ?? "");
  if (!content.startsWith("{")) return content;
  try {
    const v = JSON.parse(content);
    if (v && typeof v === "object" && !Array.isArray(v)) {
      const keys = Object.keys(v);
      if (keys.length === 1 && typeof v[keys[0]] === "string") return v[keys[0]];
    }
  } catch {
    // not JSON: a plain result that starts with "{"
  }
  return content;
}

export function truncateLines(text, max = 100) {
  const s = String(text ?? "");
  let count = 0;
  let idx = -1;
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) === 10) {
      count++;
      if (count === max) {
        idx = i;
        break;
      }
    }
  }
  if (idx < 0) return { text: s, more: 0 };
  const rest = s.slice(idx + 1);
  if (rest === "") return { text: s.slice(0, idx), more: 0 };
  const more = rest.split("\n").length - (rest.endsWith("\n") ? 1 : 0);
  return { text: s.slice(0, idx), more };
}

/** A one-line summary of a tool's input for the card header. */
export function toolSummary(name, input) {
  if (!input || typeof input !== "object") return "";
  const pick = (k) => (typeof input[k] === "string" ? input[k] : "");
  const s =
    pick("command") ||
    pick("file_path") ||
    pick("path") ||
    pick("pattern") ||
    pick("url") ||
    pick("query") ||
    pick("description") ||
    pick("prompt");
  const one = s.replace(/\s+/g, " ").trim();
  return one.length > 120 ? one.slice(0, 119) + "…" : one;
}

/** "$0.0123" style cost text. */
export function formatCost(usd) {
  if (typeof usd !== "number" || !isFinite(usd)) return "";
  if (usd === 0) return "$0";
  if (usd < 0.01) return "$" + usd.toFixed(4);
  return "$" + usd.toFixed(2);
}

export function formatDuration(ms) {
  if (typeof ms !== "number" || !isFinite(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** The line a session:retry shows in the status bar, as every door says it:
 * "Retrying 3/10 in 4 s — API unreachable" ("… — overloaded (HTTP 529)"). */
export function retrySummary(ev) {
  const n = Number(ev?.attempt) || 0;
  const max = Number(ev?.maxRetries) || 0;
  const ms = Number(ev?.delayMs) || 0;
  const delay = ms <= 0 ? "" : ` in ${ms < 1000 ? (ms / 1000).toFixed(1) : String(Math.round(ms / 1000))} s`;
  let s = `Retrying ${n}${max > 0 ? `/${max}` : ""}${delay} — ${String(ev?.error ?? "unknown error")}`;
  if (ev?.apiErrorStatus) s += ` (HTTP ${Number(ev.apiErrorStatus)})`;
  return s;
}

/** The header's badge for a session's MCP servers (session:init's
 * mcpServers): its text ("MCP 2/3": connected of all), its tooltip (one
 * line a server, with why it failed), and whether one failed. null when
 * the session has none. Names and errors are the server's own: shown as
 * text, never as HTML. */
export function mcpSummary(servers) {
  if (!Array.isArray(servers) || servers.length === 0) return null;
  const list = servers.filter((s) => s && typeof s.name === "string");
  if (list.length === 0) return null;
  const ok = list.filter((s) => s.status === "connected").length;
  const failed = list.some((s) => s.status === "failed");
  const title = list
    .map((s) => `${s.name}: ${String(s.status ?? "unknown")}${s.error ? ` — ${String(s.error).slice(0, 200)}` : ""}`)
    .join("\n");
  return { text: `MCP ${ok}/${list.length}`, title, failed };
}

/** The lines of a unified diff, each with its kind for colouring:
 * "add", "del", "hunk", "meta" (file headers) or "ctx". */
export function diffLines(patch) {
  const out = [];
  const lines = String(patch ?? "").split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  for (const text of lines) {
    let kind = "ctx";
    if (text.startsWith("+++") || text.startsWith("---") || text.startsWith("diff ") || text.startsWith("index ")) kind = "meta";
    else if (text.startsWith("@@")) kind = "hunk";
    else if (text.startsWith("+")) kind = "add";
    else if (text.startsWith("-")) kind = "del";
    out.push({ kind, text });
  }
  return out;
}

/** The line a session:rewound or session:forked marker shows. `turnText`
 * names the rewound turn by its message when known. */
export function markerText(marker, turnText = "") {
  if (!marker) return "";
  if (marker.type === "session:forked") {
    const at = marker.atSeq > 0 ? ` at event ${marker.atSeq}` : "";
    return `Forked from session ${marker.from.slice(0, 8)}${at}. New messages go to this copy; the original is unchanged.`;
  }
  const what = [];
  const n = marker.files.length;
  if (n > 0) what.push(`${n} ${n === 1 ? "file" : "files"} restored`);
  if (marker.conversation) what.push("conversation cut");
  if (what.length === 0) what.push("nothing changed");
  const to = turnText ? ` “${turnText.length > 60 ? turnText.slice(0, 59) + "…" : turnText}”` : "";
  return `Rewound to before${to || " a turn"}: ${what.join(", ")}.`;
}

/** A session's title from its first message, as the server makes it
 * (harness titleOf): the first line, trimmed, cut to 80 characters. The
 * console shows it as soon as the message is sent, not the mode. */
export function titleOf(message) {
  const line = String(message).trim().split("\n")[0].trim();
  const r = Array.from(line);
  return r.length > 80 ? r.slice(0, 79).join("") + "…" : line;
}

/** What a person can do about an error of this kind, or "". The Claude
 * Code CLI says only "Not logged in · Please run /login", which is about
 * its own terminal UI, not a server. */
export function errorHint(kind) {
  if (kind === "not_logged_in") {
    return "The agent has no credentials: start harness serve with ANTHROPIC_API_KEY set (or run claude /login as the user it runs as), or try it without an account: harness serve --demo.";
  }
  return "";
}
