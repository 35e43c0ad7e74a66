// The board: a project's sessions side by side, each with its state
// (running, waiting for a person, done, failed), its branch and the size
// of its diff, updated live; per worktree session a diff view (files with
// +/-, the patch) and a merge form that shows conflicts.
//
// Live: the session list is read every few seconds (it says which
// sessions run and wait); a session seen running, or changed since, has
// its events read over SSE from where the board last stopped, so its
// state follows each event, and its diff is read again when a turn ends.
//
// Text from the server reaches the page only through textContent.

import { ApiError, eventsOf, sleep } from "./api.js";
import { nodeBadge } from "./nodes.js";

const POLL_MS = 2500;

/** The state a card shows, from what is known of a session. */
export function boardState(c) {
  if (c.pending.size > 0 || c.summary.pendingApprovals > 0) return "waiting";
  if (c.summary.running || c.turnOpen) return "running";
  return c.last || "idle";
}

const STATE_TEXT = { running: "running", waiting: "waiting for a person", done: "done", failed: "failed", stopped: "stopped", idle: "no turn yet" };

/** Follows one event into card c's state. Returns true when a turn ended. */
export function applyEvent(c, ev) {
  if (typeof ev.seq === "number" && ev.seq > c.seq) c.seq = ev.seq;
  switch (ev.type) {
    case "user:message":
    case "session:init":
      c.turnOpen = true;
      return false;
    case "approval:requested":
      if (ev.requestId) c.pending.add(ev.requestId);
      return false;
    case "approval:resolved":
      c.pending.delete(ev.requestId);
      return false;
    case "session:complete":
      c.turnOpen = false;
      c.pending.clear();
      c.last = "done";
      return true;
    case "session:error":
      c.turnOpen = false;
      c.pending.clear();
      c.last = ev.kind === "interrupted" ? "stopped" : "failed";
      return true;
    case "process:exit":
      c.turnOpen = false;
      c.pending.clear();
      return true;
  }
  return false;
}

/** Adds the +/- of a diff's files. */
export function diffSize(d) {
  let add = 0;
  let del = 0;
  for (const f of d?.files || []) {
    add += f.additions || 0;
    del += f.deletions || 0;
  }
  return { files: (d?.files || []).length, add, del };
}

export class Board {
  /**
   * @param {object} o
   * @param {import("./api.js").Api} o.api
   * @param {(text: string, kind?: string) => void} o.toast
   * @param {() => string[]} o.roots  project roots the console knows
   * @param {(id: string) => void} o.open  opens a session in the console
   * @param {(tag: string, attrs?: object, ...children: any[]) => HTMLElement} o.el
   *   the console's element maker (text only through textContent)
   */
  constructor({ api, toast, roots, open, el }) {
    this.el = el;
    this.api = api;
    this.toast = toast;
    this.roots = roots;
    this.open = open;
    this.root = "";
    this.cards = new Map(); // id -> card state
    this.ctl = null; // AbortController while the board is shown
    this.diffId = null; // the session whose diff is shown
    this.node = document.getElementById("board");
    this.grid = document.getElementById("board-grid");
    this.pick = document.getElementById("board-root");
    this.pane = document.getElementById("board-diff");
    this.pick.addEventListener("change", () => this.setRoot(this.pick.value));
    document.getElementById("board-close").addEventListener("click", () => this.hide());
    document.getElementById("board-refresh").addEventListener("click", () => this.poll());
  }

  get shown() {
    return !this.node.hidden;
  }

  show(root) {
    const roots = this.roots();
    this.pick.replaceChildren(...roots.map((r) => this.el("option", { value: r, text: r })));
    const want = root || this.root || roots[0] || "";
    if (want && !roots.includes(want)) this.pick.prepend(this.el("option", { value: want, text: want }));
    this.pick.value = want;
    this.node.hidden = false;
    document.getElementById("app").classList.add("board-open");
    this.ctl = new AbortController();
    this.setRoot(want);
    this.loop(this.ctl.signal);
  }

  hide() {
    this.ctl?.abort();
    this.ctl = null;
    for (const c of this.cards.values()) c.reader?.abort();
    this.cards.clear();
    this.grid.replaceChildren();
    this.closeDiff();
    this.node.hidden = true;
    document.getElementById("app").classList.remove("board-open");
  }

  setRoot(root) {
    this.root = root;
    for (const c of this.cards.values()) c.reader?.abort();
    this.cards.clear();
    this.grid.replaceChildren();
    this.closeDiff();
    this.poll();
  }

  async loop(signal) {
    while (!signal.aborted) {
      try {
        await sleep(POLL_MS, signal);
      } catch {
        return;
      }
      await this.poll();
    }
  }

  /** Reads the session list and brings the cards up to date. */
  async poll() {
    if (!this.root || !this.ctl) {
      this.renderEmpty();
      return;
    }
    const root = this.root;
    let list;
    try {
      list = await this.api.json("GET", `session/list?projectRoot=${encodeURIComponent(root)}`);
    } catch (e) {
      // Once per distinct error, not at every poll.
      const msg = String(e.message || e);
      if (root === this.root && msg !== this.lastError && !(e instanceof ApiError && (e.status === 0 || e.status === 401))) this.toast(msg);
      this.lastError = msg;
      return;
    }
    this.lastError = "";
    if (root !== this.root || !this.ctl) return;
    const seen = new Set();
    for (const s of list) {
      seen.add(s.id);
      let c = this.cards.get(s.id);
      const fresh = !c;
      if (!c) {
        c = { id: s.id, summary: s, seq: 0, turnOpen: false, pending: new Set(), last: "", reader: null, size: null, node: null, updatedAt: "" };
        this.cards.set(s.id, c);
      }
      const changed = c.updatedAt !== s.updatedAt;
      c.summary = s;
      c.updatedAt = s.updatedAt;
      if (fresh || changed || s.running || s.pendingApprovals > 0) this.follow(c);
      if (fresh && s.isolation === "worktree") this.loadSize(c);
      this.render(c);
    }
    for (const [id, c] of this.cards) {
      if (seen.has(id)) continue;
      c.reader?.abort();
      c.node?.remove();
      this.cards.delete(id);
      if (this.diffId === id) this.closeDiff();
    }
    this.renderEmpty();
  }

  renderEmpty() {
    document.getElementById("board-empty").hidden = this.cards.size > 0;
  }

  /** Reads card c's events from where it stopped, unless a reader runs. */
  async follow(c) {
    if (c.reader || !this.ctl) return;
    const ctl = new AbortController();
    c.reader = ctl;
    const stop = () => ctl.abort();
    this.ctl.signal.addEventListener("abort", stop, { once: true });
    try {
      const res = await this.api.openEvents(c.id, c.seq, ctl.signal);
      for await (const ev of eventsOf(res)) {
        const ended = applyEvent(c, ev);
        this.render(c);
        if (ended && c.summary.isolation === "worktree") this.loadSize(c);
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
      if (e instanceof ApiError && e.status === 404) return; // deleted: the next poll drops it
    } finally {
      this.ctl?.signal.removeEventListener("abort", stop);
      if (c.reader === ctl) c.reader = null;
    }
    // The stream ends with a turn's process:exit, or at once when none
    // runs; the list says when to read again.
    if (this.cards.get(c.id) === c) {
      c.turnOpen = false;
      this.render(c);
      if (c.summary.isolation === "worktree") this.loadSize(c);
      if (this.diffId === c.id) this.showDiff(c.id, { keepResult: true });
    }
  }

  async loadSize(c) {
    try {
      const d = await this.api.json("GET", `session/${encodeURIComponent(c.id)}/diff`);
      c.size = diffSize(d);
    } catch (e) {
      c.size = { error: String(e.message || e) };
    }
    if (this.cards.get(c.id) === c) this.render(c);
  }

  render(c) {
    const s = c.summary;
    const st = boardState(c);
    if (!c.node) {
      c.node = this.el("article", { class: "board-card", "data-testid": "board-card", "data-session": c.id });
      this.grid.append(c.node);
    }
    c.node.dataset.state = st;
    const title = this.el("h3", { class: "board-title", "data-testid": "board-title", title: s.title || "", text: s.title || "(untitled)" });
    const badge = this.el("span", { class: `board-state ${st}`, "data-testid": "board-state", text: STATE_TEXT[st] || st });
    const meta = this.el("div", { class: "board-meta" });
    if (s.isolation === "worktree") {
      meta.append(this.el("span", { class: "board-branch", "data-testid": "board-branch", title: s.base ? `from ${s.base}` : "", text: s.branch || "" }));
      let size = "…";
      if (c.size?.error) size = "diff unavailable";
      else if (c.size) size = c.size.files === 0 ? "no changes" : `${c.size.files} file${c.size.files === 1 ? "" : "s"} +${c.size.add} −${c.size.del}`;
      meta.append(this.el("span", { class: "board-size", "data-testid": "board-diffsize", text: size }));
    } else {
      meta.append(this.el("span", { class: "board-branch none", text: "project tree (no worktree)" }));
    }
    meta.append(this.el("span", { class: "board-engine", text: s.engine || "" }));
    const node = nodeBadge(this.el, s); // nodes.js: its cluster node, marked when down
    if (node) meta.append(node);
    const actions = this.el("div", { class: "row" });
    if (s.isolation === "worktree") {
      actions.append(this.el("button", { type: "button", class: "btn", "data-testid": "board-diff-button", text: "Diff and merge", onclick: () => this.showDiff(c.id) }));
    }
    actions.append(this.el("button", { type: "button", class: "btn ghost", "data-testid": "board-open", text: "Open", onclick: () => this.openSession(c.id) }));
    c.node.classList.toggle("selected", this.diffId === c.id);
    c.node.replaceChildren(this.el("div", { class: "board-card-head" }, title, badge), meta, actions);
  }

  openSession(id) {
    this.hide();
    this.open(id);
  }

  closeDiff() {
    this.diffId = null;
    delete this.pane.dataset.session;
    this.pane.hidden = true;
    this.pane.replaceChildren();
    for (const c of this.cards.values()) c.node?.classList.remove("selected");
  }

  /** Shows session id's diff and merge form. */
  async showDiff(id, { keepResult = false } = {}) {
    const c = this.cards.get(id);
    if (!c) return;
    const result = keepResult && this.diffId === id ? this.pane.querySelector("[data-testid=board-merge-result]") : null;
    if (this.diffId !== id) {
      this.pane.hidden = false;
      this.pane.replaceChildren(this.el("p", { class: "hint", text: "Loading the diff…" }));
    }
    this.diffId = id;
    this.pane.dataset.session = id;
    for (const x of this.cards.values()) x.node?.classList.toggle("selected", x.id === id);
    let d;
    try {
      d = await this.api.json("GET", `session/${encodeURIComponent(id)}/diff`);
    } catch (e) {
      if (this.diffId !== id) return;
      this.pane.hidden = false;
      this.pane.replaceChildren(this.el("p", { class: "form-error", role: "alert", text: String(e.message || e) }));
      return;
    }
    if (this.diffId !== id) return;
    c.size = diffSize(d);
    this.render(c);
    const head = this.el(
      "div",
      { class: "board-diff-head" },
      this.el("h3", { text: `${c.summary.title || id}` }),
      this.el("span", { class: "board-branch", text: `${d.branch} ← ${d.base}` }),
      this.el("button", { type: "button", class: "btn ghost", "data-testid": "board-diff-close", text: "Close", onclick: () => this.closeDiff() }),
    );
    const files = this.el("ul", { class: "board-files", "data-testid": "board-files" });
    for (const f of d.files) {
      files.append(
        this.el(
          "li",
          { class: `board-file ${f.status}`, "data-testid": "board-file", "data-path": f.path },
          this.el("span", { class: "board-file-status", text: f.status }),
          this.el("span", { class: "board-file-path", text: f.path }),
          f.binary ? this.el("span", { class: "board-file-bin", text: "binary" }) : this.el("span", { class: "board-file-num" }, this.el("span", { class: "add", text: `+${f.additions}` }), " ", this.el("span", { class: "del", text: `−${f.deletions}` })),
        ),
      );
    }
    if (d.files.length === 0) files.append(this.el("li", { class: "hint", text: "No changes since the base." }));
    const patch = this.el("pre", { class: "board-patch", "data-testid": "board-patch" });
    for (const line of d.patch.split("\n")) {
      let cls = "";
      if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ") || line.startsWith("index ")) cls = "meta";
      else if (line.startsWith("@@")) cls = "hunk";
      else if (line.startsWith("+")) cls = "add";
      else if (line.startsWith("-")) cls = "del";
      patch.append(this.el("span", { class: cls, text: line + "\n" }));
    }
    if (d.truncated) patch.append(this.el("span", { class: "meta", text: "… (patch cut: too long to show)\n" }));
    this.pane.hidden = false;
    this.pane.replaceChildren(head, files, patch, this.mergeForm(c, d, result));
  }

  mergeForm(c, d, result) {
    const strategy = this.el(
      "select",
      { "data-testid": "board-strategy" },
      this.el("option", { value: "squash", text: "squash" }),
      this.el("option", { value: "merge", text: "merge" }),
      this.el("option", { value: "rebase", text: "rebase" }),
    );
    const message = this.el("input", { "data-testid": "board-message", placeholder: `harness: ${c.summary.title || d.branch}`, autocomplete: "off", spellcheck: "false" });
    const btn = this.el("button", { type: "submit", class: "btn primary", "data-testid": "board-merge", text: "Merge" });
    const out = result || this.el("div", { class: "board-merge-result", "data-testid": "board-merge-result", role: "status" });
    const form = this.el(
      "form",
      { class: "board-merge-form", "data-testid": "board-merge-form" },
      this.el("label", {}, "Strategy ", strategy),
      this.el("label", { class: "grow" }, "Message ", message),
      btn,
      out,
    );
    if (d.files.length === 0) btn.disabled = true;
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      btn.disabled = true;
      out.className = "board-merge-result";
      out.replaceChildren(this.el("span", { text: "Merging…" }));
      const body = { strategy: strategy.value };
      if (message.value.trim()) body.message = message.value.trim();
      try {
        const res = await this.api.request("POST", `session/${encodeURIComponent(c.id)}/merge`, { body, ok: [409] });
        const j = await res.json();
        if (res.status === 409) {
          out.className = "board-merge-result conflict";
          if (Array.isArray(j.conflicts) && j.conflicts.length > 0) {
            out.replaceChildren(
              this.el("p", { text: "Not merged: these files conflict (the target branch and the project's tree are untouched)." }),
              this.el("ul", { "data-testid": "board-conflicts" }, ...j.conflicts.map((p) => this.el("li", { "data-testid": "board-conflict", text: p }))),
            );
          } else {
            out.replaceChildren(this.el("p", { text: `Not merged: ${j.error || "conflict"}` }));
          }
          btn.disabled = false;
          return;
        }
        out.className = "board-merge-result ok";
        out.replaceChildren(this.el("p", { text: `Merged into ${j.into} as ${String(j.commit).slice(0, 12)}.` }));
        this.loadSize(c);
      } catch (err) {
        out.className = "board-merge-result conflict";
        out.replaceChildren(this.el("p", { text: `Not merged: ${err.message || err}` }));
        btn.disabled = false;
      }
    });
    return form;
  }
}
