// The harness web console: session sidebar, streaming chat, tool cards.
//
// Model text reaches the page only through textContent or through
// renderMarkdown, which escapes it before adding markup.

import { Api, ApiError, eventsOf, sleep } from "./api.js";
import { Transcript, truncateLines, toolSummary, formatCost, formatDuration, retrySummary, diffLines, markerText, mcpSummary, titleOf, errorHint } from "./transcript.js";
import { renderMarkdown } from "./markdown.js";
import { ConsoleNotifier } from "./notify.js";
import { QueuePanel } from "./queue.js";
import { planCard, updatePlanCard, decidePlan } from "./plan.js";
import { Board } from "./board.js";
import { initUsage, showSpend } from "./usage.js";
import { canSteer, steer } from "./steer.js";
import { NodesView, nodeBadge, nodeBlocked } from "./nodes.js";
import { approvalQuestion, offersAlways } from "./approval.js";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "harness.token";
const ROOT_KEY = "harness.lastRoot";
const USER_KEY = (id) => `harness.user.${id}`;
const MAX_RESULT_LINES = 100;

// ---------------------------------------------------------------------------
// State

let token = safeStorage(() => sessionStorage.getItem(TOKEN_KEY)) || "";
const api = new Api(() => token);
const queue = new QueuePanel({ api, root: $("queue-panel"), toast }); // queue.js
const notifier = new ConsoleNotifier({ open: (id) => (location.hash = `#s=${encodeURIComponent(id)}`) }); // notify.js
initUsage(api, () => state.current?.projectRoot || ""); // usage.js: the usage view

const state = {
  sessions: [],
  currentId: null,
  current: null, // the Session object
  transcript: new Transcript(),
  reader: null, // AbortController of the stream being read
  sending: false,
  roots: [], // allowed project roots, from GET /roots
  demo: false, // the server answers with its demo model
  rootsLoaded: false,
  enginesLoaded: false,
  personas: null, // null: not loaded; [] with personaFree: free text
  personaFree: false,
  localUsers: [], // user messages remembered by this browser: [{after, text}]
  engines: [], // GET /engines: [{name, available, controls: {fork, rewind}}]
  rewind: null, // the open rewind dialog: {id, turn, preview}
};

function safeStorage(f) {
  try {
    return f();
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------
// Small DOM helpers

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function setStatus(text, kind = "") {
  const s = $("status");
  s.textContent = text;
  s.className = `status ${kind}`;
  s.hidden = !text;
}

function toast(text, kind = "error") {
  const t = el("div", { class: `toast ${kind}`, role: "alert", text });
  $("toasts").append(t);
  setTimeout(() => t.remove(), 6000);
}

function relTime(iso) {
  const t = Date.parse(iso);
  if (!isFinite(t)) return "";
  const s = Math.round((Date.now() - t) / 1000);
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(t).toLocaleDateString();
}

function baseName(p) {
  const parts = String(p || "").split(/[\\/]+/).filter(Boolean);
  return parts[parts.length - 1] || p || "";
}

// ---------------------------------------------------------------------------
// Transcript view

class View {
  constructor(root) {
    this.root = root;
    this.turns = new Map(); // turn.key -> {el, user, body, foot}
    this.blocks = new Map(); // block.key -> {el, v, parts}
    this.pending = false;
  }

  reset() {
    this.turns.clear();
    this.blocks.clear();
    this.root.replaceChildren();
  }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.flush();
    });
  }

  flush() {
    const r = this.root;
    const stick = r.scrollHeight - r.scrollTop - r.clientHeight < 120;
    for (const turn of state.transcript.takeDirty()) this.renderTurn(turn);
    $("empty").hidden = state.transcript.turns.length > 0 || !state.currentId;
    if (stick) r.scrollTop = r.scrollHeight;
    updateControls();
  }

  renderTurn(turn) {
    if (turn.marker) {
      if (!this.turns.has(turn.key)) {
        const note = markerNote(turn);
        this.turns.set(turn.key, { el: note });
        this.root.append(note);
      }
      return;
    }
    let v = this.turns.get(turn.key);
    if (!v) {
      const user = el("div", { class: "msg user", "data-testid": "user-message" });
      const rewind = el("button", {
        type: "button",
        class: "turn-action",
        "data-testid": "rewind-here",
        title: "Go back to before this message: its files, the conversation, or both (with a preview)",
        text: "↶ Rewind to here",
        onclick: () => openRewind(turn),
      });
      const userActions = el("div", { class: "turn-actions" }, rewind);
      const body = el("div", { class: "blocks" });
      const foot = el("div", { class: "turn-foot" });
      const fork = el("button", {
        type: "button",
        class: "turn-action",
        "data-testid": "fork-here",
        title: "A new session with the conversation up to here; this one stays as it is",
        text: "↳ Fork from here",
        onclick: () => forkFrom(turn),
      });
      const forkActions = el("div", { class: "turn-actions" }, fork);
      const assistant = el("div", { class: "msg assistant", "data-testid": "assistant-message" }, body, foot);
      const wrap = el("article", { class: "turn" }, user, userActions, assistant, forkActions);
      v = { el: wrap, user, body, foot, assistant, userActions, forkActions, fork };
      this.turns.set(turn.key, v);
      this.root.append(wrap);
    }
    v.user.hidden = turn.user === null;
    if (turn.user !== null && v.user.textContent !== turn.user) v.user.textContent = turn.user;
    v.assistant.hidden = !turn.started;
    v.el.classList.toggle("rewound", turn.rewound);
    v.el.dataset.seq = turn.userSeq ?? "";
    // The controls need the turn's place in the log, and a turn that ended.
    v.userActions.hidden = turn.userSeq === null || !turn.exit || turn.user === null;
    v.forkActions.hidden = turn.userSeq === null || !turn.exit;
    const controls = engineControls();
    v.fork.disabled = !controls.fork;
    v.fork.title = controls.fork ? "A new session with the conversation up to here; this one stays as it is" : `The ${currentEngine()} engine cannot fork a conversation`;
    this.renderBlocks(v.body, turn.blocks);
    this.renderFoot(v.foot, turn);
  }

  renderBlocks(container, blocks) {
    let prev = null;
    for (const b of blocks) {
      let bv = this.blocks.get(b.key);
      if (!bv) {
        bv = { el: this.createBlock(b), v: 0 };
        this.blocks.set(b.key, bv);
      }
      if (bv.v !== b.v) {
        this.updateBlock(b, bv.el);
        bv.v = b.v;
      }
      const want = prev ? prev.nextSibling : container.firstChild;
      if (want !== bv.el) container.insertBefore(bv.el, want);
      prev = bv.el;
    }
  }

  createBlock(b) {
    if (b.kind === "text") return el("div", { class: "md" });
    if (b.kind === "approval") return approvalCard(b);
    if (b.kind === "trust") return trustCard(b);
    if (b.kind === "plan") return planCard(b, { el, toast, decide: (d) => decidePlan(api, state.currentId, d) });
    if (b.kind === "steer") return el("div", { class: "steer-note", "data-testid": "steer-note", text: `Steered: ${b.text}` });
    if (b.kind === "thinking") {
      const d = el("details", { class: "thinking", "data-testid": "thinking-block", open: true });
      d.append(el("summary", { text: "Thinking" }), el("div", { class: "thinking-text" }));
      return d;
    }
    // Tool card.
    const card = el("div", { class: "tool-card", "data-testid": "tool-card" });
    const head = el(
      "div",
      { class: "tool-head" },
      el("span", { class: "tool-state" }),
      el("span", { class: "tool-name", "data-testid": "tool-name" }),
      el("span", { class: "tool-summary" }),
    );
    const input = el("details", { class: "tool-input" }, el("summary", { text: "Input" }), el("pre", {}));
    const result = el("div", { class: "tool-result", "data-testid": "tool-result" }, el("pre", {}), el("div", { class: "more" }));
    const children = el("div", { class: "subagent" });
    card.append(head, input, children, result);
    return card;
  }

  updateBlock(b, node) {
    if (b.kind === "approval") {
      updateApprovalCard(b, node);
      return;
    }
    if (b.kind === "trust") {
      updateTrustCard(b, node);
      return;
    }
    if (b.kind === "plan") {
      updatePlanCard(b, node);
      return;
    }
    if (b.kind === "steer") return;
    if (b.kind === "text") {
      node.innerHTML = renderMarkdown(b.text); // escaped by renderMarkdown
      return;
    }
    if (b.kind === "thinking") {
      node.querySelector(".thinking-text").textContent = b.text;
      return;
    }
    const [state_, name, summary] = node.querySelector(".tool-head").children;
    name.textContent = b.name;
    summary.textContent = toolSummary(b.name, b.input);
    const inputPre = node.querySelector(".tool-input pre");
    const inputText = b.input === null ? "" : JSON.stringify(b.input, null, 2);
    if (inputPre.textContent !== inputText) inputPre.textContent = inputText;
    node.querySelector(".tool-input").hidden = !inputText || inputText === "{}";
    const res = node.querySelector(".tool-result");
    node.classList.toggle("error", !!b.result?.isError);
    node.classList.toggle("pending", !b.result);
    state_.textContent = !b.result ? "" : b.result.isError ? "✗" : "✓";
    state_.title = !b.result ? "running" : b.result.isError ? "error" : "done";
    res.hidden = !b.result;
    if (b.result) {
      const { text, more } = truncateLines(b.result.content, MAX_RESULT_LINES);
      res.querySelector("pre").textContent = text || "(no output)";
      const m = res.querySelector(".more");
      m.textContent = more ? `… (${more} more lines)` : "";
      m.hidden = !more;
    }
    const sub = node.querySelector(".subagent");
    sub.hidden = b.blocks.length === 0;
    if (b.blocks.length) this.renderBlocks(sub, b.blocks);
  }

  renderFoot(foot, turn) {
    const parts = [];
    if (turn.error) {
      const interrupted = turn.error.kind === "interrupted";
      parts.push(
        el("div", {
          class: interrupted ? "note interrupted" : "note error",
          "data-testid": interrupted ? "turn-interrupted" : "turn-error",
          text: interrupted ? "Interrupted" : errorText(turn.error),
        }),
      );
    }
    const cost = turn.cost?.costUsd ?? turn.error?.costUsd;
    if (typeof cost === "number") {
      const bits = [formatCost(cost)];
      if (turn.cost?.durationMs) bits.push(formatDuration(turn.cost.durationMs));
      if (turn.cost?.numTurns) bits.push(`${turn.cost.numTurns} ${turn.cost.numTurns === 1 ? "step" : "steps"}`);
      const badge = el("span", { class: "badge", "data-testid": "cost-badge", text: bits.join(" · ") });
      if (turn.init?.model) badge.title = turn.init.model;
      parts.push(badge);
    }
    if (!turn.exit && turn.started) parts.push(el("span", { class: "typing", "aria-label": "working" }, el("i"), el("i"), el("i")));
    foot.replaceChildren(...parts);
  }
}

/** The note a session:forked or session:rewound event shows. */
function markerNote(turn) {
  const m = turn.marker;
  if (m.type === "session:forked") {
    const note = el("div", { class: "note marker", "data-testid": "forked-note", text: markerText(m) });
    if (m.from) note.append(el("button", { type: "button", class: "link", text: "Open the original", onclick: () => openSession(m.from) }));
    return note;
  }
  const undone = state.transcript.turns.find((t) => t.userSeq === m.toTurn && !t.marker);
  return el("div", { class: "note marker", "data-testid": "rewound-note", title: m.files.join("\n"), text: markerText(m, undone?.user || "") });
}

function errorText(err) {
  const label = labelOf(err.kind);
  const msg = String(err.error || "").trim();
  const hint = errorHint(err.kind);
  if (!msg) return hint ? `${label}. ${hint}` : label;
  const text = msg.toLowerCase().includes(label.toLowerCase()) ? msg : `${label}: ${msg}`;
  return hint ? `${text}. ${hint}` : text;
}

function labelOf(kind) {
  return (
    {
      api_error: "API error",
      max_turns: "Turn limit reached",
      max_budget: "Budget limit reached",
      not_logged_in: "Not logged in",
      resume_not_found: "Conversation not found",
      execution: "Error",
      process: "Process failed",
      start: "Could not start",
    }[kind] || "Error"
  );
}

const view = new View($("messages"));

// ---------------------------------------------------------------------------
// Streams

/** Reads events of the current session until done, resuming a dropped
 * stream with Last-Event-ID. `res` is an already open response (the POST
 * /turn stream) or null to open GET /events after what we have. When
 * `turn` is true the stream is a turn's and is done at its process:exit;
 * otherwise it is done when the gateway ends it with no turn running. */
async function follow(sessionId, res, turn) {
  stopReading();
  const ctl = new AbortController();
  state.reader = ctl;
  let attempt = 0;
  let retrying = false;
  updateControls();
  try {
    for (;;) {
      let error = null;
      let progressed = false;
      let clean = false;
      try {
        if (!res) res = await api.openEvents(sessionId, state.transcript.lastSeq, ctl.signal);
        setStatus(turn || state.transcript.running ? "streaming" : "loading", "live");
        for await (const ev of eventsOf(res)) {
          if (ctl.signal.aborted) return;
          insertLocalUsers(ev.seq);
          if (state.transcript.apply(ev)) progressed = true;
          notifier.observe(ev, sessionId, state.current?.title || "");
          queue.observe(ev, sessionId);
          view.schedule();
          // A retried model API request shows in the status bar until
          // the next event of the turn.
          if (ev.type === "session:retry" && (turn || state.transcript.running)) {
            setStatus(retrySummary(ev), "warn");
            retrying = true;
          } else if (retrying) {
            setStatus("streaming", "live");
            retrying = false;
          }
          if (ev.type === "approval:requested" || ev.type === "approval:resolved" || ev.type === "plan:ready" || ev.type === "plan:resolved" || ev.type === "process:exit") scheduleRefresh();
          if (turn && ev.type === "process:exit") break;
        }
        clean = true;
      } catch (e) {
        error = e;
      }
      res = null;
      if (ctl.signal.aborted) return;
      if (error instanceof ApiError) {
        toast(error.message);
        return;
      }
      const last = state.transcript.turns[state.transcript.turns.length - 1];
      const done = turn ? !!last?.exit : clean && !state.transcript.running;
      if (done) return;
      if (progressed) attempt = 0;
      attempt++;
      if (attempt > 8) {
        setStatus("connection lost", "bad");
        toast("Lost the connection to the gateway. Reload to try again.");
        return;
      }
      setStatus("reconnecting…", "warn");
      await sleep(Math.min(250 * 2 ** attempt, 5000), ctl.signal);
    }
  } catch (e) {
    if (!ctl.signal.aborted) toast(String(e?.message || e));
  } finally {
    if (state.reader === ctl) {
      state.reader = null;
      if (!ctl.signal.aborted) setStatus("");
      view.schedule();
      updateControls();
      if (turn) refreshSessions();
      // What is queued starts a turn of its own once this one ends: follow it.
      if (!ctl.signal.aborted && queue.shouldFollow(sessionId)) {
        setTimeout(() => state.currentId === sessionId && !state.reader && follow(sessionId, null, false), 250);
      }
    }
  }
}

function stopReading() {
  if (state.reader) {
    state.reader.abort();
    state.reader = null;
  }
}

// Messages the user sent from this browser, so history shows them even if
// the gateway's event log holds only the answers.
function loadLocalUsers(id) {
  const raw = safeStorage(() => localStorage.getItem(USER_KEY(id)));
  try {
    const list = JSON.parse(raw || "[]");
    return Array.isArray(list) ? list.filter((m) => typeof m?.after === "number" && typeof m?.text === "string") : [];
  } catch {
    return [];
  }
}

function rememberUser(id, after, text) {
  const list = loadLocalUsers(id);
  list.push({ after, text: text.slice(0, 20000) });
  safeStorage(() => localStorage.setItem(USER_KEY(id), JSON.stringify(list.slice(-200))));
}

function insertLocalUsers(seq) {
  if (typeof seq !== "number") return;
  while (state.localUsers.length && state.localUsers[0].after < seq) {
    state.transcript.addUser(state.localUsers.shift().text, { local: true });
  }
}

// ---------------------------------------------------------------------------
// Actions

async function openSession(id) {
  stopReading();
  state.currentId = id;
  state.current = state.sessions.find((s) => s.id === id) || null;
  state.transcript = new Transcript();
  notifier.opened();
  queue.show(id);
  state.localUsers = loadLocalUsers(id).sort((a, b) => a.after - b.after);
  view.reset();
  if (location.hash !== `#s=${id}`) history.replaceState(null, "", `#s=${encodeURIComponent(id)}`);
  renderSessions();
  renderTitle();
  closeDrawer();
  updateControls();
  view.schedule();
  try {
    const env = await api.getSessionEnvelope(id);
    if (state.currentId !== id) return;
    state.current = { ...env.session, permissionMode: env.permissionMode };
    renderTitle();
    showSpend(env); // usage.js: its spend against its budget
  } catch (e) {
    if (state.currentId !== id) return;
    if (e instanceof ApiError && e.status === 404) {
      toast("That session no longer exists.");
      state.currentId = null;
      state.current = null;
      history.replaceState(null, "", location.pathname);
      renderSessions();
      renderTitle();
      updateControls();
      return;
    }
    if (!(e instanceof ApiError && e.status === 401)) toast(String(e.message || e));
    return;
  }
  await follow(id, null, false);
  if (state.currentId === id) $("input").focus({ preventScroll: true });
}

async function send() {
  const input = $("input");
  const text = input.value;
  const id = state.currentId;
  if (!id || !text.trim() || state.sending) return;
  const blocked = nodeBlocked(state.sessions.find((s) => s.id === id)); // nodes.js
  if (blocked) return toast(blocked);
  notifier.ask();
  if (busy()) return queuePrompt(id, text);
  state.sending = true;
  updateControls();
  try {
    const after = state.transcript.lastSeq;
    const res = await api.startTurn(id, text);
    rememberUser(id, after, text);
    nameAfterFirstMessage(id, text);
    input.value = "";
    autoGrow();
    state.transcript.addUser(text, { local: true });
    view.schedule();
    state.sending = false;
    await follow(id, res, true);
  } catch (e) {
    if (e instanceof ApiError && e.status === 409) {
      toast("A turn is already running in this session; following it.", "info");
      follow(id, null, false);
    } else if (!(e instanceof ApiError && e.status === 401)) {
      toast(String(e.message || e));
    }
  } finally {
    state.sending = false;
    updateControls();
  }
}

/** Queues text behind the running turn (queue.js); the turn starts at
 * once instead when the session turned idle meanwhile. */
async function queuePrompt(id, text) {
  state.sending = true;
  updateControls();
  try {
    const r = await queue.add(id, text);
    $("input").value = "";
    autoGrow();
    state.sending = false;
    if (r.res) {
      state.transcript.addUser(text, { local: true });
      view.schedule();
      await follow(id, r.res, true);
    }
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 401)) toast(String(e.message || e));
  } finally {
    state.sending = false;
    updateControls();
  }
}

/** Steers the box's text into the running turn (steer.js); the server's
 * refusal (no turn runs, an engine that cannot) is shown as it says. */
async function steerTurn() {
  const input = $("input");
  const text = input.value;
  const id = state.currentId;
  if (!id || !text.trim() || state.sending) return;
  state.sending = true;
  updateControls();
  try {
    const r = await steer(api, id, text);
    if (r.ok) {
      input.value = "";
      autoGrow();
    } else if (r.status !== 401) toast(r.message);
  } finally {
    state.sending = false;
    updateControls();
  }
}

/** An untitled session is named by its first message at once (the server
 * names it so too), in the header and the list. */
function nameAfterFirstMessage(id, text) {
  for (const s of [state.current, state.sessions.find((x) => x.id === id)]) {
    if (s && s.id === id && !s.title) s.title = titleOf(text);
  }
  renderTitle();
  renderSessions();
}

async function interrupt() {
  const id = state.currentId;
  if (!id || !busy()) return;
  $("interrupt").disabled = true;
  try {
    const done = await api.interrupt(id);
    if (!done) toast("Nothing is running.", "info");
  } catch (e) {
    toast(String(e.message || e));
  } finally {
    setTimeout(updateControls, 300);
  }
}

function busy() {
  return state.sending || state.transcript.running || (!!state.reader && state.transcript.turns.at(-1)?.exit === null);
}

async function deleteSession(id) {
  try {
    await api.deleteSession(id);
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 404)) {
      toast(String(e.message || e));
      return;
    }
  }
  safeStorage(() => localStorage.removeItem(USER_KEY(id)));
  if (state.currentId === id) {
    stopReading();
    state.currentId = null;
    state.current = null;
    state.transcript = new Transcript();
    view.reset();
    history.replaceState(null, "", location.pathname);
    renderTitle();
    updateControls();
    view.schedule();
  }
  await refreshSessions();
}

// ---------------------------------------------------------------------------
// Sidebar

// Approval cards: a tool waits for a person. Buttons are real buttons (Tab
// reaches them, Enter/Space press them); the first answer from anywhere
// wins and the card shows how it was resolved.

function approvalCard(b) {
  const card = el("div", { class: "approval-card", "data-testid": "approval-card", role: "group", "aria-label": `Approve ${b.toolName}?` });
  const head = el(
    "div",
    { class: "approval-head" },
    el("span", { class: "approval-icon", "aria-hidden": "true", text: "?" }),
    el("span", { class: "approval-q" }),
  );
  const input = el("details", { class: "tool-input" }, el("summary", { text: "Full input" }), el("pre", {}));
  const actions = el("div", { class: "approval-actions" });
  const answer = (decision) => async () => {
    for (const btn of actions.querySelectorAll("button")) btn.disabled = true;
    try {
      const res = await api.answerApproval(state.currentId, b.requestId, decision);
      if (res.status === 409) toast("Already answered.", "info");
    } catch (e) {
      toast(`Could not answer: ${e.message}`);
      for (const btn of actions.querySelectorAll("button")) btn.disabled = false;
    }
  };
  actions.append(
    el("button", { type: "button", class: "btn primary", "data-testid": "approval-allow", text: "Allow", onclick: answer("allow") }),
    el("button", { type: "button", class: "btn danger", "data-testid": "approval-deny", text: "Deny", onclick: answer("deny") }),
    el("button", { type: "button", class: "btn", "data-testid": "approval-always", text: "Always allow", title: "Allow, and allow matching uses for the rest of this session", onclick: answer("always") }),
  );
  const outcome = el("div", { class: "approval-outcome", "data-testid": "approval-outcome" });
  card.append(head, input, actions, outcome);
  return card;
}

function updateApprovalCard(b, node) {
  node.querySelector(".approval-q").textContent = approvalQuestion(b);
  node.querySelector('[data-testid="approval-always"]').hidden = !offersAlways(b);
  node.querySelector(".tool-input pre").textContent = b.input === null ? "" : JSON.stringify(b.input, null, 2);
  const actions = node.querySelector(".approval-actions");
  const outcome = node.querySelector(".approval-outcome");
  actions.hidden = !!b.resolved;
  node.classList.toggle("resolved", !!b.resolved);
  node.classList.toggle("denied", b.resolved?.decision === "deny");
  if (b.resolved) {
    const who = { user: "by a person", rule: "by an always-allow rule", timeout: "no answer in time", interrupt: "the turn was stopped", shutdown: "the server stopped" }[b.resolved.by] || b.resolved.by;
    outcome.textContent = `${b.resolved.decision === "allow" ? "Allowed" : "Denied"} — ${who}`;
  } else {
    outcome.textContent = "";
    if (!node.dataset.focused) {
      node.dataset.focused = "1";
      queueMicrotask(() => actions.querySelector("button")?.focus({ preventScroll: true }));
    }
  }
}

// Trust cards: what a turn did not honour until a person trusts it (a
// persona file's widened grants, a project .mcp.json server, session-file
// rules no person gave). A persona file or a server can be trusted here,
// at the hash the card shows; the session file's rules cannot (a person
// grants rules by answering "always").

function trustCard(b) {
  const card = el("div", { class: "trust-card", "data-testid": "trust-card", role: "group", "aria-label": "Not trusted" });
  const head = el("div", { class: "approval-head" }, el("span", { class: "approval-icon", "aria-hidden": "true", text: "!" }), el("span", { class: "trust-q" }));
  const changes = el("ul", { class: "trust-changes" });
  const actions = el("div", { class: "approval-actions" });
  if (b.trustKind === "persona" || b.trustKind === "mcp") {
    actions.append(
      el("button", {
        type: "button",
        class: "btn primary",
        "data-testid": "trust-accept",
        text: "Trust",
        title: "Trust it as shown: from the next turn on it counts",
        onclick: async (e) => {
          e.target.disabled = true;
          try {
            const res = await api.acceptTrust(state.current?.projectRoot || "", b.trustKind, b.name, b.path, b.hash);
            if (res.status === 409) {
              toast("It changed since this turn: look at it again.", "info");
              return;
            }
            b.trusted = true;
            b.v++;
            updateTrustCard(b, card);
          } catch (err) {
            toast(`Could not trust: ${err.message}`);
            e.target.disabled = false;
          }
        },
      }),
    );
  }
  card.append(head, changes, actions);
  return card;
}

function updateTrustCard(b, node) {
  const what = { persona: `Persona file ${b.path || b.name}`, mcp: `MCP server ${b.name}`, session: "Session file" }[b.trustKind] || b.trustKind;
  node.querySelector(".trust-q").textContent = `${what}: not honoured — ${b.message}`;
  const list = node.querySelector(".trust-changes");
  list.replaceChildren(
    ...b.changes.map((c) => el("li", { text: `${c.field}: ${c.trusted} → ${c.now}` })),
    ...b.rules.map((r) => el("li", { text: `rule ${r}` })),
  );
  node.querySelector(".approval-actions").hidden = b.trusted;
  node.classList.toggle("resolved", b.trusted);
  if (b.trusted) node.querySelector(".trust-q").textContent = `${what}: trusted — it counts from the next turn.`;
}

// The sidebar (waiting badges) and the header (model, cost) follow what
// the stream reports, at most a few times a second.
let refreshTimer = null;
function scheduleRefresh() {
  if (refreshTimer) return;
  refreshTimer = setTimeout(async () => {
    refreshTimer = null;
    await refreshSessions();
    renderTitle();
  }, 250);
}

async function refreshSessions() {
  try {
    const list = await api.listSessions();
    state.sessions = Array.isArray(list) ? list : [];
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 401)) toast(`Could not list sessions: ${e.message}`);
    return;
  }
  if (state.currentId) {
    const s = state.sessions.find((x) => x.id === state.currentId);
    if (s && state.current) state.current = { ...state.current, ...s, permissionMode: state.current.permissionMode };
  }
  renderSessions();
  renderRoots();
}

// The session whose delete button was clicked once ("Delete?"), kept
// across re-renders of the list: the sidebar is rebuilt whenever the
// sessions change (a turn ends, a title is set), and a confirmation must
// not be lost to that between the two clicks.
let armedDelete = { id: null, timer: null };

function disarmDelete() {
  if (armedDelete.timer) clearTimeout(armedDelete.timer);
  armedDelete = { id: null, timer: null };
}

function renderSessions() {
  const ul = $("session-list");
  const items = state.sessions.map((s) => {
    const open = el(
      "button",
      { class: "session-open", type: "button", title: s.projectRoot, onclick: () => openSession(s.id) },
      el(
        "span",
        { class: "session-title", text: s.title || s.persona || "New session" },
        s.pendingApprovals > 0 ? el("span", { class: "waiting", "data-testid": "waiting-badge", title: "waiting for an approval", text: String(s.pendingApprovals) }) : "",
        nodeBadge(el, s), // nodes.js: its cluster node, marked when down
      ),
      el("span", {
        class: "session-meta",
        text: [s.engine && s.engine !== "claude-code" ? s.engine : null, s.persona || s.mode, baseName(s.projectRoot), relTime(s.updatedAt || s.createdAt)]
          .filter(Boolean)
          .join(" · "),
      }),
    );
    const del = el("button", {
      class: armedDelete.id === s.id ? "session-delete armed" : "session-delete",
      type: "button",
      "data-testid": "delete-session",
      "aria-label": "Delete session",
      title: "Delete session",
      text: armedDelete.id === s.id ? "Delete?" : "✕",
    });
    del.addEventListener("click", (e) => {
      e.stopPropagation();
      if (armedDelete.id === s.id) {
        disarmDelete();
        deleteSession(s.id);
        return;
      }
      disarmDelete();
      armedDelete = { id: s.id, timer: setTimeout(() => { disarmDelete(); renderSessions(); }, 4000) };
      del.classList.add("armed");
      del.textContent = "Delete?";
    });
    return el(
      "li",
      {
        class: s.id === state.currentId ? "session-item active" : "session-item",
        "data-testid": "session-item",
        "data-session-id": s.id,
      },
      open,
      del,
    );
  });
  ul.replaceChildren(...items);
  $("no-sessions").hidden = state.sessions.length > 0;
}

function renderRoots() {
  const roots = [...new Set([...state.roots, ...state.sessions.map((s) => s.projectRoot)].filter(Boolean))];
  $("roots").replaceChildren(...roots.map((r) => el("option", { value: r })));
}

async function loadRoots() {
  try {
    const r = await api.roots();
    state.roots = Array.isArray(r?.roots) ? r.roots : [];
    state.demo = !!r?.demo;
  } catch {
    state.roots = [];
  }
  $("demo-badge").hidden = !state.demo;
  renderRoots();
}

async function loadEngines() {
  let list = [];
  try {
    list = await api.engines();
  } catch {
    /* an older gateway: Claude Code only */
  }
  const sel = $("nf-engine");
  const engines = Array.isArray(list) && list.length ? list : [{ name: "claude-code", available: true }];
  state.engines = engines;
  view.schedule();
  sel.replaceChildren(
    ...engines.map((e) =>
      el("option", {
        value: e.name,
        disabled: !e.available,
        // Available means installed: say what else it needs to answer.
        title: e.available ? [e.version, !state.demo && e.name === "claude-code" ? "needs a login: ANTHROPIC_API_KEY set for harness serve, or claude /login" : ""].filter(Boolean).join(" · ") : e.reason || "not available here",
        text: e.available ? e.name : `${e.name} (not available: ${e.reason || "missing"})`,
      }),
    ),
  );
  state.enginesLoaded = true;
}

function renderTitle() {
  const s = state.current;
  $("title").textContent = s ? s.title || s.persona || "New session" : "harness";
  // The model the next turn runs with when the session chose one (a
  // switch shows at once), else the one the last turn reported.
  const model = s?.model || state.transcript.turns.map((t) => t.init?.model).filter(Boolean).pop() || "";
  const cost = typeof s?.costUsd === "number" && s.costUsd > 0 ? formatCost(s.costUsd) : "";
  $("subtitle").textContent = s
    ? [s.engine || "claude-code", model, s.persona ? `${s.persona} · ${s.mode}` : s.mode, s.permissionMode, baseName(s.projectRoot), cost].filter(Boolean).join(" · ")
    : "";
  $("subtitle").title = s ? s.projectRoot : "";
  // The MCP servers as the last turn's session:init said (live), else as
  // the session kept them.
  const mcp = mcpSummary(state.transcript.turns.map((t) => t.init?.mcpServers).filter(Boolean).pop() || s?.mcpServers);
  const badge = $("mcp-badge");
  badge.hidden = !mcp;
  badge.textContent = mcp ? mcp.text : "";
  badge.title = mcp ? mcp.title : "";
  badge.classList.toggle("failed", !!mcp?.failed);
  $("rename").hidden = !s;
  renderPickers();
}

// ---------------------------------------------------------------------------
// Conversation controls: switch, fork, rewind

/** The engine of the current session and what it supports. */
function currentEngine() {
  return state.current?.engine || "claude-code";
}
function engineControls() {
  const e = state.engines.find((x) => x.name === currentEngine());
  // Unknown (engines not loaded yet, an older gateway): offer, the server says no.
  return e?.controls ?? { fork: true, rewind: true };
}

/** Sets the header pickers to the current session's values. A picker
 * being edited keeps what the person typed. */
function renderPickers() {
  const s = state.current;
  $("session-controls").hidden = !s;
  if (!s) return;
  const persona = $("pick-persona");
  const ids = new Set([...persona.options].map((o) => o.value));
  if (s.persona && !ids.has(s.persona)) persona.append(el("option", { value: s.persona, text: s.persona }));
  persona.value = s.persona || "";
  const model = $("pick-model");
  if (document.activeElement !== model) model.value = s.model || "";
  const seen = [...new Set([s.model, ...state.transcript.turns.map((t) => t.init?.model)].filter(Boolean))];
  $("models").replaceChildren(...seen.map((m) => el("option", { value: m })));
  const mode = $("pick-mode");
  const pm = s.permissionMode || "";
  if (pm && ![...mode.options].some((o) => o.value === pm)) mode.append(el("option", { value: pm, text: pm }));
  mode.value = pm;
  $("pick-effort").value = s.effort || "";
}

function renderPersonaPicker() {
  const sel = $("pick-persona");
  sel.replaceChildren(
    el("option", { value: "", text: "(none)" }),
    ...(state.personas || []).map((p) => el("option", { value: p.id, title: p.description || "", text: p.id })),
  );
  renderPickers();
}

/** PATCHes one field of the current session; the next turn runs with it. */
async function switchField(field, value) {
  const s = state.current;
  if (!s) return;
  try {
    const env = await api.updateSession(s.id, { [field]: value });
    if (state.currentId !== s.id) return;
    state.current = { ...state.current, ...env.session, permissionMode: env.permissionMode };
    renderTitle();
    const label = { persona: "Persona", model: "Model", permissionMode: "Permission mode", effort: "Effort" }[field];
    toast(`${label} ${value ? `set to ${value}` : "reset"}${busy() ? " from the next turn" : ""}.`, "info");
    refreshSessions();
  } catch (e) {
    toast(`Could not change the ${field}: ${e.message}`);
    renderPickers(); // back to what the server has
  }
}

async function forkFrom(turn) {
  const id = state.currentId;
  if (!id || busy()) return;
  try {
    const s = await api.forkSession(id, turn.lastSeq ?? turn.userSeq ?? 0);
    await refreshSessions();
    if (!state.sessions.some((x) => x.id === s.id)) state.sessions.unshift(s);
    toast("Forked: this is the copy. The original is unchanged.", "info");
    await openSession(s.id);
  } catch (e) {
    toast(`Could not fork: ${e.message}`);
  }
}

async function openRewind(turn) {
  const id = state.currentId;
  if (!id || busy() || turn.userSeq === null) return;
  const dlg = $("rewind-dialog");
  state.rewind = { id, turn, preview: null };
  $("rw-turn").textContent = `“${turn.user ?? ""}” and everything after it`;
  $("rw-list").replaceChildren();
  $("rw-error").textContent = "";
  $("rw-files-note").textContent = "Loading the changes…";
  $("rw-conv-note").textContent = "";
  $("rw-files").checked = false;
  $("rw-files").disabled = true;
  $("rw-conv").checked = false;
  $("rw-conv").disabled = true;
  $("rw-ok").disabled = true;
  dlg.hidden = false;
  $("rw-cancel").focus();
  let p;
  try {
    p = await api.previewRewind(id, turn.userSeq);
  } catch (e) {
    if (state.rewind?.turn !== turn) return;
    $("rw-files-note").textContent = "";
    $("rw-error").textContent = `Cannot rewind here: ${e.message}`;
    return;
  }
  if (state.rewind?.turn !== turn) return;
  state.rewind.preview = p;
  const files = Array.isArray(p.files) ? p.files : [];
  const canFiles = !p.filesError;
  $("rw-files").disabled = !canFiles;
  $("rw-files").checked = canFiles && files.length > 0;
  $("rw-files-note").textContent = !canFiles
    ? `Files cannot be restored: ${p.filesError || "no snapshot was taken before this turn"}.`
    : files.length === 0
      ? "No file changed since this turn started."
      : `${files.length} ${files.length === 1 ? "file differs" : "files differ"} from before this turn:`;
  $("rw-list").replaceChildren(...files.map(rewindFileItem));
  // Cutting before the first turn starts the conversation afresh, which
  // every engine can; a later cut needs an engine that can rewind.
  const first = !state.transcript.turns.some((t) => !t.marker && t.userSeq !== null && t.userSeq < turn.userSeq);
  const canConv = first || engineControls().rewind;
  $("rw-conv").disabled = !canConv;
  $("rw-conv").checked = canConv;
  $("rw-conv-note").textContent = canConv ? "" : `The ${currentEngine()} engine cannot cut its conversation here.`;
  updateRewindButton();
}

function rewindFileItem(f) {
  const lines = diffLines(f.patch || "");
  const pre = el("pre", { class: "diff", "data-testid": "rewind-diff" }, ...lines.flatMap((l, i) => [el("span", { class: l.kind, text: l.text }), i < lines.length - 1 ? "\n" : null]));
  if (f.truncated) pre.append(el("span", { class: "meta", text: "\n… (cut: too long to show)" }));
  const summary = el("summary", {}, el("span", { class: `rw-op ${f.op}`, text: f.op }), " ", el("span", { text: f.path }));
  const d = el("details", {}, summary);
  if (lines.length || f.truncated) d.append(pre);
  else d.append(el("p", { class: "hint", text: f.op === "modified" ? "(binary or not shown)" : "" }));
  return el("li", { "data-testid": "rewind-file", "data-path": f.path }, d);
}

function updateRewindButton() {
  $("rw-ok").disabled = !state.rewind?.preview || (!$("rw-files").checked && !$("rw-conv").checked);
}

function closeRewind() {
  state.rewind = null;
  $("rewind-dialog").hidden = true;
}

async function confirmRewind(e) {
  e.preventDefault();
  const r = state.rewind;
  if (!r?.preview) return;
  const files = $("rw-files").checked;
  const conversation = $("rw-conv").checked;
  if (!files && !conversation) return;
  $("rw-ok").disabled = true;
  $("rw-error").textContent = "";
  try {
    await api.rewind(r.id, { toTurn: r.turn.userSeq, files, conversation });
  } catch (err) {
    $("rw-error").textContent = err.message;
    updateRewindButton();
    return;
  }
  closeRewind();
  if (state.currentId === r.id) {
    // The session:rewound event is in the log now: read it.
    await follow(r.id, null, false);
    refreshSessions();
  }
}

async function renameCurrent() {
  const s = state.current;
  if (!s) return;
  const title = prompt("Session title", s.title || "");
  if (title === null) return;
  try {
    state.current = { ...s, ...(await api.setTitle(s.id, title)) };
    renderTitle();
    await refreshSessions();
  } catch (e) {
    toast(`Could not rename: ${e.message}`);
  }
}

function updateControls() {
  const has = !!state.currentId;
  const running = busy();
  $("input").disabled = !has;
  $("send").disabled = !has || state.sending;
  $("send").textContent = running ? "Queue" : "Send"; // queue.js: a message sent while a turn runs waits its turn
  $("steer").hidden = !running || !canSteer(state.engines, currentEngine()); // steer.js
  $("steer").disabled = !has || state.sending;
  const blocked = nodeBlocked(state.sessions.find((s) => s.id === state.currentId)); // nodes.js: its node is down
  if (blocked) $("send").disabled = $("steer").disabled = true;
  $("send").title = blocked;
  $("interrupt").hidden = !running;
  $("interrupt").disabled = false;
  $("empty").hidden = state.transcript.turns.length > 0 || !has;
  $("welcome").hidden = has;
  $("messages").classList.toggle("busy", running || state.sending);
  $("session-controls").hidden = !state.current;
}

// New-session form

async function openNewForm() {
  const form = $("new-form");
  form.hidden = false;
  $("nf-error").textContent = "";
  const root = $("nf-root");
  if (!state.rootsLoaded) {
    state.rootsLoaded = true;
    await loadRoots();
  }
  // The server's demo project first, else the last one used here.
  const remembered = safeStorage(() => localStorage.getItem(ROOT_KEY));
  if (!root.value) root.value = (state.demo && state.roots[0]) || (remembered && state.roots.some((r) => remembered.startsWith(r)) ? remembered : "") || state.roots[0] || state.sessions[0]?.projectRoot || "";
  if (state.personas === null) await loadPersonas();
  if (!state.enginesLoaded) await loadEngines();
  (root.value ? $("nf-mode") : root).focus();
}

async function loadPersonas() {
  try {
    const list = await api.personas();
    state.personas = Array.isArray(list) ? list.filter((p) => p && typeof p.id === "string") : [];
    state.personaFree = false;
  } catch (e) {
    state.personas = [];
    state.personaFree = true; // no /personas route: free text
  }
  const sel = $("nf-persona-select");
  sel.replaceChildren(
    el("option", { value: "", text: "(none)" }),
    ...state.personas.map((p) => el("option", { value: p.id, title: p.description || "", text: p.description ? `${p.id} — ${p.description}` : p.id })),
  );
  sel.hidden = state.personaFree;
  $("nf-persona-text").hidden = !state.personaFree;
  renderPersonaPicker();
}

async function createFromForm(e) {
  e.preventDefault();
  const root = $("nf-root").value.trim();
  const persona = (state.personaFree ? $("nf-persona-text").value : $("nf-persona-select").value).trim() || null;
  const mode = $("nf-mode").value;
  const engine = $("nf-engine").value || undefined;
  if (!root) {
    $("nf-error").textContent = "Project root is required.";
    return;
  }
  const btn = $("nf-create");
  btn.disabled = true;
  try {
    const isolated = $("nf-worktree").checked;
    const s = await api.createSession(root, persona, mode, engine, isolated ? { isolation: "worktree", base: $("nf-base").value.trim() } : {});
    safeStorage(() => localStorage.setItem(ROOT_KEY, root));
    $("new-form").hidden = true;
    await refreshSessions();
    if (!state.sessions.some((x) => x.id === s.id)) state.sessions.unshift(s);
    await openSession(s.id);
  } catch (err) {
    const msg =
      err instanceof ApiError && err.status === 403
        ? `Not allowed: ${err.message}`
        : err instanceof ApiError && err.status === 404
          ? `Unknown persona: ${err.message}`
          : String(err.message || err);
    $("nf-error").textContent = msg;
  } finally {
    btn.disabled = false;
  }
}

// Token

function showTokenPanel(message) {
  $("token-panel").hidden = false;
  $("token-msg").textContent = message || "";
  $("token-input").value = token;
  $("token-input").focus();
}

function saveToken(e) {
  e.preventDefault();
  token = $("token-input").value.trim();
  if ($("token-remember").checked && token) safeStorage(() => sessionStorage.setItem(TOKEN_KEY, token));
  else safeStorage(() => sessionStorage.removeItem(TOKEN_KEY));
  $("token-panel").hidden = true;
  boot();
}

// Drawer (phones)

function openDrawer() {
  $("app").classList.add("drawer-open");
}
function closeDrawer() {
  $("app").classList.remove("drawer-open");
}

function autoGrow() {
  const t = $("input");
  t.style.height = "auto";
  t.style.height = Math.min(t.scrollHeight, Math.round(window.innerHeight * 0.4)) + "px";
}

// ---------------------------------------------------------------------------
// Wiring

let unauthorizedShown = false;
api.onUnauthorized = (msg) => {
  if (unauthorizedShown && !$("token-panel").hidden) return;
  unauthorizedShown = true;
  showTokenPanel(token ? `The token was refused (${msg}).` : "This gateway needs an access token.");
};

$("new-session").addEventListener("click", () => ($("new-form").hidden ? openNewForm() : ($("new-form").hidden = true)));
$("nf-cancel").addEventListener("click", () => ($("new-form").hidden = true));
$("new-form").addEventListener("submit", createFromForm);
$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  send();
});
$("interrupt").addEventListener("click", interrupt);
$("steer").addEventListener("click", steerTurn); // steer.js
$("input").addEventListener("input", autoGrow);
$("input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
    e.preventDefault();
    send();
  }
});
document.addEventListener("keydown", (e) => {
  if (e.key !== "Escape") return;
  if (!$("rewind-dialog").hidden) closeRewind();
  else if (busy()) {
    e.preventDefault();
    interrupt();
  } else if ($("app").classList.contains("drawer-open")) closeDrawer();
  else if (!$("new-form").hidden) $("new-form").hidden = true;
  else if (!$("token-panel").hidden) $("token-panel").hidden = true;
});
$("menu").addEventListener("click", openDrawer);
$("scrim").addEventListener("click", closeDrawer);
$("token-btn").addEventListener("click", () => ($("token-panel").hidden ? showTokenPanel("") : ($("token-panel").hidden = true)));
$("token-form").addEventListener("submit", saveToken);
$("token-clear").addEventListener("click", () => {
  $("token-input").value = "";
  token = "";
  safeStorage(() => sessionStorage.removeItem(TOKEN_KEY));
});
$("rename").addEventListener("click", renameCurrent);
$("pick-persona").addEventListener("change", (e) => switchField("persona", e.target.value));
$("pick-model").addEventListener("change", (e) => switchField("model", e.target.value.trim()));
$("pick-mode").addEventListener("change", (e) => switchField("permissionMode", e.target.value));
$("pick-effort").addEventListener("change", (e) => switchField("effort", e.target.value));
$("rw-form").addEventListener("submit", confirmRewind);
$("rw-cancel").addEventListener("click", closeRewind);
$("rw-files").addEventListener("change", updateRewindButton);
$("rw-conv").addEventListener("change", updateRewindButton);
window.addEventListener("hashchange", () => {
  const id = idFromHash();
  if (id && id !== state.currentId) openSession(id);
});

function idFromHash() {
  const m = /^#s=(.+)$/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : null;
}

// Server health: checked at start and every 15 s; when the server cannot be
// reached the dot turns red and one toast says so, and it is retried every
// 3 s until it answers again.
let unreachable = false;
let healthTimer = null;

async function checkHealth() {
  clearTimeout(healthTimer);
  try {
    const h = await api.health();
    $("health").textContent = h?.claudeVersion ? `Claude Code ${h.claudeVersion}` : h?.ok ? "gateway ok" : "";
    $("health").className = h?.ok ? "health ok" : "health";
    if (unreachable) {
      unreachable = false;
      toast("Server reachable again.", "info");
      await refreshSessions();
      if (state.currentId && !state.reader) follow(state.currentId, null, false);
    }
    healthTimer = setTimeout(checkHealth, 15_000);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      $("health").textContent = "token needed";
      $("health").className = "health bad";
      return;
    }
    markUnreachable();
  }
}

function markUnreachable() {
  $("health").textContent = "server unreachable, retrying";
  $("health").className = "health bad";
  $("health").dataset.testid = "health";
  if (!unreachable) {
    unreachable = true;
    toast("Server unreachable, retrying…");
  }
  clearTimeout(healthTimer);
  healthTimer = setTimeout(checkHealth, 3_000);
}
api.onUnreachable = markUnreachable;

async function boot() {
  unauthorizedShown = false;
  checkHealth();
  loadRoots();
  if (!state.enginesLoaded) loadEngines();
  if (state.personas === null) loadPersonas();
  await refreshSessions();
  const id = idFromHash();
  if (id) await openSession(id);
  else updateControls();
}

// The board (board.js): every session of a project side by side.
const board = new Board({
  api,
  toast,
  el,
  roots: () => [...new Set([...state.roots, ...state.sessions.map((s) => s.projectRoot)])].filter(Boolean),
  open: (id) => (location.hash === `#s=${encodeURIComponent(id)}` ? openSession(id) : (location.hash = `#s=${encodeURIComponent(id)}`)),
});
$("board-button").addEventListener("click", () => (board.shown ? board.hide() : board.show(state.current?.projectRoot)));
$("nf-worktree").addEventListener("change", () => ($("nf-base-label").hidden = !$("nf-worktree").checked));

// The cluster's nodes (nodes.js): shown only on a server started with --node.
const nodesView = new NodesView({ api, el, root: $("nodes"), changed: () => refreshSessions().then(updateControls) });
nodesView.load();

updateControls();
boot();
